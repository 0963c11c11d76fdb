"""Adaptive concurrency for calls to rate-limited services (AIMD), plus a requests-per-minute cap.

A :class:`Limiter` hands out slots. Each call holds one slot while it runs and tells the limiter
how it went:

* success: the limit grows additively, by one slot per ``limit`` successes (about one per round
  trip of a full window), up to ``max_concurrency``;
* overloaded (HTTP 429, or 503 with ``Retry-After``): the limit is multiplied by ``decrease``
  (halved by default), at most once per congestion event: an overload reported by a call that
  started before the last decrease was caused by the old limit and is not counted again. A
  ``Retry-After`` pauses every new call until that moment, not only the one that was refused.

An optional ``rpm`` spaces call starts evenly (at most ``rpm`` starts in any minute, no burst).
:func:`call_limited` wraps one call: acquire, run, report, and retry overloaded calls after the
server's ``Retry-After`` (or an exponential backoff). The runner uses it for the system under
test; the provider client can use the same object for model calls.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from assay.errors import AssayError

T = TypeVar("T")
Clock = Callable[[], float]


class RateLimited(Exception):
    """Raised by a call that the service refused as overloaded (HTTP 429 / 503).

    ``retry_after`` is the server's ``Retry-After`` in seconds when it sent one. ``message``
    names the service and status only, never a response body.
    """

    def __init__(
        self, message: str, *, retry_after: float | None = None, status: int | None = 429
    ) -> None:
        self.retry_after = retry_after
        self.status = status
        super().__init__(message)


@dataclass
class LimiterStats:
    """What happened at the limiter; printed by benchmarks and shown in tests."""

    calls: int = 0
    overloaded: int = 0
    decreases: int = 0
    max_in_flight: int = 0
    min_limit_seen: int = 0


class Slot:
    """One held slot; ``overloaded()`` or ``succeeded()`` says how the call went."""

    __slots__ = ("_limiter", "_outcome", "epoch", "retry_after")

    def __init__(self, limiter: Limiter, epoch: int) -> None:
        self._limiter = limiter
        self.epoch = epoch
        self._outcome: str | None = None
        self.retry_after: float | None = None

    def overloaded(self, retry_after: float | None = None) -> None:
        self._outcome = "overloaded"
        self.retry_after = retry_after

    def succeeded(self) -> None:
        self._outcome = "ok"

    def release(self) -> None:
        """Give the slot back (for callers that used :meth:`Limiter.acquire` directly)."""
        self._limiter._release(self)


class Limiter:
    """Concurrency limit that adapts to overload signals (AIMD), with an optional RPM cap.

    ``adaptive=False`` keeps the limit fixed at ``max_concurrency`` (a plain semaphore that
    still honours ``Retry-After`` pauses and ``rpm``). ``clock`` is the event loop's clock
    unless a test passes another.
    """

    def __init__(
        self,
        max_concurrency: int = 8,
        *,
        adaptive: bool = True,
        initial: int | None = None,
        min_concurrency: int = 1,
        decrease: float = 0.5,
        rpm: float | None = None,
        clock: Clock | None = None,
    ) -> None:
        if max_concurrency < 1:
            raise ValueError("max_concurrency must be at least 1")
        if not 1 <= min_concurrency <= max_concurrency:
            raise ValueError("min_concurrency must be between 1 and max_concurrency")
        if not 0.0 < decrease < 1.0:
            raise ValueError("decrease must be between 0 and 1")
        if rpm is not None and not rpm > 0:
            raise ValueError("rpm must be a positive number")
        self.max_concurrency = max_concurrency
        self.min_concurrency = min_concurrency
        self.adaptive = adaptive
        self.decrease = decrease
        self.rpm = rpm
        start = max_concurrency if initial is None else initial
        self._limit = float(min(max(start, min_concurrency), max_concurrency))
        self._clock = clock
        self._in_flight = 0
        self._epoch = 0
        self._paused_until = 0.0
        self._next_start = 0.0
        self._waiters: list[asyncio.Future[None]] = []
        self.stats = LimiterStats(min_limit_seen=self.limit)

    # ----------------------------------------------------------------------- state

    @property
    def limit(self) -> int:
        """Slots available now (the integer part of the adaptive window)."""
        return max(
            self.min_concurrency, int(self._limit + 1e-9)
        )  # 5 x 0.2 steps reach 6, not 5.999...

    @property
    def in_flight(self) -> int:
        return self._in_flight

    @property
    def paused_until(self) -> float:
        return self._paused_until

    def now(self) -> float:
        return self._clock() if self._clock is not None else asyncio.get_running_loop().time()

    # ----------------------------------------------------------------------- acquire / release

    def slot(self) -> _Acquire:
        """``async with limiter.slot() as slot:`` holds one slot for the duration of a call."""
        return _Acquire(self)

    async def _wait(self, timeout: float | None) -> None:
        """Sleep until a slot is released (or ``timeout`` passes, for a pause)."""
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            if timeout is None:
                await waiter
            else:
                with contextlib.suppress(asyncio.TimeoutError):  # the builtin one from 3.11 on
                    await asyncio.wait_for(waiter, timeout)
        finally:
            with contextlib.suppress(ValueError):
                self._waiters.remove(waiter)

    async def acquire(self) -> Slot:
        """Wait for a free slot, any ``Retry-After`` pause, and the RPM spacing."""
        while True:
            pause = self._paused_until - self.now()
            if pause > 0:
                # Re-check at least every 0.25 s: a pause can be lifted by a clock we do not drive.
                await self._wait(min(pause, 0.25))
                continue
            if self._in_flight < self.limit:
                break
            await self._wait(None)
        self._in_flight += 1
        slot = Slot(self, self._epoch)
        self.stats.calls += 1
        self.stats.max_in_flight = max(self.stats.max_in_flight, self._in_flight)
        if self.rpm is not None:
            now = self.now()
            start = max(now, self._next_start)
            self._next_start = start + 60.0 / self.rpm
            if start > now:
                try:
                    await asyncio.sleep(start - now)
                except BaseException:
                    self._release(slot)
                    raise
        return slot

    def _release(self, slot: Slot) -> None:
        self._in_flight -= 1
        if slot._outcome == "overloaded":
            self.stats.overloaded += 1
            self._on_overload(slot)
        elif slot._outcome == "ok":
            self._on_success()
        free = self.limit - self._in_flight
        for waiter in self._waiters[: max(0, free)]:
            if not waiter.done():
                waiter.set_result(None)

    def _on_success(self) -> None:
        if self.adaptive and self._limit < self.max_concurrency:
            self._limit = min(float(self.max_concurrency), self._limit + 1.0 / self.limit)

    def _on_overload(self, slot: Slot) -> None:
        if slot.retry_after is not None and slot.retry_after > 0:
            self._paused_until = max(self._paused_until, self.now() + slot.retry_after)
        if not self.adaptive or slot.epoch != self._epoch:
            return  # fixed limit, or this refusal came from a window that was already cut
        self._epoch += 1
        self.stats.decreases += 1
        self._limit = max(float(self.min_concurrency), math.floor(self._limit * self.decrease))
        self.stats.min_limit_seen = min(self.stats.min_limit_seen, self.limit)


class _Acquire:
    __slots__ = ("_limiter", "_slot")

    def __init__(self, limiter: Limiter) -> None:
        self._limiter = limiter
        self._slot: Slot | None = None

    async def __aenter__(self) -> Slot:
        self._slot = await self._limiter.acquire()
        return self._slot

    async def __aexit__(self, exc_type: object, exc: object, tb: object) -> None:
        assert self._slot is not None
        if exc_type is None and self._slot._outcome is None:
            self._slot.succeeded()
        self._limiter._release(self._slot)


@dataclass(frozen=True)
class RetryBudget:
    """How often an overloaded call is tried again, and the longest wait accepted."""

    max_retries: int = 8
    base_s: float = 0.5
    max_wait_s: float = 120.0

    def backoff(self, retry: int) -> float:
        return min(self.max_wait_s, self.base_s * (2.0**retry) * (1.0 + 0.25 * random.random()))


def retry_after_seconds(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` value: delta seconds or an HTTP date; None if unusable."""
    if value is None:
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        pass
    else:
        return seconds if math.isfinite(seconds) and seconds >= 0 else None
    from datetime import datetime, timezone
    from email.utils import parsedate_to_datetime

    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - datetime.now(timezone.utc)).total_seconds())


