"""The one Retry-After parser: seconds, HTTP dates, ``retry-after-ms``, and what it refuses.

Expected values are worked out by hand (or, for the far-future date, with ``calendar.timegm``,
a different route from the parser's datetime arithmetic).
"""

from __future__ import annotations

import calendar
from collections.abc import Mapping
from datetime import datetime, timezone

import httpx
import pytest

from assay.providers.limiter import retry_after_seconds

NOW = datetime(2015, 10, 21, 7, 27, 30, tzinfo=timezone.utc)


def wait(headers: Mapping[str, str] | None) -> float | None:
    return retry_after_seconds(headers, now=NOW)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("3", 3.0),
        ("0", 0.0),
        (" 0.25 ", 0.25),
        ("120", 120.0),
        ("86400", 86400.0),
        ("99999999999999999999", 1e20),  # huge but finite: kept, the policy then refuses it
        ("1e308", 1e308),
    ],
)
def test_delta_seconds(value: str, expected: float) -> None:
    assert wait({"retry-after": value}) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("Wed, 21 Oct 2015 07:28:00 GMT", 30.0),  # IMF-fixdate, 30 s after NOW
        ("Wednesday, 21-Oct-15 07:28:00 GMT", 30.0),  # obsolete RFC 850 form
        ("Wed Oct 21 07:28:00 2015", 30.0),  # obsolete asctime form (read as UTC)
        ("Wed, 21 Oct 2015 08:28:00 +0100", 30.0),  # an offset: 08:28 at +1 h is 07:28 UTC
        ("Wed, 21 Oct 2015 07:37:30 GMT", 600.0),  # ten minutes
        ("Wed, 21 Oct 2015 07:27:30 GMT", 0.0),  # exactly now
        ("Wed, 21 Oct 2015 07:27:00 GMT", 0.0),  # in the past: no wait, never negative
        ("Thu, 01 Jan 1970 00:00:00 GMT", 0.0),
    ],
)
def test_http_dates(value: str, expected: float) -> None:
    assert wait({"retry-after": value}) == expected


def test_far_future_date_is_a_huge_wait() -> None:
    expected = calendar.timegm((9999, 12, 31, 23, 59, 59)) - calendar.timegm(
        (2015, 10, 21, 7, 27, 30)
    )
    assert wait({"retry-after": "Fri, 31 Dec 9999 23:59:59 GMT"}) == float(expected)


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after-ms": "1500"}, 1.5),
        ({"retry-after-ms": "250.5"}, 0.2505),
        ({"retry-after-ms": "0"}, 0.0),
        ({"retry-after-ms": "200", "retry-after": "9"}, 0.2),  # milliseconds win
        ({"retry-after-ms": "-5", "retry-after": "9"}, 9.0),  # a bad ms value falls back
        ({"retry-after-ms": "soon", "retry-after": "2"}, 2.0),
        ({"retry-after-ms": "inf", "retry-after": "4"}, 4.0),
        ({"retry-after-ms": "-1"}, None),
        ({"retry-after-ms": "1e308"}, 1e305),
    ],
)
def test_retry_after_ms(headers: dict[str, str], expected: float | None) -> None:
    assert wait(headers) == expected


@pytest.mark.parametrize(
    "value",
    [
        "soon",
        "",
        "   ",
        "3 seconds",
        "0x10",
        "nan",
        "inf",
        "-inf",
        "1e309",  # overflows to infinity
        "-1",
        "-0.5",
        "Wed, 32 Oct 2015 07:28:00 GMT",  # no such day
        "Mon, 01 Jan 10000 00:00:00 GMT",  # past the last year a datetime holds
        "Wed, 21 Foo 2015 07:28:00 GMT",
    ],
)
def test_garbage_and_negative_values_are_no_hint(value: str) -> None:
    assert wait({"retry-after": value}) is None


def test_missing_header_is_no_hint() -> None:
    assert wait(None) is None
    assert wait({}) is None
    assert wait({"x-retry-after": "3"}) is None


def test_header_names_are_read_case_insensitively_from_http_headers() -> None:
    assert wait(httpx.Headers({"Retry-After": "5"})) == 5.0
    assert wait(httpx.Headers({"Retry-After-Ms": "40", "RETRY-AFTER": "5"})) == 0.04


def test_without_now_the_wall_clock_is_used() -> None:
    assert retry_after_seconds({"retry-after": "Thu, 01 Jan 1970 00:00:00 GMT"}) == 0.0
    far = retry_after_seconds({"retry-after": "Fri, 31 Dec 9999 23:59:59 GMT"})
    assert far is not None and far > 200 * 365 * 86400
