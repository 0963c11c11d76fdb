"""The pass rule, in one place.

A metric's score *passes* when it is at least the metric's ``threshold`` (a per-metric option,
default 0.5). A row *failed* a metric when it was scored below that threshold, and *errored*
when it could not be scored at all; the two words are never mixed. Every aggregate, renderer,
gate rule and JUnit case asks :func:`passes`.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Mapping
from typing import Any

from assay.errors import MetricConfigError

DEFAULT_THRESHOLD = 0.5

Thresholds = Mapping[str, float]


def passes(value: float, threshold: float = DEFAULT_THRESHOLD) -> bool:
    """Whether a score passes: ``value >= threshold``."""
    return value >= threshold


def threshold_for(thresholds: Thresholds | None, metric: str) -> float:
    """The threshold of ``metric`` (the default when it sets none)."""
    if not thresholds:
        return DEFAULT_THRESHOLD
    return thresholds.get(metric, DEFAULT_THRESHOLD)


def parse_threshold(value: Any, metric: str) -> float:
    """A metric's ``threshold:`` option: a number in [0, 1]."""
    if isinstance(value, str):
        with contextlib.suppress(ValueError):
            value = float(value.strip())
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise MetricConfigError(
            f"metric '{metric}': 'threshold' must be a number in [0, 1]; got {value!r}"
        )
    number = float(value)
    if not math.isfinite(number) or not 0.0 <= number <= 1.0:
        raise MetricConfigError(f"metric '{metric}': 'threshold' must be in [0, 1]; got {number}")
    return number
