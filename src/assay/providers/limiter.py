"""The one retry and rate stack: every call to a system under test or a model provider.

A :class:`Limiter` hands out slots and adapts how many may be held at once (AIMD); an optional
``rpm`` spaces call starts evenly. :func:`call_limited` runs one call in a slot and tries it
again after a refusal: the server's wait (``retry-after-ms``, ``Retry-After`` in seconds or as
an HTTP date, read by :func:`assay.providers.retry_after.retry_after_seconds`, re-exported here)
when it
sent one, else exponential backoff
with jitter (:class:`RetryPolicy`). A ``classify`` function says which failures are worth
another try; the default retries :class:`~assay.errors.RateLimited` only (what an HTTP system
under test raises), the provider layer passes one for the ``openai`` SDK's errors.

The numbers, in one place (every caller uses these unless told otherwise):

=====================  ========  ===============================================================
constant               value     meaning
=====================  ========  ===============================================================
MAX_CONCURRENCY        8         slots when none is given (``--concurrency`` and the provider
                                 ``max_concurrency`` default to it)
DECREASE               0.5       an overload (HTTP 429, or 503 with a wait) multiplies the
                                 window by this, once per congestion event; floor 1
(additive increase)    1/window  each success widens the window by 1/window: one more slot
                                 per window's worth of successes, up to the ceiling
BACKOFF_BASE_S         0.5 s     the first wait without a server hint; doubles per retry
BACKOFF_JITTER         0.25      each backoff is stretched by a random 0..25%
MAX_WAIT_S             60 s      longest single wait; a server asking for more fails the call
                                 at once rather than stalling the run
MAX_RETRIES            8         retries of a refused call to a system under test (refusals
                                 are the server's own "come back later", so patience pays)
PROVIDER_MAX_RETRIES   3         retries of a provider call (``ASSAY_PROVIDER_MAX_RETRIES``):
                                 its failures include timeouts, each up to ``timeout_s``
=====================  ========  ===============================================================

An overload reported by a call that started before the last cut was caused by the old window
and does not cut it again. A server's wait pauses every new call of the limiter, not only the
refused one. Messages name the service and status, never a response body.
"""

from __future__ import annotations

import contextlib
import math
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Generic, TypeVar

from assay.errors import GaveUp, RateLimited
from assay.providers.retry_after import is_overload as is_overload
from assay.providers.retry_after import retry_after_seconds as retry_after_seconds

if TYPE_CHECKING:  # asyncio is imported where a call waits: a run that never awaits skips it
    import asyncio

T = TypeVar("T")
Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[object]]

MAX_CONCURRENCY: Final = 8
DECREASE: Final = 0.5
BACKOFF_BASE_S: Final = 0.5
BACKOFF_JITTER: Final = 0.25
MAX_WAIT_S: Final = 60.0
MAX_RETRIES: Final = 8
PROVIDER_MAX_RETRIES: Final = 3
_PAUSE_RECHECK_S: Final = 0.25  # a pause can be lifted by a clock the loop does not drive
_MAX_DOUBLINGS: Final = 60  # 2**60 x any base is past every cap; keeps floats finite


# --------------------------------------------------------------------------- retry policy


@dataclass(frozen=True)
class RetryPolicy:
    """How often a refused call is tried again, the first backoff, and the longest wait."""

    max_retries: int = MAX_RETRIES
    base_s: float = BACKOFF_BASE_S
    max_wait_s: float = MAX_WAIT_S

    def backoff(self, retry: int) -> float:
        """``base_s * 2**retry``, stretched by up to 25% jitter, capped at ``max_wait_s``."""
        delay = self.base_s * (2.0 ** min(retry, _MAX_DOUBLINGS))
        return min(self.max_wait_s, delay * (1.0 + BACKOFF_JITTER * random.random()))


@dataclass(frozen=True)
class Refusal:
    """One failed attempt worth another try: what to say, and what the server asked for.

    ``overloaded`` refusals (429, 503 with a wait) cut the concurrency window; others
    (timeouts, dropped connections, 5xx) are retried without cutting it.
    """

    message: str
    status: int | None = None
    overloaded: bool = False
    retry_after: float | None = None


Classify = Callable[[Exception], Refusal | None]


def rate_limited(exc: Exception) -> Refusal | None:
    """The default ``classify``: :class:`RateLimited` is an overload; anything else propagates."""
    if not isinstance(exc, RateLimited):
        return None
    return Refusal(str(exc), exc.status, overloaded=True, retry_after=exc.retry_after)


# --------------------------------------------------------------------------- the limiter