class GaveUp(AssayError):
    """An overloaded call still refused after every retry (message names status and count)."""


async def call_limited(
    limiter: Limiter,
    send: Callable[[], Awaitable[T]],
    *,
    retries: RetryBudget | None = None,
    sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
) -> T:
    """Run ``send`` in a limiter slot; on :class:`RateLimited`, report it and try again.

    The wait before a retry is the server's ``Retry-After`` when it sent one (the limiter also
    pauses every other call until then), else an exponential backoff. Raises :class:`GaveUp`
    after ``max_retries`` refusals or when the server asks for a longer wait than ``max_wait_s``.
    """
    policy = retries or RetryBudget()
    attempt = 0
    while True:
        async with limiter.slot() as slot:
            try:
                return await send()
            except RateLimited as exc:
                slot.overloaded(exc.retry_after)
                refusal = exc
        status = f"HTTP {refusal.status}" if refusal.status else "overloaded"
        if refusal.retry_after is not None and refusal.retry_after > policy.max_wait_s:
            raise GaveUp(
                f"{refusal}: the server asked to retry after {refusal.retry_after:g}s, "
                f"more than the {policy.max_wait_s:g}s limit"
            )
        if attempt >= policy.max_retries:
            raise GaveUp(f"{status} (rate limited; gave up after {attempt} retries)")
        delay = refusal.retry_after if refusal.retry_after is not None else policy.backoff(attempt)
        attempt += 1
        if delay > 0 and refusal.retry_after is None:
            await sleep(delay)
        # With Retry-After the limiter's pause makes this call (and every other) wait.
