"""The t quantile's module loads in a background thread while a run waits on replies
(assay.report.statistics.preload_t_quantile); the interval it gives is the same."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from assay.report import statistics

SRC = Path(__file__).resolve().parents[2] / "src"


def test_preload_imports_the_t_quantile_module_in_a_fresh_interpreter() -> None:
    probe = (
        "import sys\n"
        "from assay.report.statistics import T_QUANTILE_MODULE, preload_t_quantile\n"
        "before = T_QUANTILE_MODULE in sys.modules\n"
        "thread = preload_t_quantile()\n"
        "thread.join(60)\n"
        "print(before, thread.daemon, T_QUANTILE_MODULE in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        env={"PYTHONPATH": str(SRC), "PATH": ""},
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.split() == ["False", "True", "True"]


def test_a_failed_preload_is_silent(monkeypatch: pytest.MonkeyPatch) -> None:
    raised: list[object] = []
    monkeypatch.setattr(threading, "excepthook", raised.append)
    monkeypatch.setattr(statistics, "T_QUANTILE_MODULE", "assay_no_such_module_here")
    statistics.preload_t_quantile().join(10)
    assert raised == []


def test_mean_interval_after_a_preload_matches_scipy_stats() -> None:
    statistics.preload_t_quantile().join(60)
    values = np.array([0.1, 0.4, 0.35, 0.8, 0.55, 0.9, 0.05])
    interval = statistics.mean_interval(values)
    assert interval is not None
    low, high = stats.t.interval(
        0.95, df=values.size - 1, loc=values.mean(), scale=stats.sem(values)
    )
    assert interval.low == pytest.approx(max(0.0, low), abs=1e-12)
    assert interval.high == pytest.approx(min(1.0, high), abs=1e-12)
