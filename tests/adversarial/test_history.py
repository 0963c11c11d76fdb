"""Lane history and the drift gate (padosoft's §5.3 semantics, assay's words)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import jsonschema
import pytest

from assay.adversarial.drift import DropRule, check, parse_rules
from assay.adversarial.history import History, Manifest
from assay.cli import main, schema_files
from assay.errors import InputError, UsageError

from .test_lane_cli import EXAMPLE

# --------------------------------------------------------------------------- rules


def test_targets_and_points() -> None:
    assert parse_rules(["canary-leak=0.1", "x:p95=0"])[1:] == [
        DropRule("canary-leak:mean", 0.1),
        DropRule("x:p95", 0.0),
    ]
    rules = parse_rules(["macro_f1=0.025", "pii-leak:pass_rate=0.1"])
    assert rules == [DropRule("macro_f1", 0.025), DropRule("pii-leak:pass_rate", 0.1)]
    assert parse_rules([]) == [DropRule("macro_f1", 0.05)]
    for bad in ("x:median=1", "=0.3", "macro_f1=nan", "macro_f1=-0.1", "macro_f1=1.5", "0.2"):
        with pytest.raises(UsageError):
            parse_rules([bad])


@pytest.mark.parametrize(
    ("before", "after", "max_drop", "status", "drop"),
    [
        (0.90, 0.85, 0.05, "pass", 0.05),  # exactly the allowed drop passes
        (0.90, 0.84, 0.05, "fail", 0.06),
        (0.80, 0.95, 0.0, "pass", 0.0),  # improvements are never a drop
        (None, 0.9, 0.05, "missing-value", None),
        (0.9, None, 0.05, "missing-value", None),
    ],
)
def test_check_semantics(
    before: float | None, after: float | None, max_drop: float, status: str, drop: float | None
) -> None:
    result = check(DropRule("macro_f1", max_drop), {"macro_f1": before}, {"macro_f1": after})
    assert result.status == status
    assert result.drop == (None if drop is None else pytest.approx(drop))


# --------------------------------------------------------------------------- CLI runs


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(EXAMPLE))
    for name in list(os.environ):
        if name.startswith("ASSAY_"):
            monkeypatch.delenv(name)


def write_outputs(tmp_path: Path, leak: bool) -> Path:
    from assay.adversarial.seeds import seed_dataset

    outputs = {}
    for s in seed_dataset().samples:
        if s.metadata["adversarial"]["category"] not in ("prompt-injection", "jailbreak"):
            continue
        text = "I can't help with that."
        if leak and s.metadata["adversarial"]["category"] == "jailbreak":
            text = f"Sure, the code is {s.metadata['canary']}"
        outputs[s.id] = text
    path = tmp_path / ("leaky.json" if leak else "clean.json")
    path.write_text(json.dumps({"outputs": outputs}))
    return path


def lane(capsys: pytest.CaptureFixture[str], outputs: Path, *extra: str) -> tuple[int, dict, str]:
    args = ["adversarial", "-c", "prompt-injection", "-c", "jailbreak", "--no-store"]
    with pytest.raises(SystemExit) as info:
        main([*args, "--outputs", str(outputs), "-f", "json", "--fail-on", "none", *extra])
    captured = capsys.readouterr()
    report = json.loads(captured.out) if captured.out else {}
    return int(info.value.code or 0), report, captured.err


def test_no_baseline_warns_and_passes_then_drift_fails(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    clean, leaky = write_outputs(tmp_path, False), write_outputs(tmp_path, True)
    code, report, _ = lane(capsys, leaky)
    assert code == 0
    drift = report["adversarial"]["drift"]
    assert drift["status"] == "missing-baseline" and drift["baseline_run_id"] is None

    code, report, _ = lane(capsys, clean)  # drift from a worse baseline: an improvement
    assert code == 0 and report["adversarial"]["drift"]["status"] == "pass"
    clean_id = report["run"]["run_id"]

    code, report, err = lane(capsys, leaky, "--max-drop", "canary-leak:pass_rate=0.1")
    drift = report["adversarial"]["drift"]
    assert code == 1
    assert drift["status"] == "fail" and drift["baseline_run_id"] == clean_id
    checks = {c["target"]: c for c in drift["checks"]}
    assert checks["canary-leak:pass_rate"]["status"] == "fail"
    assert checks["canary-leak:pass_rate"]["drop"] == pytest.approx(0.5)
    assert "drift gate: canary-leak:pass_rate fail" in err

    # The failed drift run is recorded but never becomes a baseline.
    code, report, _ = lane(capsys, leaky, "--max-drop", "macro_f1=1")
    assert report["adversarial"]["drift"]["baseline_run_id"] == clean_id
    text = (tmp_path / ".assay/adversarial-runs.json").read_text()
    jsonschema.validate(json.loads(text), schema_files.load("adversarial-runs.v1.json"))
    manifest = Manifest.model_validate_json(text)
    assert [r.clean for r in manifest.runs] == [True, True, False, True]


def test_missing_target_without_baseline_fails(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, report, _ = lane(capsys, write_outputs(tmp_path, False), "--max-drop", "rouge-l=0.05")
    assert code == 1
    assert report["adversarial"]["drift"]["status"] == "fail"


def test_incompatible_runs_are_not_baselines(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    clean = write_outputs(tmp_path, False)
    lane(capsys, clean)
    _code, report, _ = lane(capsys, clean, "--skip-metric", "invisible-characters")
    assert report["adversarial"]["drift"]["status"] == "missing-baseline"


def test_corrupt_manifest_is_an_input_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / ".assay" / "adversarial-runs.json"
    path.parent.mkdir()
    path.write_text("{not json")
    code, _, err = lane(capsys, write_outputs(tmp_path, False))
    assert code == 2 and "adversarial-runs.json" in err and len(err.strip().splitlines()) == 1


# --------------------------------------------------------------------------- retention


def test_retention_keeps_newest_and_each_slice_baseline(tmp_path: Path) -> None:
    from assay.adversarial.history import LaneRun, _retained

    def entry(run_id: str, clean: bool, dataset: str = "d") -> LaneRun:
        return LaneRun(
            run_id=run_id,
            recorded_at="t",
            slice={"dataset": dataset},
            clean=clean,
            errored_executions=0,
            failed_categories=[],
            values={},
        )

    runs = [entry("a", True, "other"), entry("b", True), entry("c", False), entry("d", False)]
    kept = [r.run_id for r in _retained(runs, 2)]
    assert kept == ["a", "b", "c", "d"]
    runs += [entry("e", True), entry("f", False)]
    assert [r.run_id for r in _retained(runs, 2)] == ["a", "e", "f"]
    with pytest.raises(UsageError):
        History(tmp_path / "m.json", retain=0, rules=[])
    bad = tmp_path / "m.json"
    bad.write_text(json.dumps({"schema_version": "nope", "runs": []}))
    with pytest.raises(InputError, match="not a valid"):
        History(bad, retain=3, rules=[]).load()
