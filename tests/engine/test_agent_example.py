"""examples/agent end to end: saved trajectories, the recorder SUT, and the rows that show them."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from assay.data.dataset import Sample
from assay.data.trajectory import Trajectory, TrajectoryRecorder
from assay.engine.sut import PythonTarget
from assay.errors import SystemUnderTestError
from cli.test_cli import run_main, run_process
from report.reports import check_report

AGENT = Path(__file__).resolve().parents[2] / "examples" / "agent"
SEVEN = {
    "tool-called",
    "tool-not-called",
    "tool-called-with",
    "tool-call-order",
    "tool-call-order-exact",
    "steps-below",
    "no-pending-approvals",
    "approval-gated",
}


def test_saved_trajectories_score_and_failing_rows_list_the_tools(
    capsys: pytest.CaptureFixture[str],
) -> None:
    dataset, outputs = str(AGENT / "dataset.yml"), str(AGENT / "outputs.json")
    code, out, _ = run_main(
        capsys, "run", dataset, "--outputs", outputs, "-f", "json", "--no-store"
    )
    report = check_report(out)
    assert code == 0  # failed rows do not fail the default gate; errored rows would
    metrics = {m["name"]: m for m in report["metrics"]}
    assert set(metrics) == SEVEN
    assert all(m["errored"] == 0 for m in metrics.values())
    # hand-worked from outputs.json: change-address called one of two forbidden tools
    assert metrics["tool-not-called"]["mean"] == pytest.approx((1 + 1 + 1 + 0.5 + 1) / 5)
    assert metrics["tool-call-order"]["pass_rate"] == 0.8  # refund-without-approval only
    assert metrics["tool-call-order-exact"]["pass_rate"] == 0.4
    rows = {(r["sample_id"], r["metric"]): r for r in report["failing_rows"]}
    order = rows[("refund-without-approval", "tool-call-order")]
    assert order["tools"] == ["issue_refund", "lookup_order"]
    assert set(rows) >= {
        ("change-address", "steps-below"),
        ("refund-damaged", "tool-call-order-exact"),
    }


def test_the_recorder_agent_passes_every_metric() -> None:
    done = run_process("run", "dataset.yml", "--sut", "agent:answer", "--no-store", cwd=AGENT)
    assert done.returncode == 0, done.stderr
    assert "0 failed, 0 errored" in done.stderr


def ask(function: Any) -> Any:
    sample = Sample(id="s", input={"question": "q"}, expected_output="")
    return asyncio.run(PythonTarget(function).answer(sample))


def test_python_sut_recorder_and_returned_trajectories() -> None:
    def recording(question: dict[str, Any], recorder: TrajectoryRecorder) -> str:
        recorder.record("search", {"q": question["question"]})
        return "ok"

    assert ask(recording).trajectory["tool_calls"] == [{"name": "search", "arguments": {"q": "q"}}]

    def silent(question: dict[str, Any], recorder: TrajectoryRecorder) -> str:
        return "ok"

    assert ask(silent).trajectory is None  # nothing recorded: the metrics will say so

    def returning(question: dict[str, Any]) -> dict[str, Any]:
        return {"output": "ok", "trajectory": Trajectory(steps=3)}

    assert ask(returning).trajectory == {"tool_calls": [], "steps": 3, "pending_approvals": 0}

    def bad(question: dict[str, Any]) -> dict[str, Any]:
        return {"output": "ok", "trajectory": ["search"]}

    with pytest.raises(SystemUnderTestError, match="'trajectory' that is list"):
        ask(bad)
    json.dumps(ask(recording).trajectory)  # JSON-safe for the run store
