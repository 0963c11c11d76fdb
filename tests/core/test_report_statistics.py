"""The report's statistics against numpy and scipy: the percentile is numpy.percentile's
float exactly, the mean interval scipy.stats.t.interval's."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from assay.report.statistics import mean_interval, percentile

SCORES = st.lists(st.floats(0, 1), min_size=1, max_size=60)
ANY_FLOATS = st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=1, max_size=30)
QS = st.one_of(st.integers(0, 100), st.floats(0, 100))


def same(mine: float | None, theirs: float) -> bool:
    """The same float, NaN included."""
    return mine is not None and (mine == theirs or (math.isnan(mine) and math.isnan(theirs)))


@settings(max_examples=400, deadline=None)
@given(values=st.one_of(SCORES, ANY_FLOATS), q=QS)
def test_percentile_is_numpys_linear_percentile_to_the_bit(values: list[float], q: float) -> None:
    ordered = np.sort(np.array(values, dtype=np.float64))
    with np.errstate(invalid="ignore"):
        theirs = float(np.percentile(ordered, q, method="linear"))
    assert same(percentile(ordered, q), theirs)


@pytest.mark.parametrize("q", [0, 50, 95, 100])
def test_percentile_of_nothing_is_none(q: int) -> None:
    assert percentile(np.empty(0), q) is None


@settings(max_examples=200, deadline=None)
@given(values=st.lists(st.floats(0, 1), min_size=2, max_size=200))
def test_mean_interval_is_scipys_t_interval_clipped(values: list[float]) -> None:
    array = np.array(values)
    interval = mean_interval(array)
    assert interval is not None
    if array.std(ddof=1) == 0:
        assert interval.low == interval.high == pytest.approx(array.mean(), abs=1e-12)
        return
    low, high = stats.t.interval(0.95, df=array.size - 1, loc=array.mean(), scale=stats.sem(array))
    assert interval.low == pytest.approx(max(0.0, low), abs=1e-12)
    assert interval.high == pytest.approx(min(1.0, high), abs=1e-12)
