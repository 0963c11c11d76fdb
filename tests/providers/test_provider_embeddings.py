"""The embeddings client: batching, dedupe, memo, cache, prefetch accounting, error paths."""

from __future__ import annotations

import asyncio
import math

import numpy as np
import pytest

from assay.errors import ProviderError
from assay.providers import registry, settings
from assay.providers.embeddings import OpenAIEmbedder
from assay.providers.hashing import HashingEmbedder, dimensions_from_name
from assay.providers.settings import ProviderSettings
from openai_server import EMBEDDINGS, OpenAIServer, Step, hash_vector


def change(base: ProviderSettings, update: dict) -> ProviderSettings:
    """Validated copy of the settings with some fields changed: the test's settings from now
    on (what ``from_environment`` gives; the fixture's monkeypatch restores it)."""
    changed = ProviderSettings.model_validate({**base.model_dump(), **update})
    settings.from_environment = lambda: changed
    return changed


def inputs_sent(server: OpenAIServer) -> list[list[str]]:
    return [body["input"] for path, body, _ in server.requests if path == EMBEDDINGS]


async def test_vectors_follow_the_request_order_and_are_deduplicated(
    openai_server: OpenAIServer, provider_settings: ProviderSettings
) -> None:
    embedder = registry.embedder(settings.from_environment())
    result = await embedder.embed(["b", "a", "b", "c"])
    assert inputs_sent(openai_server) == [["b", "a", "c"]]
    for text, vector in zip(["b", "a", "b", "c"], result.vectors):
        np.testing.assert_allclose(vector, np.asarray(hash_vector(text), dtype=np.float32))
    (usage,) = result.usage
    assert (
        usage["model"] == "embed-test"
        and usage["prompt_tokens"] == 3
        and usage["completion_tokens"] == 0
    )
    assert usage["cached"] is False and usage["cost_usd"] is None
    body = openai_server.requests[0][1]
    assert body["encoding_format"] == "float" and body["model"] == "embed-test"


async def test_batches_go_out_concurrently_in_batch_size_chunks(
    openai_server: OpenAIServer, provider_settings: ProviderSettings
) -> None:
    change(provider_settings, {"embedding_batch_size": 3})
    texts = [f"t{i}" for i in range(7)]
    result = await registry.embedder(settings.from_environment()).embed(texts)
    assert sorted(map(len, inputs_sent(openai_server))) == [1, 3, 3]
    assert len(result.usage) == 3 and sum(u["prompt_tokens"] for u in result.usage) == 7


async def test_memo_and_cache_make_reruns_free(
    openai_server: OpenAIServer, provider_settings: ProviderSettings
) -> None:
    first = await registry.embedder(settings.from_environment()).embed(["x", "y"])
    again = await registry.embedder(settings.from_environment()).embed(["y", "x"])
    assert openai_server.calls[EMBEDDINGS] == 1
    assert again.usage == ({**again.usage[0], "cached": True, "total_tokens": 0, "cost_usd": 0.0},)
    registry.reset()  # a new process: only the SQLite cache remains
    third = await registry.embedder(settings.from_environment()).embed(["x", "y"])
    assert openai_server.calls[EMBEDDINGS] == 1
    assert third.usage[0]["cached"] is True
    for a, b in zip(first.vectors, third.vectors):
        assert a.dtype == np.float32 and np.array_equal(a, b)  # bit-for-bit equal from cache


async def test_the_key_includes_model_endpoint_and_parameters(
    openai_server: OpenAIServer, provider_settings: ProviderSettings
) -> None:
    await registry.embedder(settings.from_environment()).embed(["x"])
    await registry.embedder(settings.from_environment(), "other-model").embed(["x"])
    openai_server.embed = lambda texts: [hash_vector(t, 8) for t in texts]
    await registry.embedder(settings.from_environment(), dimensions=8).embed(["x"])
    assert openai_server.calls[EMBEDDINGS] == 3
    assert openai_server.requests[-1][1]["dimensions"] == 8


