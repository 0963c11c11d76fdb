"""MetricScore's checks on its value: a number in [0, 1], stored as a float."""

from __future__ import annotations

import math

import pytest

from assay.errors import MetricError
from assay.metrics.base import MetricScore


class Ratio(float):
    """A float subclass: stored as a plain float."""


@pytest.mark.parametrize("value", [0.0, -0.0, 0.25, 1.0, 0, 1, Ratio(0.5), 5e-324])
def test_in_range_numbers_are_kept_as_floats(value: float) -> None:
    score = MetricScore(value)
    assert type(score.value) is float
    assert score.value == value
    assert math.copysign(1.0, score.value) == math.copysign(1.0, value)
    assert score.details == {} and score.usage is None


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (math.nan, "must be in"),
        (-math.inf, "must be in"),
        (math.inf, "must be in"),
        (1.0000000000000002, "must be in"),
        (-5e-324, "must be in"),
        (2, "must be in"),
        (True, "must be a number"),
        ("0.5", "must be a number"),
        (None, "must be a number"),
        (Ratio(1.5), "must be in"),
        (Ratio("nan"), "must be in"),
    ],
)
def test_other_values_are_errors(value: object, message: str) -> None:
    with pytest.raises(MetricError, match=message):
        MetricScore(value)  # type: ignore[arg-type]