@dataclass
class LimiterStats:
    """What happened at the limiter; printed by benchmarks and shown in tests."""

    calls: int = 0
    overloaded: int = 0
    decreases: int = 0
    max_in_flight: int = 0
    min_limit_seen: int = 0


class Slot:
    """One held slot; ``overloaded()``, ``failed()`` or ``succeeded()`` says how the call went."""

    __slots__ = ("_limiter", "_outcome", "epoch", "retry_after")

    def __init__(self, limiter: Limiter, epoch: int) -> None:
        self._limiter = limiter
        self.epoch = epoch
        self._outcome: str | None = None
        self.retry_after: float | None = None

    def overloaded(self, retry_after: float | None = None) -> None:
        """The service refused the call as overloaded: cut the window, pause for its wait."""
        self._outcome = "overloaded"
        self.retry_after = retry_after

    def failed(self, retry_after: float | None = None) -> None:
        """A transient failure (timeout, 5xx): no cut, but pause for the server's wait."""
        self._outcome = "failed"
        self.retry_after = retry_after

    def succeeded(self) -> None:
        self._outcome = "ok"

    @property
    def outcome(self) -> str | None:
        return self._outcome

    def release(self) -> None:
        """Give the slot back (for callers that used :meth:`Limiter.acquire` directly)."""
        self._limiter._release(self)


class Limiter:
    """Concurrency limit that adapts to overload signals (AIMD), with an optional RPM cap.

    ``adaptive=False`` keeps the limit fixed at ``max_concurrency`` (a plain semaphore that
    still honours server waits and ``rpm``). ``clock`` is the event loop's clock unless a test
    passes another.
    """

    def __init__(
        self,
        max_concurrency: int = MAX_CONCURRENCY,
        *,
        adaptive: bool = True,
        initial: int | None = None,
        min_concurrency: int = 1,
        decrease: float = DECREASE,
        rpm: float | None = None,
        clock: Clock | None = None,
    ) -> None:
        _check(max_concurrency, min_concurrency, decrease, rpm)
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

    @property
    def limit(self) -> int:
        """Slots available now (the integer part of the adaptive window)."""
        # The epsilon lets five steps of 0.2 reach 6, not 5.999...
        return max(self.min_concurrency, int(self._limit + 1e-9))

    @property
    def in_flight(self) -> int:
        return self._in_flight

    @property
    def paused_until(self) -> float:
        return self._paused_until

    def now(self) -> float:
        if self._clock is not None:
            return self._clock()
        import asyncio

        return asyncio.get_running_loop().time()

    def slot(self) -> _Acquire:
        """``async with limiter.slot() as slot:`` holds one slot for the duration of a call."""
        return _Acquire(self)

    async def _wait(self, timeout: float | None) -> None:
        """Sleep until a slot is released (or ``timeout`` passes, for a pause)."""
        import asyncio

        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            if timeout is None:
                await waiter
            else:
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(waiter, timeout)
        finally:
            with contextlib.suppress(ValueError):
                self._waiters.remove(waiter)

    async def acquire(self) -> Slot:
        """Wait for a free slot, any server-requested pause, and the RPM spacing."""
        while True:
            # Never paused (the usual case): no clock to read.
            pause = self._paused_until - self.now() if self._paused_until else 0.0
            if pause > 0:
                await self._wait(min(pause, _PAUSE_RECHECK_S))
                continue
            if self._in_flight < self.limit:
                break
            await self._wait(None)
        self._in_flight += 1
        slot = Slot(self, self._epoch)
        self.stats.calls += 1
        self.stats.max_in_flight = max(self.stats.max_in_flight, self._in_flight)
        try:
            await self._space_start()
        except BaseException:
            self._release(slot)
            raise
        return slot

    async def _space_start(self) -> None:
        """With ``rpm``, start calls ``60 / rpm`` seconds apart (no burst)."""
        if self.rpm is None:
            return
        now = self.now()
        start = max(now, self._next_start)
        self._next_start = start + 60.0 / self.rpm
        if start > now:
            import asyncio

            await asyncio.sleep(start - now)

    def _release(self, slot: Slot) -> None:
        self._in_flight -= 1
        if slot.outcome == "overloaded":
            self.stats.overloaded += 1
            self._pause(slot.retry_after)
            self._on_overload(slot)
        elif slot.outcome == "failed":
            self._pause(slot.retry_after)
        elif slot.outcome == "ok":
            self._on_success()
        free = self.limit - self._in_flight
        for waiter in self._waiters[: max(0, free)]:
            if not waiter.done():
                waiter.set_result(None)

    def _pause(self, seconds: float | None) -> None:
        if seconds is not None and seconds > 0:
            self._paused_until = max(self._paused_until, self.now() + seconds)

    def _on_success(self) -> None:
        if self.adaptive and self._limit < self.max_concurrency:
            self._limit = min(float(self.max_concurrency), self._limit + 1.0 / self.limit)

    def _on_overload(self, slot: Slot) -> None:
        if not self.adaptive or slot.epoch != self._epoch:
            return  # fixed limit, or this refusal came from a window that was already cut
        self._epoch += 1
        self.stats.decreases += 1
        self._limit = max(float(self.min_concurrency), math.floor(self._limit * self.decrease))
        self.stats.min_limit_seen = min(self.stats.min_limit_seen, self.limit)