async def test_concurrent_requests_for_the_same_text_share_one_call(
    openai_server: OpenAIServer, provider_settings: ProviderSettings
) -> None:
    openai_server.latency_s = 0.05
    embedder = registry.embedder(settings.from_environment())
    results = await asyncio.gather(*(embedder.embed(["same", f"own{i}"]) for i in range(5)))
    sent = [text for batch in inputs_sent(openai_server) for text in batch]
    assert sent.count("same") == 1
    assert all(np.array_equal(r.vectors[0], results[0].vectors[0]) for r in results)


async def test_prefetch_usage_is_claimed_once(
    openai_server: OpenAIServer, provider_settings: ProviderSettings
) -> None:
    embedder = registry.embedder(settings.from_environment())
    await embedder.prefetch(["a", "b", "c", "a"])
    assert inputs_sent(openai_server) == [["a", "b", "c"]]
    first = await embedder.embed(["a", "b"])
    second = await embedder.embed(["c"])
    assert openai_server.calls[EMBEDDINGS] == 1
    assert [u["cached"] for u in first.usage] == [False]
    assert first.usage[0]["prompt_tokens"] == 3  # the whole prefetch request
    assert [u["cached"] for u in second.usage] == [True]


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (
            lambda texts: [hash_vector(t) for t in texts][:-1],
            r"response returned 1 vector\(s\); expected 2",
        ),
        (
            lambda texts: [hash_vector(t) for t in texts] * 2,
            r"response returned 4 vector\(s\); expected 2",
        ),
        (
            lambda texts: [hash_vector("a", 8), hash_vector("b", 16)],
            r"different dimensionality \(8 vs 16\)",
        ),
        (lambda texts: [[], []], "is not a non-empty list of finite numbers"),
        (lambda texts: [[1.0, "x"], [1.0, 2.0]], "is not a non-empty list of finite numbers"),
        (lambda texts: [[1.0, 2.0], [1e308, 1.0]], "embedding 1 .* within float32's range"),
        (lambda texts: [[-3.5e38, 1.0], [1.0, 2.0]], "embedding 0 .* within float32's range"),
    ],
)
async def test_bad_vectors_are_provider_errors(
    openai_server: OpenAIServer, provider_settings: ProviderSettings, reply, message: str
) -> None:
    openai_server.embed = reply
    with pytest.raises(ProviderError, match=message):
        await registry.embedder(settings.from_environment()).embed(["a", "b"])
    openai_server.embed = lambda texts: [hash_vector(t) for t in texts]
    await registry.embedder(settings.from_environment()).embed(
        ["a", "b"]
    )  # failures were not cached or memoised
    assert openai_server.calls[EMBEDDINGS] == 2


@pytest.mark.parametrize(
    ("step", "message"),
    [
        (Step.raw(b"<html>oops</html>"), r"not valid JSON"),
        (Step.json({"object": "list"}), r"no 'data' list"),
        (
            Step.json(
                {"data": [{"index": 0, "embedding": [1.0]}, {"index": 0, "embedding": [1.0]}]}
            ),
            r"bad or repeated 'index'",
        ),
        (
            Step.json(
                {"data": [{"index": 0, "embedding": [math.inf]}, {"index": 1, "embedding": [1.0]}]}
            ),
            r"finite",
        ),
    ],
)
async def test_malformed_embedding_bodies(
    openai_server: OpenAIServer, provider_settings: ProviderSettings, step: Step, message: str
) -> None:
    openai_server.script(EMBEDDINGS, step)
    with pytest.raises(ProviderError, match=message):
        await registry.embedder(settings.from_environment()).embed(["a", "b"])


