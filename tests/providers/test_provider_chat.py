"""The chat client against the loopback OpenAI server: answers, usage, cache, every error path."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path

import pytest

from assay.errors import ProviderError, ReplyRejected
from assay.providers import limiter, registry, settings
from assay.providers.chat import RejectedReply
from assay.providers.settings import ProviderSettings
from openai_server import CHAT, OpenAIServer, Step

MESSAGES = [{"role": "user", "content": "grade this"}]
PARAMS = {"temperature": 0, "seed": 42}


def accept_json(text: str) -> dict:
    try:
        return json.loads(text)
    except ValueError:
        raise ReplyRejected("not JSON") from None


async def ask(content: str = "grade this", version: str = "v1") -> tuple[dict, object]:
    provider = registry.chat_provider(settings.from_environment())
    return await provider.complete(
        [{"role": "user", "content": content}],
        params=PARAMS,
        template_version=version,
        accept=accept_json,
    )


def change(base: ProviderSettings, update: dict) -> ProviderSettings:
    """Validated copy of the settings with some fields changed: the test's settings from now
    on (what ``from_environment`` gives; the fixture's monkeypatch restores it)."""
    changed = ProviderSettings.model_validate({**base.model_dump(), **update})
    settings.from_environment = lambda: changed
    return changed


@pytest.fixture
def delays(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Record every backoff delay instead of sleeping it."""
    recorded: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        recorded.append(seconds)

    monkeypatch.setattr(limiter, "backoff_sleep", fake_sleep)
    return recorded


async def test_answer_usage_and_request_body(
    openai_server: OpenAIServer, provider_settings: ProviderSettings
) -> None:
    value, reply = await ask()
    assert value == {"score": 1.0, "reason": "default verdict"}
    assert reply.cached is False and reply.retries == 0
    (usage,) = reply.usage
    assert usage["model"] == "judge-test"
    assert usage["prompt_tokens"] >= 1 and usage["completion_tokens"] >= 1
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    assert usage["cost_usd"] is None  # judge-test has no price: unpriced, never 0
    assert usage["latency_ms"] > 0
    path, body, headers = openai_server.requests[0]
    assert path == CHAT
    assert body["model"] == "judge-test" and body["messages"] == MESSAGES
    assert body["temperature"] == 0 and body["seed"] == 42
    assert headers.get("authorization") == "Bearer sk-test-not-a-real-key"


async def test_priced_model_has_a_cost(
    openai_server: OpenAIServer, provider_settings: ProviderSettings
) -> None:
    provider = registry.chat_provider(settings.from_environment(), "gpt-4o-mini")
    _, reply = await provider.complete(
        MESSAGES, params=PARAMS, template_version="v1", accept=accept_json
    )
    usage = reply.usage[0]
    expected = (usage["prompt_tokens"] * 0.15 + usage["completion_tokens"] * 0.6) / 1e6
    assert usage["cost_usd"] == pytest.approx(expected)


async def test_rerun_is_served_from_the_cache(
    openai_server: OpenAIServer, provider_settings: ProviderSettings
) -> None:
    await ask()
    _value, reply = await ask()
    assert openai_server.calls[CHAT] == 1
    assert reply.cached is True
    assert reply.usage[0]["cached"] is True and reply.usage[0]["total_tokens"] == 0
    assert reply.usage[0]["cost_usd"] == 0.0
    # A different template version or message is a different key.
    await ask(version="v2")
    await ask(content="other")
    assert openai_server.calls[CHAT] == 3


async def test_the_cache_survives_a_new_event_loop_and_process_state(
    openai_server: OpenAIServer, provider_settings: ProviderSettings
) -> None:
    await ask()
    registry.reset()  # drop clients and connections, as a new process would
    await ask()
    assert openai_server.calls[CHAT] == 1


async def test_refresh_mode_calls_again_and_off_mode_keeps_nothing(
    openai_server: OpenAIServer, provider_settings: ProviderSettings, tmp_path: Path
) -> None:
    await ask()
    change(provider_settings, {"cache_mode": "refresh"})
    await ask()
    assert openai_server.calls[CHAT] == 2
    change(provider_settings, {"cache_mode": "off", "cache_dir": tmp_path / "off"})
    await ask()
    await ask()
    assert openai_server.calls[CHAT] == 4
    assert not (tmp_path / "off").exists()


async def test_rejected_replies_are_not_cached(
    openai_server: OpenAIServer, provider_settings: ProviderSettings
) -> None:
    openai_server.chat_reply = lambda request: "this is not json"
    with pytest.raises(RejectedReply) as info:
        await ask()
    assert info.value.reason == "not JSON"
    assert info.value.content == "this is not json"
    assert info.value.usage[0]["total_tokens"] > 0  # the spend is kept
    openai_server.chat_reply = lambda request: '{"score": 0.5}'
    value, reply = await ask()
    assert value == {"score": 0.5} and reply.cached is False
    assert openai_server.calls[CHAT] == 2


async def test_429_honours_retry_after(
    openai_server: OpenAIServer, provider_settings: ProviderSettings, delays: list[float]
) -> None:
    openai_server.script(CHAT, Step.error(429, "rate limited", retry_after="0.75"))
    value, reply = await ask()
    assert value["score"] == 1.0
    assert reply.retries == 1
    assert delays == [0.75]
    assert openai_server.calls[CHAT] == 2


async def test_retry_after_ms_is_preferred(
    openai_server: OpenAIServer, provider_settings: ProviderSettings, delays: list[float]
) -> None:
    openai_server.script(CHAT, Step.error(429, retry_after_ms="120", retry_after="7"))
    await ask()
    assert delays == [0.12]


async def test_retry_after_beyond_the_limit_fails_at_once(
    openai_server: OpenAIServer, provider_settings: ProviderSettings, delays: list[float]
) -> None:
    change(provider_settings, {"retry_max_wait_s": 5.0})
    openai_server.script(CHAT, Step.error(429, retry_after="3600"))
    with pytest.raises(
        ProviderError,
        match=r"HTTP 429; the server asked to retry after 3600s, more than the 5s limit",
    ):
        await ask()
    assert delays == [] and openai_server.calls[CHAT] == 1


async def test_5xx_is_retried_with_backoff_then_gives_up(
    openai_server: OpenAIServer, provider_settings: ProviderSettings, delays: list[float]
) -> None:
    openai_server.script(CHAT, Step.error(500), Step.error(502), Step.error(503))
    with pytest.raises(ProviderError) as info:
        await ask()
    host = provider_settings.base_url.split("//")[1].split("/")[0]
    assert str(info.value) == f"chat request to {host} failed: HTTP 503 (gave up after 2 retries)"
    assert info.value.status == 503 and info.value.retryable is True
    assert openai_server.calls[CHAT] == 3
    assert len(delays) == 2 and delays[0] < delays[1]


async def test_5xx_then_success(
    openai_server: OpenAIServer, provider_settings: ProviderSettings, delays: list[float]
) -> None:
    openai_server.script(CHAT, Step.error(500))
    _, reply = await ask()
    assert reply.retries == 1 and openai_server.calls[CHAT] == 2


@pytest.mark.parametrize("status", [400, 401, 404, 422])
async def test_client_errors_are_not_retried(
    openai_server: OpenAIServer,
    provider_settings: ProviderSettings,
    delays: list[float],
    status: int,
) -> None:
    openai_server.script(CHAT, Step.error(status))
    with pytest.raises(ProviderError, match=f"HTTP {status}$") as info:
        await ask()
    assert info.value.status == status and not info.value.retryable
    assert openai_server.calls[CHAT] == 1 and delays == []


async def test_dropped_connections_are_retried(
    openai_server: OpenAIServer, provider_settings: ProviderSettings, delays: list[float]
) -> None:
    openai_server.script(CHAT, Step.dropped())
    value, reply = await ask()
    assert value["score"] == 1.0 and reply.retries == 1
    openai_server.script(CHAT, Step.dropped(), Step.dropped(), Step.dropped())
    with pytest.raises(
        ProviderError, match=r"failed: connection error \(gave up after 2 retries\)"
    ):
        await ask("again")


async def test_timeouts(
    openai_server: OpenAIServer, provider_settings: ProviderSettings, delays: list[float]
) -> None:
    change(provider_settings, {"timeout_s": 0.2, "max_retries": 1})
    openai_server.script(CHAT, Step.slow(1.0), Step.slow(1.0))
    with pytest.raises(ProviderError, match=r"timed out after 0.2s \(gave up after 1 retry\)"):
        await ask()


@pytest.mark.parametrize(
    ("step", "message"),
    [
        (Step.raw(b"{not json"), "malformed response (not valid JSON)"),
        (Step.raw(b"[1, 2]"), "malformed response (not a JSON object)"),
        (Step.json({"choices": []}), "missing choices[0].message.content"),
        (
            Step.json({"choices": [{"message": {"content": "   "}}]}),
            "missing choices[0].message.content",
        ),
        (
            Step.json({"choices": [{"message": {"content": None}}]}),
            "missing choices[0].message.content",
        ),
    ],
)
async def test_malformed_bodies(
    openai_server: OpenAIServer, provider_settings: ProviderSettings, step: Step, message: str
) -> None:
    openai_server.script(CHAT, step)
    with pytest.raises(
        ProviderError, match=message.replace("[", r"\[").replace("(", r"\(").replace(")", r"\)")
    ):
        await ask()
    assert openai_server.calls[CHAT] == 1  # malformed answers are not retried


async def test_missing_usage_is_unpriced_not_free(
    openai_server: OpenAIServer, provider_settings: ProviderSettings
) -> None:
    change(provider_settings, {"judge_model": "gpt-4o-mini"})
    openai_server.report_usage = False
    _, reply = await ask()
    assert reply.usage[0]["cost_usd"] is None


async def test_a_key_in_an_error_body_never_reaches_messages_or_logs(
    openai_server: OpenAIServer,
    provider_settings: ProviderSettings,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
    delays: list[float],
) -> None:
    planted = "sk-PLANTED-0123456789abcdef"
    change(provider_settings, {"api_key": planted})
    caplog.set_level(logging.DEBUG)
    body = json.dumps({"error": {"message": f"Incorrect API key provided: {planted}"}}).encode()
    openai_server.script(
        CHAT,
        Step(status=401, body=body),
        Step(status=500, body=body),
        Step(status=500, body=body),
        Step(status=500, body=body),
    )
    for _ in range(2):
        with pytest.raises(ProviderError) as info:
            await ask()
        error = info.value
        chain = [error, error.__cause__, error.__context__]
        assert all(planted not in repr(e) and planted not in str(e) for e in chain if e is not None)
        assert "Incorrect API key" not in str(error)
    captured = capsys.readouterr()
    assert planted not in caplog.text and planted not in captured.out + captured.err


async def test_keyless_endpoints_get_a_placeholder(
    openai_server: OpenAIServer, provider_settings: ProviderSettings
) -> None:
    change(provider_settings, {"api_key": None})
    await ask()
    assert openai_server.requests[0][2]["authorization"] == f"Bearer {registry.NO_KEY_PLACEHOLDER}"


async def test_concurrency_is_bounded(
    openai_server: OpenAIServer, provider_settings: ProviderSettings
) -> None:
    change(provider_settings, {"max_concurrency": 3})
    openai_server.latency_s = 0.05
    results = await asyncio.gather(*(ask(f"q{i}") for i in range(12)))
    assert len(results) == 12
    assert openai_server.calls[CHAT] == 12
    assert 1 <= openai_server.max_inflight <= 3


async def test_a_429_pauses_every_waiting_request(
    openai_server: OpenAIServer, provider_settings: ProviderSettings, delays: list[float]
) -> None:
    change(provider_settings, {"max_concurrency": 1})
    openai_server.script(CHAT, Step.error(429, retry_after="0.3"))
    loop = asyncio.get_running_loop()
    started = loop.time()
    await asyncio.gather(ask("a"), ask("b"))
    endpoint = registry._endpoint(settings.from_environment())[1]
    assert endpoint.paused_until >= started + 0.3  # the pause was shared through the limiter
    assert openai_server.calls[CHAT] == 3


def test_clients_are_per_event_loop(
    openai_server: OpenAIServer, provider_settings: ProviderSettings
) -> None:
    async def grab() -> object:
        return registry.chat_provider(settings.from_environment())

    first = asyncio.run(grab())
    second = asyncio.run(grab())
    assert first is not second


async def test_a_429_narrows_the_window_and_successes_widen_it_again(
    openai_server: OpenAIServer, provider_settings: ProviderSettings, delays: list[float]
) -> None:
    change(provider_settings, {"max_concurrency": 5})
    openai_server.script(CHAT, Step.error(429, retry_after="0"))
    await ask("first")
    endpoint = registry._endpoint(settings.from_environment())[1]
    # Cut to floor(5 x 0.5) = 2; the retry's success adds 1/2: window 2.5, two slots.
    assert endpoint.max_concurrency == 5 and endpoint.limit == 2
    await ask("after 0")  # 2.5 + 1/2 = 3.0
    assert endpoint.limit == 3
    for i in range(1, 4):  # three successes at width 3 widen it by one
        await ask(f"after {i}")
    assert endpoint.limit == 4
    openai_server.latency_s = 0.02
    openai_server.script(CHAT, *[Step.error(429, retry_after="0")] * 3)
    await asyncio.gather(*(ask(f"burst {i}") for i in range(10)))
    assert endpoint.limit >= 1 and openai_server.max_inflight <= 5


def test_clients_close_when_their_loop_ends(
    openai_server: OpenAIServer, provider_settings: ProviderSettings
) -> None:
    import gc
    import weakref

    seen: list = []

    async def use() -> None:
        await ask("closing")
        seen.append(
            (
                registry.chat_provider(settings.from_environment())._client,
                weakref.ref(asyncio.get_running_loop()),
            )
        )

    asyncio.run(use())
    client, loop = seen[0]
    assert client.is_closed()  # closed by the loop's shutdown, with no explicit aclose()
    gc.collect()
    assert loop() is None  # and nothing keeps the finished loop alive


async def test_reset_keeps_old_clients_until_the_loop_ends(
    openai_server: OpenAIServer, provider_settings: ProviderSettings
) -> None:
    await ask("one")
    old = registry.chat_provider(settings.from_environment())._client
    registry.reset()
    assert registry.chat_provider(settings.from_environment())._client is not old
    await registry.aclose()
    assert old.is_closed()