def _check(max_concurrency: int, min_concurrency: int, decrease: float, rpm: float | None) -> None:
    if max_concurrency < 1:
        raise ValueError("max_concurrency must be at least 1")
    if not 1 <= min_concurrency <= max_concurrency:
        raise ValueError("min_concurrency must be between 1 and max_concurrency")
    if not 0.0 < decrease < 1.0:
        raise ValueError("decrease must be between 0 and 1")
    if rpm is not None and not rpm > 0:
        raise ValueError("rpm must be a positive number")


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
        if exc_type is None and self._slot.outcome is None:
            self._slot.succeeded()
        self._limiter._release(self._slot)


# --------------------------------------------------------------------------- the retry loop


async def backoff_sleep(seconds: float) -> None:
    """The wait between attempts (a module attribute so tests can record the delays)."""
    import asyncio

    await asyncio.sleep(seconds)


@dataclass(frozen=True)
class _Done(Generic[T]):
    value: T


async def call_limited(
    limiter: Limiter,
    send: Callable[[], Awaitable[T]],
    *,
    policy: RetryPolicy | None = None,
    classify: Classify = rate_limited,
    sleep: Sleep | None = None,
) -> tuple[T, int]:
    """Run ``send`` in a slot of ``limiter``, retrying refusals; return (result, retries).

    ``classify`` turns a failure into a :class:`Refusal` (try again) or ``None`` (re-raise it);
    it may also raise its own error. The wait before a retry is the server's when it sent one
    (the limiter pauses every other call too), else ``policy.backoff``. Raises
    :class:`~assay.errors.GaveUp` after ``max_retries`` refusals, or at once when the server
    asks for a longer wait than ``max_wait_s``.
    """
    policy = policy or RetryPolicy()
    retries = 0
    while True:
        outcome = await _attempt(limiter, send, classify, policy)
        if isinstance(outcome, _Done):
            return outcome.value, retries
        delay = _next_wait(outcome, policy, retries)
        retries += 1
        await (sleep or backoff_sleep)(delay)


async def _attempt(
    limiter: Limiter, send: Callable[[], Awaitable[T]], classify: Classify, policy: RetryPolicy
) -> _Done[T] | Refusal:
    """One try in one slot; the slot learns how it went (a too-long wait does not pause)."""
    async with limiter.slot() as slot:
        try:
            return _Done(await send())
        except Exception as exc:
            failure = exc
        # Outside the handler, so an error ``classify`` raises carries no context (no body).
        refusal = classify(failure)
        if refusal is None:
            raise failure
        # A refused attempt keeps nothing: its traceback and the exception it replaced hold
        # frames (and the reply read in them) in reference cycles that the run's raised GC
        # threshold leaves uncollected for a long time.
        failure.__traceback__ = failure.__context__ = failure.__cause__ = None
        del failure
        wait = refusal.retry_after
        pause = wait if wait is not None and wait <= policy.max_wait_s else None
        (slot.overloaded if refusal.overloaded else slot.failed)(pause)
        return refusal


def _next_wait(refusal: Refusal, policy: RetryPolicy, retries: int) -> float:
    """Seconds to wait before the next try; raises GaveUp when there is none."""
    wait = refusal.retry_after
    if wait is not None and wait > policy.max_wait_s:
        raise GaveUp(
            f"{refusal.message}; the server asked to retry after {wait:g}s, "
            f"more than the {policy.max_wait_s:g}s limit",
            status=refusal.status,
        )
    if retries >= policy.max_retries:
        tries = f" (gave up after {retries} retr{'y' if retries == 1 else 'ies'})"
        raise GaveUp(refusal.message + (tries if retries else ""), status=refusal.status)
    return wait if wait is not None else policy.backoff(retries)
