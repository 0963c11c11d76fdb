"""The adaptive limiter.

AIMD arithmetic, one cut per congestion event, Retry-After, rpm and retries.
"""

from __future__ import annotations

import asyncio

import pytest

from assay.errors import GaveUp, RateLimited
from assay.providers.limiter import Limiter, Refusal, RetryPolicy, call_limited


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


async def test_multiplicative_decrease_happens_once_per_congestion_event() -> None:
    limiter = Limiter(16, clock=FakeClock())
    slots = [await limiter.acquire() for _ in range(16)]
    assert limiter.in_flight == 16 and limiter.limit == 16
    # Eight calls of the same window are refused: the window is cut once, to 8, not to 16/2^8.
    for slot in slots[:8]:
        slot.overloaded()
        slot.release()
    assert limiter.limit == 8
    assert limiter.stats.decreases == 1
    assert limiter.stats.overloaded == 8
    # A refusal of a call started after the cut is a new event: cut again.
    for slot in slots[8:]:
        slot.succeeded()
        slot.release()
    fresh = await limiter.acquire()
    fresh.overloaded()
    fresh.release()
    assert limiter.limit == 4
    assert limiter.stats.decreases == 2


async def test_additive_increase_is_one_slot_per_window_of_successes() -> None:
    limiter = Limiter(10, initial=4, clock=FakeClock())
    for _ in range(4):  # 4 successes at window 4: +1/4 each
        slot = await limiter.acquire()
        slot.succeeded()
        slot.release()
    assert limiter.limit == 5
    for _ in range(200):
        slot = await limiter.acquire()
        slot.succeeded()
        slot.release()
    assert limiter.limit == 10  # never past the ceiling


async def test_fixed_limiter_never_changes_its_limit() -> None:
    limiter = Limiter(6, adaptive=False, clock=FakeClock())
    slot = await limiter.acquire()
    slot.overloaded(None)
    slot.release()
    assert limiter.limit == 6
    assert limiter.stats.overloaded == 1 and limiter.stats.decreases == 0


async def test_floor_is_min_concurrency() -> None:
    limiter = Limiter(4, min_concurrency=2, clock=FakeClock())
    for _ in range(5):
        slot = await limiter.acquire()
        slot.overloaded()
        slot.release()
    assert limiter.limit == 2


async def test_retry_after_pauses_every_caller() -> None:
    clock = FakeClock()
    limiter = Limiter(4, clock=clock)
    slot = await limiter.acquire()
    slot.overloaded(retry_after=7.5)
    slot.release()
    assert limiter.paused_until == pytest.approx(107.5)
    waiter = asyncio.ensure_future(limiter.acquire())
    await asyncio.sleep(0.02)
    assert not waiter.done()  # still paused on the (fake) clock
    clock.now = 107.6
    got = await asyncio.wait_for(waiter, 5)
    got.release()


async def test_in_flight_never_exceeds_the_limit() -> None:
    limiter = Limiter(3)
    peak = 0

    async def work() -> None:
        nonlocal peak
        async with limiter.slot():
            peak = max(peak, limiter.in_flight)
            await asyncio.sleep(0.001)

    await asyncio.gather(*(work() for _ in range(40)))
    assert peak == 3
    assert limiter.stats.calls == 40
    assert limiter.in_flight == 0


async def test_rpm_spaces_call_starts() -> None:
    limiter = Limiter(8, rpm=1200)  # one start every 50 ms
    loop = asyncio.get_running_loop()
    starts: list[float] = []

    async def work() -> None:
        async with limiter.slot():
            starts.append(loop.time())

    began = loop.time()
    await asyncio.gather(*(work() for _ in range(5)))
    starts.sort()
    # The k-th call may not start before k spacings have passed (a busy loop may start it later).
    assert all(start - began >= k * 0.05 - 1e-3 for k, start in enumerate(starts)), [
        s - began for s in starts
    ]
    assert limiter.stats.calls == 5


