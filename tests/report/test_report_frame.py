"""``Report.to_dataframe()``: one row per (execution, metric), equal to the CLI's JSON report."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

import assay
from assay.errors import UsageError
from engine.procs import SRC, run_assay

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "quickstart"

SUT = """
KNOWN = {}


def answer(sample_input):
    question = str(sample_input)
    if "Japan" in question:
        raise RuntimeError("the model timed out")
    return KNOWN.get(question, "")
"""


def _project(tmp_path: Path) -> Path:
    """The quickstart plus a Python system that answers from its outputs and fails on Japan."""
    root = tmp_path / "qs"
    shutil.copytree(EXAMPLE, root)
    dataset = assay.load_dataset(root / "dataset.yml")
    saved = json.loads((root / "outputs.json").read_text(encoding="utf-8"))["outputs"]
    known = {str(s.input): saved[s.id] for s in dataset.samples if isinstance(saved.get(s.id), str)}
    source = SUT.replace("KNOWN = {}", f"KNOWN = {known!r}")
    (root / "qs_system.py").write_text(source, encoding="utf-8")
    return root


def _expected_rows(report: dict[str, Any]) -> list[tuple[Any, ...]]:
    """The frame's content computed straight from the JSON document."""
    thresholds = {m["name"]: m["threshold"] for m in report["metrics"]}
    rows = []
    for row in report["rows"]:
        for metric, scored in row["scores"].items():
            status = "passed" if scored["score"] >= thresholds[metric] else "failed"
            rows.append(
                (
                    row["id"],
                    row["repetition"],
                    tuple(row["tags"]),
                    metric,
                    status,
                    scored["score"],
                    thresholds[metric],
                )
            )
        for metric, _message in row["errors"].items():
            rows.append(
                (
                    row["id"],
                    row["repetition"],
                    tuple(row["tags"]),
                    metric,
                    "errored",
                    None,
                    thresholds.get(metric),
                )
            )
    return sorted(rows, key=repr)


def _frame_rows(frame: Any) -> list[tuple[Any, ...]]:
    rows = []
    for record in frame.to_dict("records"):
        score = None if record["score"] != record["score"] else record["score"]
        threshold = None if record["threshold"] != record["threshold"] else record["threshold"]
        rows.append(
            (
                record["sample_id"],
                record["repetition"],
                tuple(record["tags"]),
                record["metric"],
                record["status"],
                score,
                threshold,
            )
        )
    return sorted(rows, key=repr)


def test_dataframe_of_the_api_report_equals_the_cli_json_rows(tmp_path: Path) -> None:
    pytest.importorskip("pandas")
    root = _project(tmp_path)
    args = ["run", "dataset.yml", "--sut", "qs_system:answer", "-f", "json", "-o", "cli.json"]
    path = os.pathsep.join([str(SRC), str(root)])
    done = run_assay([*args, "-q"], cwd=root, env={"PYTHONPATH": path})
    # The errored row fails the default gate (exit 1); the report is written all the same.
    assert done.returncode == 1, done.stderr
    cli = json.loads((root / "cli.json").read_text(encoding="utf-8"))
    assert cli["summary"]["errored_rows"] >= 1 and cli["summary"]["failed_rows"] > 0

    import sys

    sys.path.insert(0, str(root))
    try:
        report = assay.evaluate(root / "dataset.yml", sut="qs_system:answer")
    finally:
        sys.path.remove(str(root))
    frame = report.to_dataframe()
    assert list(frame.columns) == [
        "sample_id",
        "repetition",
        "tags",
        "metric",
        "status",
        "score",
        "threshold",
        "reason",
    ]
    assert _frame_rows(frame) == _expected_rows(cli)
    errored = frame[frame["metric"] == "system-under-test"]
    assert errored["sample_id"].tolist() == ["capital-japan"]
    assert errored["status"].tolist() == ["errored"]
    assert "timed out" in errored["reason"].iloc[0]
    assert frame[frame["status"] == "errored"]["score"].isna().all()
    # The failed count is the summary's number, and the frame of the JSON document is the same.
    failed = frame[frame["status"] == "failed"]
    errored_ids = set(frame[frame["status"] == "errored"]["sample_id"])
    assert len(set(failed["sample_id"]) - errored_ids) == cli["summary"]["failed_rows"]
    assert len(errored_ids) == cli["summary"]["errored_rows"]
    again = assay.Report.model_validate(cli).to_dataframe()
    assert _frame_rows(again) == _frame_rows(frame)


def test_thresholds_of_the_dataset_decide_the_status(tmp_path: Path) -> None:
    pytest.importorskip("pandas")
    report = assay.evaluate(
        EXAMPLE / "dataset.yml",
        outputs=EXAMPLE / "outputs.json",
        metrics=[{"name": "rouge-l", "threshold": 0.9}],
    )
    frame = report.to_dataframe()
    assert set(frame["metric"]) == {"rouge-l"}
    assert set(frame["threshold"]) == {0.9}
    below = frame[frame["score"] < 0.9]
    assert len(below) > 0 and set(below["status"]) == {"failed"}
    assert set(frame[frame["score"] >= 0.9]["status"]) <= {"passed"}


def test_a_report_without_rows_is_refused_with_a_clear_message() -> None:
    pytest.importorskip("pandas")
    report = assay.evaluate(EXAMPLE / "dataset.yml", outputs=EXAMPLE / "outputs.json")
    empty = report.model_copy(update={"rows": []})
    with pytest.raises(UsageError, match="no per-execution rows"):
        empty.to_dataframe()


def test_one_row_per_repetition() -> None:
    pytest.importorskip("pandas")
    report = assay.evaluate(
        EXAMPLE / "dataset.yml", sut=lambda _input: "Paris", metrics=["exact-match"], repetitions=2
    )
    frame = report.to_dataframe()
    dataset = assay.load_dataset(EXAMPLE / "dataset.yml")
    scoped = [s.id for s in dataset.samples if {"geography", "ids"} & set(s.tags)]
    assert sorted(frame["sample_id"]) == sorted(scoped * 2)
    assert frame.groupby("sample_id")["repetition"].apply(sorted).tolist() == [[0, 1]] * len(scoped)
    # "Paris" is the expected answer of capital-france only.
    passed = frame[frame["status"] == "passed"]
    assert set(passed["sample_id"]) == {"capital-france"} and len(passed) == 2