async def test_out_of_order_indices_are_put_back_in_order(
    openai_server: OpenAIServer, provider_settings: ProviderSettings
) -> None:
    openai_server.script(
        EMBEDDINGS,
        Step.json(
            {"data": [{"index": 1, "embedding": [0.0, 1.0]}, {"index": 0, "embedding": [1.0, 0.0]}]}
        ),
    )
    result = await registry.embedder(settings.from_environment()).embed(["first", "second"])
    assert result.vectors[0].tolist() == [1.0, 0.0] and result.vectors[1].tolist() == [0.0, 1.0]


async def test_requested_dimensions_are_enforced(
    openai_server: OpenAIServer, provider_settings: ProviderSettings
) -> None:
    with pytest.raises(ProviderError, match="returned 16-dimensional vectors; expected 8"):
        await registry.embedder(settings.from_environment(), dimensions=8).embed(["a"])


async def test_http_errors_after_retries(
    openai_server: OpenAIServer, provider_settings: ProviderSettings
) -> None:
    openai_server.script(EMBEDDINGS, Step.error(500), Step.error(500), Step.error(500))
    with pytest.raises(
        ProviderError,
        match=r"embeddings request to .* failed: HTTP 500 \(gave up after 2 retries\)",
    ):
        await registry.embedder(settings.from_environment()).embed(["a"])
    assert openai_server.calls[EMBEDDINGS] == 3


def test_registry_picks_the_configured_provider(provider_settings: ProviderSettings) -> None:
    async def pick() -> object:
        return registry.embedder(settings.from_environment())

    assert isinstance(asyncio.run(pick()), OpenAIEmbedder)
    change(provider_settings, {"embedding_provider": "hashing", "embedding_model": None})
    hashing = asyncio.run(pick())
    assert isinstance(hashing, HashingEmbedder) and hashing.dimensions == 256


async def test_hashing_embedder_is_deterministic_and_offline() -> None:
    first = HashingEmbedder("hashing-64")
    second = HashingEmbedder("hashing-64")
    a = await first.embed(["The cat sat.", "The cat sat.", "dog"])
    b = await second.embed(["The cat sat."])
    assert a.usage == () and a.vectors[0].shape == (64,)
    assert np.array_equal(a.vectors[0], b.vectors[0])
    assert np.isclose(np.linalg.norm(a.vectors[0]), 1.0)
    assert first.requests == 1


@pytest.mark.parametrize(
    ("name", "dims"), [("hashing", 256), ("hashing-32", 32), ("HASHING-1024", 1024)]
)
def test_hashing_model_names(name: str, dims: int) -> None:
    assert dimensions_from_name(name) == dims


@pytest.mark.parametrize("name", ["hash", "hashing-4", "hashing-x", "text-embedding-3-small"])
def test_bad_hashing_model_names(name: str) -> None:
    from assay.errors import UsageError

    with pytest.raises(UsageError):
        dimensions_from_name(name)


def test_a_missing_local_extra_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from assay.errors import UsageError
    from assay.providers import local

    def no_packages(name: str):
        raise ImportError(name)

    monkeypatch.setattr(local, "import_module", no_packages)
    monkeypatch.setattr(local, "_models", {})
    with pytest.raises(
        UsageError, match=r'install torch\'s CPU build first, then pip install "assay\[local\]"'
    ):
        local.LocalEmbedder()


def test_the_memo_is_bounded_by_entries_and_bytes() -> None:
    from assay.providers.embeddings import _Memo

    memo = _Memo(size=3, max_bytes=10_000)
    for i in range(5):
        memo.put(str(i), np.zeros(16, dtype=np.float32))
    assert len(memo) == 3 and memo.get("0") is None and memo.get("4") is not None
    big = _Memo(size=100, max_bytes=3 * (4000 + 64))
    for i in range(5):
        big.put(str(i), np.zeros(1000, dtype=np.float32))  # 4,000 bytes each
    assert len(big) == 3 and big.bytes == 3 * (4000 + 64)
    big.put("4", np.zeros(10, dtype=np.float32))  # replacing an entry releases its bytes
    assert big.bytes == 2 * (4000 + 64) + 40 + 64
