"""The OpenAI-compatible chat client used by the judge metrics (OpenAI, vLLM, Ollama, ...).

Requests are JSON POSTs to ``{base_url}/chat/completions`` through the endpoint's
:class:`~assay.providers.endpoint.JSONClient` and its limiter, so
:mod:`assay.providers.transport` counts retries and honours Retry-After. Replies are parsed
here, strictly, from the raw HTTP body: a reply with no text is a provider failure, never an
empty answer. A caller-supplied ``accept`` function validates the text;
only accepted replies are cached, so a malformed judge answer is never replayed from cache.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict, TypeVar

from assay.data.bounded import loads_json
from assay.errors import NotSent, ProviderError, ReplyRejected
from assay.providers import estimate
from assay.providers.cache import ProviderCache, cache_key
from assay.providers.endpoint import JSONClient
from assay.providers.limiter import Limiter
from assay.providers.pool import Reply
from assay.providers.pricing import charge, price_for, reported_cost
from assay.providers.settings import ProviderSettings
from assay.providers.transport import call_provider, endpoint_host
from assay.providers.usage import UsageRecord, cached_record, record

T = TypeVar("T")
PROVIDER_KIND = "openai-compatible"


class RejectedReply(ProviderError):
    """A reply that ``accept`` rejected, with the usage it cost and its text for a re-ask."""

    def __init__(
        self, reason: str, *, content: str, usage: tuple[UsageRecord, ...], reaskable: bool = True
    ) -> None:
        self.reason = reason
        self.content = content
        self.reaskable = reaskable
        self.usage = usage
        super().__init__(reason)


@dataclass(frozen=True)
class ChatReply:
    """An accepted reply: the text, what it cost, and whether it came from the cache."""

    content: str
    usage: tuple[UsageRecord, ...]
    cached: bool
    retries: int


def _int_field(usage: Mapping[str, Any], name: str) -> int | None:
    value = usage.get(name)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


class Tokens(TypedDict):
    """The token counts of one reply, as ``usage.record`` takes them."""

    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


def parse_completion(
    body: bytes, *, what: str, host: str
) -> tuple[str | None, Tokens | None, float | None]:
    """``(content, tokens, reported cost)`` from a chat-completions body; never echoes the body
    in errors.

    ``content`` is ``None`` when the body has no non-empty ``choices[0].message.content``;
    the caller raises after recording the tokens the reply cost. The cost is the one the
    provider states in ``usage.cost`` (None when it states none).
    """
    data = loads_json(
        body,
        lambda _: ProviderError(f"{what} to {host} returned a malformed response (not valid JSON)"),
    )
    if not isinstance(data, dict):
        raise ProviderError(f"{what} to {host} returned a malformed response (not a JSON object)")
    choices = data.get("choices")
    first = choices[0] if isinstance(choices, list) and choices else None
    message = first.get("message") if isinstance(first, dict) else None
    content = message.get("content") if isinstance(message, dict) else None
    usage = data.get("usage")
    tokens: Tokens | None = None
    reported = reported_cost(usage) if isinstance(usage, dict) else None
    if isinstance(usage, dict):
        prompt = _int_field(usage, "prompt_tokens")
        completion = _int_field(usage, "completion_tokens")
        total = _int_field(usage, "total_tokens")
        if prompt is not None or completion is not None:
            prompt, completion = prompt or 0, completion or 0
            tokens = {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": total if total is not None else prompt + completion,
            }
    text = content if isinstance(content, str) and content.strip() else None
    return text, tokens, reported


class ChatProvider:
    """Chat completions against one model of one OpenAI-compatible endpoint."""

    def __init__(
        self,
        settings: ProviderSettings,
        model: str,
        *,
        client: JSONClient,
        limiter: Limiter,
        cache: ProviderCache,
    ) -> None:
        self.settings = settings
        self.model = model
        self.host = endpoint_host(settings.base_url)
        self._client = client
        self._limiter = limiter
        self._cache = cache
        self._price = price_for(model, settings.prices)  # the table is fixed per settings
        self.calls = 0  # HTTP requests actually sent (attempts, retries included)

    def key(
        self,
        messages: Sequence[Mapping[str, str]],
        params: Mapping[str, Any],
        template_version: str,
    ) -> str:
        return cache_key(
            {
                "kind": "chat",
                "provider": PROVIDER_KIND,
                "base_url": self.settings.base_url or "",
                "model": self.model,
                "messages": [dict(m) for m in messages],
                "params": dict(params),
                "template_version": template_version,
            }
        )

    async def complete(
        self,
        messages: Sequence[Mapping[str, str]],
        *,
        params: Mapping[str, Any],
        template_version: str,
        accept: Callable[[str], T],
        what: str = "chat request",
    ) -> tuple[T, ChatReply]:
        """Send (or replay from cache) one chat request; ``accept`` parses the reply text.

        Raises :class:`ProviderError` for transport/HTTP/format failures (no usage spent
        is lost: the caller gets ``RejectedReply.usage`` for a reply that arrived but was
        rejected) and never caches a failure.
        """
        cache = self._cache
        key = self.key(messages, params, template_version) if cache.reads or cache.writes else ""
        if cache.reads:
            replayed = self._replay(key, accept)
            if replayed is not None:
                return replayed
        if self.settings.dry_run:
            raise NotSent(f"dry run: {what} not sent", usage=(self.planned(messages, params),))
        content, usage, retries = await self._ask(messages, params, what)
        try:
            value = accept(content)
        except ReplyRejected as exc:
            raise RejectedReply(exc.reason, content=content, usage=(usage,)) from None
        if cache.writes:
            value_json = json.dumps({"content": content}).encode("utf-8")
            cache.put(key, "chat", self.model, value_json, defer=True)
        return value, ChatReply(content, (usage,), False, retries)

    def planned(
        self, messages: Sequence[Mapping[str, str]], params: Mapping[str, Any]
    ) -> UsageRecord:
        """The estimated usage of a request a dry run does not send (marked ``planned``)."""
        prompt, completion = estimate.prompt_tokens(messages), estimate.reply_tokens(params)
        cost = charge(self._price, prompt, completion)
        planned = record(
            model=self.model,
            prompt_tokens=prompt,
            completion_tokens=completion,
            latency_ms=0.0,
            cost_usd=cost,
            cost_source="estimated" if cost is not None else None,
        )
        return {**planned, "planned": True}

    def _replay(self, key: str, accept: Callable[[str], T]) -> tuple[T, ChatReply] | None:
        """The cached, still-accepted reply for ``key``, or None (an unreadable entry is
        ignored and overwritten by the fresh answer)."""
        started = time.perf_counter()
        hit = self._cache.get(key)
        if hit is None:
            return None
        try:
            content = json.loads(hit)["content"]
            value = accept(content)
        except (ValueError, KeyError, TypeError, ReplyRejected):
            return None
        latency = (time.perf_counter() - started) * 1000
        return value, ChatReply(content, (cached_record(self.model, latency),), True, 0)

    async def _ask(
        self, messages: Sequence[Mapping[str, str]], params: Mapping[str, Any], what: str
    ) -> tuple[str, UsageRecord, int]:
        """(reply text, usage, retries) of one request through the endpoint's limiter.

        A reply without text raises :class:`RejectedReply` with the usage it cost.
        """
        payload = json.dumps(
            {"model": self.model, "messages": [dict(m) for m in messages], **params}
        ).encode("utf-8")
        sent_at = 0.0

        async def send() -> Reply:
            nonlocal sent_at
            self.calls += 1
            sent_at = time.perf_counter()  # latency: the answered attempt, not queueing/backoff
            return await self._client.post("chat/completions", payload)

        reply, retries = await call_provider(
            send, what=what, host=self.host, settings=self.settings, limiter=self._limiter
        )
        latency = (time.perf_counter() - sent_at) * 1000
        content, tokens, reported = parse_completion(reply.body, what=what, host=self.host)
        usage = self._usage(tokens, latency, reported)
        if content is None:
            raise RejectedReply(
                f"{what} to {self.host}: response is missing choices[0].message.content (or it is "
                "empty)",
                content="",
                usage=(usage,),
                reaskable=False,
            )
        return content, usage, retries

    def _usage(
        self, tokens: Tokens | None, latency_ms: float, reported: float | None
    ) -> UsageRecord:
        """The usage record of one answered request: the provider's own cost when it stated
        one (*reported*), else the price table's (*estimated*), else unpriced."""
        counts = tokens or Tokens(prompt_tokens=0, completion_tokens=0, total_tokens=0)
        if reported is not None:
            cost, source = reported, "reported"
        elif tokens is None:
            cost, source = None, None
        else:
            cost = charge(self._price, tokens["prompt_tokens"], tokens["completion_tokens"])
            source = "estimated" if cost is not None else None
        return record(
            model=self.model, **counts, latency_ms=latency_ms, cost_usd=cost, cost_source=source
        )
