"""Retry-After parsing, backoff bounds and the host label used in error messages."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from email.utils import format_datetime

import pytest

from assay.providers.retry import RetryPolicy, endpoint_host, retry_after_seconds


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after": "3"}, 3.0),
        ({"retry-after": "0.25"}, 0.25),
        ({"retry-after-ms": "1500"}, 1.5),
        ({"retry-after-ms": "200", "retry-after": "9"}, 0.2),
        ({"retry-after": "soon"}, None),
        ({"retry-after": "-1"}, None),
        ({}, None),
    ],
)
def test_retry_after_values(headers: dict[str, str], expected: float | None) -> None:
    assert retry_after_seconds(headers) == expected


def test_retry_after_http_date() -> None:
    when = datetime.now(timezone.utc) + timedelta(seconds=30)
    seconds = retry_after_seconds({"retry-after": format_datetime(when, usegmt=True)})
    assert seconds is not None and 25 <= seconds <= 31
    past = datetime.now(timezone.utc) - timedelta(seconds=30)
    assert retry_after_seconds({"retry-after": format_datetime(past, usegmt=True)}) == 0.0


def test_backoff_doubles_with_bounded_jitter_and_a_cap() -> None:
    policy = RetryPolicy(max_retries=5, base_s=0.5, max_wait_s=3.0)
    for retry, base in enumerate([0.5, 1.0, 2.0]):
        for _ in range(20):
            assert base <= policy.backoff(retry) <= base * 1.25
    assert policy.backoff(10) == 3.0


@pytest.mark.parametrize(
    ("url", "host"),
    [
        (None, "api.openai.com"),
        ("http://127.0.0.1:8080/v1", "127.0.0.1:8080"),
        ("https://user:sk-secret@proxy.example/v1?key=sk-secret", "proxy.example"),
    ],
)
def test_endpoint_host_never_carries_credentials(url: str | None, host: str) -> None:
    assert endpoint_host(url) == host


async def test_gate_cuts_once_per_episode_and_grows_back() -> None:
    from assay.providers.retry import Gate

    gate = Gate(10)
    gate.rate_limited()
    gate.rate_limited()  # the same episode: no second cut
    assert gate.current == 8
    for _ in range(8):
        gate.succeeded()
    assert gate.current == 9
    small = Gate(1)
    small.rate_limited()
    assert small.current == 1  # never below one


async def test_gate_never_exceeds_its_current_window() -> None:
    import asyncio

    from assay.providers.retry import Gate

    gate = Gate(6)
    gate.current = 2
    active, peak = 0, 0

    async def work() -> None:
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        await asyncio.sleep(0.005)
        active -= 1

    await asyncio.gather(*(gate.run(work) for _ in range(12)))
    assert peak == 2
