"""Retries with backoff that honours ``Retry-After``, and the concurrency gate around calls.

The SDK's own retries are switched off so that every attempt is counted here and a server's
``Retry-After`` (or ``retry-after-ms``) is obeyed, for this request and, through the gate's
cool-down, for every other request waiting on the same endpoint. Connection errors, timeouts,
HTTP 429 and HTTP 5xx are retried; anything else fails at once. Error messages name the
provider, the endpoint host and the status, never the key or the response body.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any, TypeVar
from urllib.parse import urlsplit

import openai

from assay.errors import ProviderError

T = TypeVar("T")
DEFAULT_HOST = "api.openai.com"


def endpoint_host(base_url: str | None) -> str:
    """``host:port`` of an endpoint, without credentials, path or query (safe to print)."""
    if not base_url:
        return DEFAULT_HOST
    parts = urlsplit(base_url)
    host = parts.hostname or "unknown-host"
    return f"{host}:{parts.port}" if parts.port else host


@dataclass(frozen=True)
class RetryPolicy:
    """How many extra attempts, the first backoff delay, and the longest single wait."""

    max_retries: int = 3
    base_s: float = 0.5
    max_wait_s: float = 60.0
    timeout_s: float = 60.0

    def backoff(self, retry: int) -> float:
        """Exponential backoff with up to 25% jitter, capped at ``max_wait_s``."""
        delay = self.base_s * (2.0**retry)
        return min(self.max_wait_s, delay * (1.0 + 0.25 * random.random()))


class Gate:
    """Adaptive bounded concurrency plus a shared cool-down after a 429 with ``Retry-After``.

    At most ``current`` requests are in flight; ``current`` starts at the configured ``limit``.
    A rate-limit answer (HTTP 429) cuts it to 80% (at least 1), once per episode; every
    ``current`` successes in a row raise it by one again, up to ``limit`` (AIMD, as the
    adaptive schedulers of inspect_ai and Phoenix do).
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.current = limit
        self._inflight = 0
        self._successes = 0
        self._cut_at = -1.0
        self._condition: asyncio.Condition | None = None
        self._resume_at = 0.0

    def pause(self, seconds: float) -> None:
        loop = asyncio.get_running_loop()
        self._resume_at = max(self._resume_at, loop.time() + seconds)

    def rate_limited(self) -> None:
        """A 429 arrived: cut the window (once per episode of overlapping requests)."""
        now = asyncio.get_running_loop().time()
        self._successes = 0
        if now >= self._cut_at:
            self.current = max(1, int(self.current * 0.8))
            self._cut_at = now + 1.0

    def succeeded(self) -> None:
        self._successes += 1
        if self.current < self.limit and self._successes >= self.current:
            self.current += 1
            self._successes = 0

    async def _cool_down(self) -> None:
        loop = asyncio.get_running_loop()
        while (remaining := self._resume_at - loop.time()) > 0:
            await asyncio.sleep(remaining)

    async def run(self, send: Callable[[], Awaitable[T]]) -> T:
        await self._cool_down()
        if self._condition is None:
            self._condition = asyncio.Condition()
        condition = self._condition
        async with condition:
            await condition.wait_for(lambda: self._inflight < self.current)
            self._inflight += 1
        try:
            return await send()
        finally:
            async with condition:
                self._inflight -= 1
                condition.notify_all()


def retry_after_seconds(headers: Any) -> float | None:
    """Seconds from ``retry-after-ms`` or ``Retry-After`` (delta seconds or an HTTP date)."""
    if headers is None:
        return None
    raw_ms = headers.get("retry-after-ms")
    if raw_ms is not None:
        try:
            value = float(raw_ms) / 1000.0
            if value >= 0:
                return value
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if raw is None:
        return None
    try:
        value = float(raw)
        return value if value >= 0 else None
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    from datetime import datetime, timezone

    now = datetime.now(timezone.utc)
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - now).total_seconds())


async def backoff_sleep(seconds: float) -> None:
    """The wait between attempts (a module attribute so tests can record the delays)."""
    await asyncio.sleep(seconds)


@dataclass
class _Attempt:
    message: str
    status: int | None
    retryable: bool
    wait_hint: float | None = None


def _classify(exc: BaseException, what: str, host: str, timeout_s: float) -> _Attempt | None:
    if isinstance(exc, openai.APITimeoutError):
        return _Attempt(f"{what} to {host} timed out after {timeout_s:g}s", None, True)
    if isinstance(exc, openai.APIConnectionError):
        return _Attempt(f"{what} to {host} failed: connection error", None, True)
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        retryable = status == 429 or status >= 500
        hint = retry_after_seconds(getattr(exc.response, "headers", None)) if retryable else None
        return _Attempt(f"{what} to {host} failed: HTTP {status}", status, retryable, hint)
    return None


async def call_with_retries(
    send: Callable[[], Awaitable[T]],
    *,
    what: str,
    host: str,
    policy: RetryPolicy,
    gate: Gate,
    sleep: Callable[[float], Awaitable[Any]] | None = None,
) -> tuple[T, int]:
    """Run ``send`` through the gate, retrying transient failures; return (result, retries)."""
    sleep = sleep or backoff_sleep
    retries = 0
    while True:
        try:
            result = await gate.run(send)
        except ProviderError:
            raise
        except Exception as exc:
            attempt = _classify(exc, what, host, policy.timeout_s)
            if attempt is None:
                raise ProviderError(f"{what} to {host} failed: {type(exc).__name__}") from None
        else:
            gate.succeeded()
            return result, retries
        if attempt.status == 429:
            gate.rate_limited()
        if not attempt.retryable or retries >= policy.max_retries:
            suffix = (
                f" (gave up after {retries} retr{'y' if retries == 1 else 'ies'})"
                if retries
                else ""
            )
            raise ProviderError(
                attempt.message + suffix, status=attempt.status, retryable=attempt.retryable
            )
        if attempt.wait_hint is not None:
            if attempt.wait_hint > policy.max_wait_s:
                raise ProviderError(
                    f"{attempt.message}; the server asked to retry after {attempt.wait_hint:g}s, "
                    f"more than the {policy.max_wait_s:g}s limit",
                    status=attempt.status,
                    retryable=True,
                )
            delay = attempt.wait_hint
            gate.pause(delay)
        else:
            delay = policy.backoff(retries)
        retries += 1
        await sleep(delay)
