"""Repetitions with a nondeterministic system (pass rates, unstable samples, Wilson intervals),
budget halts (exit 1, where it stopped), and the report being rebuilt from the store."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from statsmodels.stats.proportion import proportion_confint

from assay.data.loading import load_dataset
from assay.data.outputs import Output
from assay.engine.evaluation import RunOptions, run_samples
from assay.engine.rebuild import report_from_store
from assay.engine.sut import SavedOutputs
from assay.metrics.registry import resolve
from assay.report.model import Report
from assay.store.runs import RunStore
from engine.procs import run_assay
from engine.sut_server import SutServer, write_dataset

FLAKY = {"s0001": 2, "s0004": 1}  # sample -> how many of its 3 calls answer correctly
ALWAYS_WRONG = "s0006"


def flaky_answer(qid: str, call: int) -> str:
    """Right on some calls and wrong on others: the system is nondeterministic per sample."""
    if qid == ALWAYS_WRONG:
        return "no idea"
    if qid in FLAKY:
        return f"answer {qid}" if call <= FLAKY[qid] else "something else"
    return f"answer {qid}"


def test_repetitions_report_pass_rates_unstable_samples_and_wilson_intervals(
    tmp_path: Path,
) -> None:
    dataset = tmp_path / "dataset.json"
    ids = write_dataset(dataset, 8)
    with SutServer(answer=flaky_answer) as server:
        done = run_assay(
            [
                "run",
                str(dataset),
                "--sut-url",
                server.url,
                "--repetitions",
                "3",
                "--store",
                str(tmp_path / "s.db"),
                "-f",
                "json",
                "-o",
                str(tmp_path / "r.json"),
                "--also",
                f"md={tmp_path / 'r.md'}",
                "-q",
            ],
            cwd=tmp_path,
        )
        assert all(server.calls[i] == 3 for i in ids)
    assert done.returncode == 0, done.stderr
    data = json.loads((tmp_path / "r.json").read_text())
    jsonschema.validate(data, Report.model_json_schema())
    reps = data["repetitions"]
    assert reps["count"] == 3
    assert sorted(reps["unstable_samples"]) == sorted(FLAKY)
    by_id = {s["id"]: s for s in reps["samples"]}
    assert list(by_id) == ids  # dataset order
    for sample_id in ids:
        passed = FLAKY.get(sample_id, 0 if sample_id == ALWAYS_WRONG else 3)
        entry = by_id[sample_id]
        assert entry["repetitions"] == 3
        assert entry["passed"] == passed
        assert entry["pass_rate"] == pytest.approx(passed / 3)
        assert entry["unstable"] == (0 < passed < 3)
        low, high = proportion_confint(passed, 3, alpha=0.05, method="wilson")
        assert entry["pass_rate_ci"]["low"] == pytest.approx(low, abs=1e-9)
        assert entry["pass_rate_ci"]["high"] == pytest.approx(high, abs=1e-9)
        # Mean and population spread of the per-execution mean score (two metrics, both 0 or 1).
        per_execution = [1.0] * passed + [0.0] * (3 - passed)
        mean = sum(per_execution) / 3
        assert entry["score_mean"] == pytest.approx(mean)
        assert entry["score_stddev"] == pytest.approx(
            (sum((x - mean) ** 2 for x in per_execution) / 3) ** 0.5
        )
    assert data["summary"]["total_executions"] == 24
    assert data["summary"]["pass_rate"] == pytest.approx((3 * 5 + 2 + 1) / 24)

    markdown = (tmp_path / "r.md").read_text()
    assert "## Sampling" in markdown
    assert "3 repetitions per sample; 2 unstable samples." in markdown
    low, high = proportion_confint(2, 3, alpha=0.05, method="wilson")
    assert f"| s0001 | 2/3 | 0.6667 | {low:.4f}–{high:.4f} |" in markdown
    low, high = proportion_confint(1, 3, alpha=0.05, method="wilson")
    assert f"| s0004 | 1/3 | 0.3333 | {low:.4f}–{high:.4f} |" in markdown


PRICED_METRIC = '''
from assay.metrics.base import MetricScore


class Priced:
    """A fake judge: always 1.0, and each call costs one cent."""

    name = "priced"

    async def score(self, sample, output):
        usage = {
            "model": "fake-judge",
            "prompt_tokens": 100,
            "completion_tokens": 10,
            "total_tokens": 110,
            "latency_ms": 1.0,
            "cost_usd": 0.01,
            "cached": False,
        }
        return MetricScore(1.0, {"verdict": "ok"}, usage)
'''


@pytest.mark.parametrize("system", ["saved-outputs", "http"])
def test_budget_halt_exits_1_and_says_where(tmp_path: Path, system: str) -> None:
    (tmp_path / "priced_metric.py").write_text(PRICED_METRIC, encoding="utf-8")
    dataset = tmp_path / "dataset.json"
    ids = write_dataset(dataset, 40, metrics=("priced_metric:Priced",))
    outputs = tmp_path / "outputs.json"
    outputs.write_text(json.dumps({"outputs": {i: f"answer {i}" for i in ids}}), encoding="utf-8")
    args = [
        "run",
        str(dataset),
        "--budget-usd",
        "0.055",
        "--store",
        str(tmp_path / "s.db"),
        "-f",
        "json",
        "-o",
        str(tmp_path / "r.json"),
        "--also",
        f"md={tmp_path / 'r.md'}",
        "-j",
        "8",
    ]
    with SutServer(latency_s=0.002) as server:
        source = (
            ["--outputs", str(outputs)] if system == "saved-outputs" else ["--sut-url", server.url]
        )
        done = run_assay([*args, *source], cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    data = json.loads((tmp_path / "r.json").read_text())
    # Five executions fit: after five, $0.05 spent and the sixth would reach $0.06 > $0.055.
    assert data["summary"]["total_executions"] == 5
    assert data["run"]["halted"] is True
    assert data["run"]["halt_reason"] == (
        "spent $0.050 of a $0.055 budget after 5 executions; the next one was projected at $0.010"
    )
    assert data["budget"] == {
        "limit_usd": 0.055,
        "spent_usd": 0.05,
        "halted": True,
        "completed_executions": 5,
        "reason": data["run"]["halt_reason"],
    }
    assert data["usage"]["cost_usd"] == pytest.approx(0.05)
    assert (
        "**Run halted:** spent $0.050 of a $0.055 budget after 5 executions"
        in (tmp_path / "r.md").read_text()
    )
    if system == "http":
        assert server.total_calls() == 5  # nothing launched past the budget


def test_report_is_rebuilt_from_the_store(tmp_path: Path) -> None:
    """What ``evaluate`` returns for a stored run is what the store alone yields."""
    dataset_path = tmp_path / "dataset.json"
    ids = write_dataset(dataset_path, 30)
    dataset = load_dataset(dataset_path)
    outputs = {i: Output(f"answer {i}" if n % 3 else "wrong") for n, i in enumerate(ids)}
    store = RunStore(tmp_path / "s.db")
    try:
        live = run_samples(
            dataset,
            sut=SavedOutputs(outputs, "outputs.json"),
            metrics=[resolve("exact-match"), resolve("contains")],
            options=RunOptions(run_id="r1"),
            store=store,
        )
        rebuilt = report_from_store(store, "r1")
    finally:
        store.close()
    assert rebuilt.rows == live.rows
    assert rebuilt.metrics == live.metrics
    assert rebuilt.summary == live.summary
    assert rebuilt.cohorts == live.cohorts
    assert live.summary.pass_rate == pytest.approx(20 / 30)
