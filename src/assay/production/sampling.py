"""Deterministic trace sampling: a trace is kept or dropped by a hash of its id alone.

``keep(trace_id, rate)`` takes the first 8 bytes of SHA-256 over the trace id's 16 bytes as a
big-endian integer ``h`` and keeps the trace when ``h < rate * 2**64``. Every machine, every
process and every span of the trace decides the same way, so a trace is never half-stored.
"""

from __future__ import annotations

import hashlib
from typing import Final

from assay.errors import UsageError

SCALE: Final = 2**64


def check_rate(rate: float) -> float:
    """``rate`` if it is a share in [0, 1], else a UsageError naming it."""
    if not 0.0 <= rate <= 1.0:  # NaN fails both comparisons
        raise UsageError(f"--sample-rate must be between 0 and 1; got {rate}")
    return rate


def trace_hash(trace_id: str) -> int:
    """The trace's 64-bit sampling hash (ids that are not hex are hashed as UTF-8 text)."""
    try:
        raw = bytes.fromhex(trace_id)
    except ValueError:
        raw = trace_id.encode("utf-8", "surrogatepass")
    return int.from_bytes(hashlib.sha256(raw).digest()[:8], "big")


def keep(trace_id: str, rate: float) -> bool:
    """Whether the trace is in the sample at ``rate`` (0 keeps none, 1 keeps all)."""
    if rate >= 1.0:
        return True
    return trace_hash(trace_id) < int(rate * SCALE)