async def test_call_limited_retries_after_refusals_then_succeeds() -> None:
    limiter = Limiter(2)
    attempts = 0

    async def send() -> str:
        nonlocal attempts
        attempts += 1
        if attempts < 3:
            raise RateLimited("HTTP 429", retry_after=0.0)
        return "ok"

    assert await call_limited(limiter, send) == ("ok", 2)
    assert attempts == 3
    assert limiter.stats.overloaded == 2


async def test_call_limited_gives_up_and_says_why() -> None:
    limiter = Limiter(2)
    waits: list[float] = []

    async def refuse() -> str:
        raise RateLimited("HTTP 429")

    async def fake_sleep(seconds: float) -> None:
        waits.append(seconds)

    with pytest.raises(GaveUp, match=r"^HTTP 429 \(gave up after 3 retries\)$") as info:
        await call_limited(
            limiter, refuse, policy=RetryPolicy(max_retries=3, base_s=1.0), sleep=fake_sleep
        )
    assert info.value.status == 429
    assert len(waits) == 3
    assert (
        waits[0] >= 1.0 and waits[1] >= 2.0 and waits[2] >= 4.0
    )  # exponential without Retry-After

    async def refuse_long() -> str:
        raise RateLimited("HTTP 429", retry_after=3600)

    with pytest.raises(GaveUp, match="retry after 3600s, more than the 60s limit"):
        await call_limited(limiter, refuse_long)
    assert limiter.paused_until == 0.0  # a wait the policy refuses does not stall other calls


def test_bad_settings_are_refused() -> None:
    for kwargs in (
        {"max_concurrency": 0},
        {"max_concurrency": 2, "min_concurrency": 3},
        {"decrease": 1.0},
        {"rpm": 0},
    ):
        with pytest.raises(ValueError):
            Limiter(**kwargs)


async def test_a_transient_failure_pauses_for_the_servers_wait_but_does_not_cut() -> None:
    clock = FakeClock()
    limiter = Limiter(4, clock=clock)
    slot = await limiter.acquire()
    slot.failed(retry_after=2.0)
    slot.release()
    assert limiter.limit == 4 and limiter.stats.decreases == 0 and limiter.stats.overloaded == 0
    assert limiter.paused_until == pytest.approx(102.0)


async def test_classify_decides_what_is_retried() -> None:
    limiter = Limiter(2)
    attempts = 0

    async def flaky() -> str:
        nonlocal attempts
        attempts += 1
        if attempts == 1:
            raise TimeoutError
        if attempts == 2:
            raise KeyError("not worth retrying")
        return "never"

    def classify(exc: Exception) -> Refusal | None:
        return Refusal("timed out") if isinstance(exc, TimeoutError) else None

    waits: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        waits.append(seconds)

    with pytest.raises(KeyError):  # None from classify: the error itself propagates
        await call_limited(limiter, flaky, classify=classify, sleep=fake_sleep)
    assert attempts == 2 and len(waits) == 1
    # A timeout is not an overload: retried, but the window is not cut.
    assert limiter.stats.overloaded == 0 and limiter.limit == 2


async def test_without_retries_the_first_refusal_is_final() -> None:
    async def refuse() -> str:
        raise RateLimited("HTTP 429")

    with pytest.raises(GaveUp, match=r"^HTTP 429$"):
        await call_limited(Limiter(2), refuse, policy=RetryPolicy(max_retries=0))


def test_backoff_doubles_with_bounded_jitter_and_a_cap() -> None:
    policy = RetryPolicy(max_retries=5, base_s=0.5, max_wait_s=3.0)
    for retry, base in enumerate([0.5, 1.0, 2.0]):
        for _ in range(20):
            assert base <= policy.backoff(retry) <= base * 1.25
    assert policy.backoff(10) == 3.0
    assert RetryPolicy().backoff(5000) == 60.0  # no float overflow however many retries
