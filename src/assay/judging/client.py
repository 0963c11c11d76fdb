"""Asking a judge: fill the prompt, send it, parse the reply strictly, re-ask once if needed.

A :class:`Judge` is either the OpenAI-compatible provider of its ``settings`` (``model``;
cached, retried, rate-limited and usage-accounted by :mod:`assay.providers`) or ``call``, any
async function of the chat messages (a scripted judge in tests, a custom client). The request is
deterministic (temperature 0, seed 42, JSON response format). The provider caches only replies
the parser accepted, so a malformed verdict is never replayed. A malformed reply gets one
re-ask naming the problem; a second one fails the sample with a
:class:`~assay.errors.MetricError` that carries the usage spent so far. Raw replies never reach
a report.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from assay.errors import AssayError, JudgeParseError, MetricError, ProviderError, ReplyRejected
from assay.judging.prompts import REASK
from assay.providers.chat import RejectedReply
from assay.providers.registry import chat_provider
from assay.providers.settings import ProviderSettings

T = TypeVar("T")
Message = Mapping[str, str]
Usage = tuple[dict[str, Any], ...]

JUDGE_PARAMS: dict[str, Any] = {
    "temperature": 0,
    "seed": 42,
    "response_format": {"type": "json_object"},
}
_PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")


@dataclass(frozen=True, slots=True)
class JudgeReply:
    """What a judge function returns: the reply text and one usage record per provider call."""

    text: str
    usage: Usage = field(default=())


JudgeFn = Callable[[Sequence[Message]], Awaitable[JudgeReply]]


@dataclass(frozen=True, slots=True)
class Judge:
    """Who answers judge prompts: ``call`` when given, else ``model`` (None: the settings'
    judge model) at the provider of ``settings``. ``reask``: one re-ask after a malformed
    reply."""

    model: str | None = None
    call: JudgeFn | None = None
    reask: bool = True
    settings: ProviderSettings | None = None


@dataclass(frozen=True, slots=True)
class Verdict(Generic[T]):
    """A parsed verdict: the value, the reply text (for sizes only), re-asked, usage."""

    value: T
    text: str
    reasked: bool
    usage: Usage


class _Rejected(AssayError):
    """A reply arrived but did not parse (internal: decides the re-ask)."""

    def __init__(self, reason: str, content: str, usage: Usage, reaskable: bool) -> None:
        self.reason, self.content, self.usage, self.reaskable = reason, content, usage, reaskable
        super().__init__(reason)


@functools.lru_cache(maxsize=256)
def template_version(name: str, template: str) -> str:
    """A version tag for the cache key: the prompt's name, parser revision and hash (a
    judge metric asks for its template's on every sample: hashed once)."""
    digest = hashlib.sha256(template.encode("utf-8")).hexdigest()[:16]
    return f"{name}.v1:{digest}"


def fill(template: str, values: Mapping[str, str]) -> str:
    """Replace every ``{name}`` found in ``values`` in one pass (inserted text is never
    re-expanded; other braces stay). The prompt must be valid UTF-8 for any provider."""
    prompt = _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), template)
    try:
        prompt.encode("utf-8")
    except UnicodeEncodeError:
        raise MetricError(
            "the judge prompt is not valid UTF-8 text (the output or the sample contains a "
            "lone surrogate)"
        ) from None
    return prompt


def compact_json(value: object, what: str) -> str:
    """``value`` as compact JSON for a prompt, or a MetricError naming ``what``."""
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise MetricError(f"{what} must be JSON-encodable for the judge prompt: {exc}") from None


async def _from_provider(
    judge: Judge, messages: list[Message], parse: Callable[[str], T], version: str
) -> tuple[T, str, Usage]:
    def accept(text: str) -> T:
        try:
            return parse(text)
        except JudgeParseError as exc:
            raise ReplyRejected(str(exc)) from None

    if judge.settings is None:
        raise MetricError("the judge has neither provider settings nor a judge function")
    provider = chat_provider(judge.settings, judge.model)
    try:
        value, reply = await provider.complete(
            messages,
            params=JUDGE_PARAMS,
            template_version=version,
            accept=accept,
            what="LLM judge request",
        )
    except RejectedReply as exc:
        raise _Rejected(exc.reason, exc.content, tuple(exc.usage), exc.reaskable) from None
    return value, reply.content, tuple(reply.usage)


async def _from_function(
    call: JudgeFn, messages: list[Message], parse: Callable[[str], T]
) -> tuple[T, str, Usage]:
    reply = await call(messages)
    usage = tuple(dict(u) for u in reply.usage)
    try:
        return parse(reply.text), reply.text, usage
    except JudgeParseError as exc:
        raise _Rejected(str(exc), reply.text, usage, True) from None


async def _once(
    judge: Judge, messages: list[Message], parse: Callable[[str], T], version: str
) -> tuple[T, str, Usage]:
    if judge.call is not None:
        return await _from_function(judge.call, messages, parse)
    return await _from_provider(judge, messages, parse, version)


async def ask(judge: Judge, prompt: str, parse: Callable[[str], T], *, version: str) -> Verdict[T]:
    """The parsed verdict for ``prompt``, re-asking once on a malformed reply.

    Raises :class:`MetricError` (with the usage spent) when the judge cannot be reached or its
    reply stays malformed.
    """
    messages: list[Message] = [{"role": "user", "content": prompt}]
    try:
        value, text, usage = await _once(judge, messages, parse, version)
        return Verdict(value, text, False, usage)
    except _Rejected as exc:
        if not (judge.reask and exc.reaskable):
            raise MetricError(exc.reason, usage=exc.usage) from None
        first = exc
    except ProviderError as exc:
        raise MetricError(str(exc), usage=tuple(getattr(exc, "usage", ()) or ())) from None
    retry = [
        *messages,
        {"role": "assistant", "content": first.content},
        {"role": "user", "content": REASK.format(problem=first.reason)},
    ]
    try:
        value, text, usage = await _once(judge, retry, parse, version)
    except _Rejected as exc:
        raise MetricError(
            f"{first.reason}; after one re-ask: {exc.reason}", usage=first.usage + exc.usage
        ) from None
    except ProviderError as exc:
        spent = first.usage + tuple(getattr(exc, "usage", ()) or ())
        raise MetricError(f"{first.reason}; the re-ask failed: {exc}", usage=spent) from None
    return Verdict(value, text, True, first.usage + usage)


def judge_model(judge: Judge) -> str:
    """The model name a judge answers as (its settings' judge model by default)."""
    if judge.model:
        return judge.model
    if judge.call is not None or judge.settings is None:
        return "custom-judge"
    return judge.settings.judge_model


def verdict_details(
    verdict: Verdict[Any], *, model: str | None, version: str, prompt: str
) -> dict[str, Any]:
    """What every judged row reports about the call: model, template version, sizes, re-ask;
    never the prompt or reply text."""
    return {
        "judge_model": verdict.usage[-1]["model"] if verdict.usage else model,
        "template_version": version,
        "prompt_chars": len(prompt.encode("utf-8")),
        "response_chars": len(verdict.text.encode("utf-8")),
        "reasked": verdict.reasked,
    }
