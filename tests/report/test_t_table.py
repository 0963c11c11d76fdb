"""The mean interval's Student t quantile: the shipped table holds scipy's ``stdtrit`` bit for
bit, beyond it the large-df expansion is scipy's answer to a few ulps, and every other level at
a smaller df is scipy's own answer."""

from __future__ import annotations

import math
import subprocess
import sys

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


@pytest.mark.parametrize("level", [0.975, 0.95, 0.995, 0.9995, 0.55])
def test_beyond_the_table_the_expansion_is_scipys_quantile_to_a_few_ulps(level: float) -> None:
    df = np.unique(
        np.concatenate(
            [
                np.arange(TABLE_SIZE + 1, TABLE_SIZE + 400),
                np.geomspace(TABLE_SIZE + 1, 1e12, 600).astype(np.int64),
            ]
        )
    )
    expected = stdtrit(df.astype(np.float64), level)
    got = np.array([t_quantile(int(d), level) for d in df])
    assert np.allclose(got, expected, rtol=1e-14, atol=0.0)
    assert not np.array_equal(got, np.full_like(got, got[-1]))  # not one constant


def test_beyond_the_table_no_scipy_is_imported() -> None:
    code = (
        "import sys; from assay.report.statistics import t_quantile; "
        "t_quantile(10**6, 0.975); print('scipy' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


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
