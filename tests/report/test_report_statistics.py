"""The report's statistics against independent implementations: the percentile is the
stdlib's inclusive quantile, the mean interval scipy.stats.t.interval's."""

from __future__ import annotations

import statistics

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from assay.report.statistics import mean_interval, percentile


@settings(max_examples=400, deadline=None)
@given(values=st.lists(st.floats(-1e6, 1e6), min_size=2, max_size=60), q=st.integers(1, 99))
def test_percentile_is_the_inclusive_quantile(values: list[float], q: int) -> None:
    """Excel's PERCENTILE.INC, as the stdlib's ``statistics.quantiles(method="inclusive")``
    computes it independently."""
    expected = statistics.quantiles(values, n=100, method="inclusive")[q - 1]
    got = percentile(np.sort(np.array(values, dtype=np.float64)), q)
    assert got == pytest.approx(expected, rel=1e-12, abs=1e-9)


@settings(max_examples=400, deadline=None)
@given(
    values=st.lists(st.floats(0, 1) | st.sampled_from([0.0, 0.5, 1.0]), min_size=1, max_size=80),
    q=st.sampled_from([0, 1, 5, 25, 50, 75, 95, 99, 100]) | st.floats(0, 100),
)
def test_percentile_is_numpys_bit_for_bit(values: list[float], q: float) -> None:
    """Reports stay bit-identical: the percentile read off the sorted scores is exactly
    ``np.percentile(..., method="linear")``."""
    ordered = np.sort(np.array(values, dtype=np.float64))
    assert percentile(ordered, q) == float(np.percentile(ordered, q, method="linear"))


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
