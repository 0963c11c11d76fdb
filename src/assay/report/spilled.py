"""A slice's scores past what it keeps in memory: written to a temporary file, and the report's
statistics taken over that file a chunk at a time, so a run's memory does not grow with it.

Counts, pass counts, min, max and histogram counts are exact, as over the whole array. The
percentiles are exact too: the order statistics numpy's 'linear' method interpolates between
are found by a radix select over the file (:func:`order_statistics`), and interpolated with
numpy's own arithmetic (:func:`assay.report.statistics.linear_percentile`). The mean is the
correctly rounded sum (``math.fsum``) over the count, and the standard deviation the same over
the squared deviations from it: numpy's pairwise sum over the whole sorted array (what a slice
held in memory gives) can differ from it in the last digit.
"""

from __future__ import annotations

import math
import struct
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import IO, TYPE_CHECKING

from assay.data.results import passes
from assay.report.statistics import histogram_counts, linear_percentile

if TYPE_CHECKING:  # numpy loads where first used
    import numpy as np
    import numpy.typing as npt

CHUNK = 1 << 16  # values read back from a spill file at a time (512 KB)
_DIGIT = 16  # bits of the key settled per pass of the radix select
_SIGN = 1 << 63


@dataclass(frozen=True)
class ScoreSummary:
    """What the report says about one slice's scored values (``std``: ddof=1, None below 2)."""

    scored: int
    failed: int
    passed: int
    mean: float | None
    std: float | None
    p50: float | None
    p95: float | None
    low: float | None
    high: float | None
    counts: npt.NDArray[np.int64]


def spill(handle: IO[bytes], values: array[float]) -> None:
    """Append ``values`` to a spill file (at its end) as native doubles."""
    handle.seek(0, 2)
    values.tofile(handle)


def chunks(handle: IO[bytes]) -> Iterator[npt.NDArray[np.float64]]:
    """The spilled values, :data:`CHUNK` at a time, in the order they were written."""
    import numpy as np

    handle.seek(0)
    while block := handle.read(CHUNK * 8):
        yield np.frombuffer(block, dtype=np.float64)


def summary_of_file(handle: IO[bytes], count: int, threshold: float) -> ScoreSummary:
    """The summary of ``count`` (>= 1) values spilled to ``handle``: a pass for the counts and
    extremes, one for the sum, one for the squared deviations, and four for the radix select
    of every order statistic the percentiles need."""
    import numpy as np

    passed = 0
    low, high = math.inf, -math.inf
    counts = np.zeros_like(histogram_counts(np.empty(0)))
    for chunk in chunks(handle):
        passed += int(passes(chunk, threshold).sum())
        low, high = min(low, float(chunk.min())), max(high, float(chunk.max()))
        counts += histogram_counts(chunk)
    mean = math.fsum(chain.from_iterable(chunk.tolist() for chunk in chunks(handle))) / count
    ranked = _percentile_ranks(handle, count, (50, 95))
    return ScoreSummary(
        scored=count,
        failed=count - passed,
        passed=passed,
        mean=mean,
        std=_spread(handle, count, mean),
        p50=linear_percentile(count, 50, ranked.__getitem__),
        p95=linear_percentile(count, 95, ranked.__getitem__),
        low=low,
        high=high,
        counts=counts,
    )


def _spread(handle: IO[bytes], count: int, mean: float) -> float | None:
    """The sample standard deviation (ddof=1) about ``mean``; None below two values."""
    if count < 2:
        return None
    squares = (((chunk - mean) ** 2).tolist() for chunk in chunks(handle))
    return math.sqrt(math.fsum(chain.from_iterable(squares)) / (count - 1))


def _percentile_ranks(handle: IO[bytes], count: int, percents: Sequence[int]) -> dict[int, float]:
    """The order statistics the percentiles interpolate between, by rank: which ranks those
    are is asked of :func:`linear_percentile` itself (it picks them from the count alone), and
    all of them are then selected in the same four passes."""
    wanted: set[int] = set()

    def note(rank: int) -> float:
        wanted.add(rank)
        return 0.0

    for percent in percents:
        linear_percentile(count, percent, note)
    ranks = sorted(wanted)
    return dict(zip(ranks, order_statistics(handle, ranks), strict=True))


def order_statistics(handle: IO[bytes], ranks: Sequence[int]) -> list[float]:
    """The values of ``ranks`` (0: the smallest) among the spilled values.

    A radix select on each double's order-preserving 64-bit key (:func:`_keys`): a pass per 16
    bits, from the top, counts the next digit of the keys that share the bits settled so far,
    and the rank's digit is where the running count passes it. Four passes settle every bit.
    """
    import numpy as np

    prefixes, left = [0] * len(ranks), list(ranks)
    for shift in range(64 - _DIGIT, -1, -_DIGIT):
        tallies = _digit_tallies(handle, shift, prefixes)
        for index, tally in enumerate(tallies):
            running = np.cumsum(tally)
            digit = int(np.searchsorted(running, left[index], side="right"))
            left[index] -= int(running[digit - 1]) if digit else 0
            prefixes[index] |= digit << shift
    return [_value(prefix) for prefix in prefixes]


def _digit_tallies(
    handle: IO[bytes], shift: int, prefixes: list[int]
) -> list[npt.NDArray[np.int64]]:
    """For each prefix: how many keys that share its bits above ``shift + 16`` have each value
    of the 16 bits from ``shift`` (the top digit: every key, counted once for all)."""
    import numpy as np

    settled = shift + _DIGIT
    size = 1 << _DIGIT
    tallies = [np.zeros(size, dtype=np.int64) for _ in prefixes]
    for chunk in chunks(handle):
        keys = _keys(chunk)
        digits = ((keys >> np.uint64(shift)) & np.uint64(size - 1)).astype(np.intp)
        if settled == 64:
            whole = np.bincount(digits, minlength=size)
            for tally in tallies:
                tally += whole
            continue
        above = keys >> np.uint64(settled)
        for tally, prefix in zip(tallies, prefixes):
            tally += np.bincount(digits[above == np.uint64(prefix >> settled)], minlength=size)
    return tallies


def _keys(values: npt.NDArray[np.float64]) -> npt.NDArray[np.uint64]:
    """Each double's 64-bit key, in the doubles' order: the bits with the sign bit set for a
    positive value, all bits flipped for a negative one (-0.0 is taken as 0.0 first)."""
    import numpy as np

    bits = (values + 0.0).view(np.uint64)
    negative = (bits >> np.uint64(63)).astype(np.bool_)
    return np.where(negative, ~bits, bits | np.uint64(_SIGN))


def _value(key: int) -> float:
    """The double whose key (:func:`_keys`) is ``key``."""
    bits = key ^ _SIGN if key & _SIGN else ~key & (2**64 - 1)
    return float(struct.unpack("<d", struct.pack("<Q", bits))[0])
