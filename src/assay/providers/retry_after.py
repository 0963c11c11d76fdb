"""The server's own word on when to try again: ``Retry-After`` and ``retry-after-ms``.

Read by :mod:`assay.providers.limiter` for every refused call (systems under test and model
providers
alike), so one parser decides how long a server asked to wait and whether a refusal is an
overload (the server asks for fewer calls) rather than a failure.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime


def retry_after_seconds(
    headers: Mapping[str, str] | None, *, now: datetime | None = None
) -> float | None:
    """The server's wait in seconds: ``retry-after-ms`` first, then ``Retry-After``.

    ``Retry-After`` is delta seconds or an HTTP date (a date in the past is 0). Negative,
    non-finite or unreadable values give ``None`` (no hint, so the caller backs off itself).
    ``headers`` is any mapping; HTTP libraries' header maps ignore the name's case.
    """
    if headers is None:
        return None
    millis = _seconds(headers.get("retry-after-ms"))
    if millis is not None:
        return millis / 1000.0
    raw = headers.get("retry-after")
    if raw is None:
        return None
    seconds = _seconds(raw)
    return seconds if seconds is not None else _until(raw, now)


def _seconds(raw: str | None) -> float | None:
    """A non-negative finite number, or None."""
    if raw is None:
        return None
    try:
        value = float(raw.strip())
    except ValueError:
        return None
    return value if math.isfinite(value) and value >= 0 else None


def _until(raw: str, now: datetime | None) -> float | None:
    """Seconds from ``now`` to an HTTP date (0 when it has passed), or None if not a date."""
    try:
        when = parsedate_to_datetime(raw.strip())
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    reference = now if now is not None else datetime.now(timezone.utc)
    return max(0.0, (when - reference).total_seconds())


def is_overload(status: int, headers: Mapping[str, str]) -> bool:
    """HTTP 429, or 503 that carries a wait: the server asks for fewer calls, not a fix."""
    waits = "retry-after" in headers or "retry-after-ms" in headers
    return status == 429 or (status == 503 and waits)
