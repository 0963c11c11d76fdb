"""The mean interval's Student t quantile: the shipped table holds scipy's ``stdtrit`` bit for
bit, and every other level or df is scipy's own answer."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from scipy.special import stdtrit

from assay.report.statistics import mean_interval, t_quantile

TABLE_SIZE = 2**15


def test_every_table_entry_is_scipys_quantile() -> None:
    df = np.arange(1, TABLE_SIZE + 1)
    expected = stdtrit(df.astype(np.float64), 0.975)
    got = np.array([t_quantile(int(d), 0.975) for d in df])
    assert np.array_equal(got, expected)  # bit for bit, not approximately


@pytest.mark.parametrize("df", [TABLE_SIZE + 1, 10**5, 10**7])
def test_beyond_the_table_scipy_answers(df: int) -> None:
    assert t_quantile(df, 0.975) == float(stdtrit(df, 0.975))


@pytest.mark.parametrize("level", [0.9, 0.995, 0.5 + 0.99 / 2])
def test_other_levels_come_from_scipy(level: float) -> None:
    assert t_quantile(12, level) == float(stdtrit(12, level))


def test_the_interval_is_scipy_stats_t_interval() -> None:
    values = np.sort(np.random.default_rng(7).random(250))
    interval = mean_interval(values)
    assert interval is not None
    low, high = stats.t.interval(
        0.95, len(values) - 1, loc=values.mean(), scale=values.std(ddof=1) / math.sqrt(250)
    )
    assert interval.low == pytest.approx(low, rel=1e-12)
    assert interval.high == pytest.approx(high, rel=1e-12)
