"""Verdicts a team can trust: a collapse against the baseline fails, and every report format
shows the failing answer's text (and none with --redact). Driven through ``assay`` as a user
would, in a copy of examples/quickstart."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from engine.procs import run_assay

QUICKSTART = Path(__file__).resolve().parents[2] / "examples" / "quickstart"
BLANKED = [
    "capital-france",
    "capital-canada",
    "0042",
    "refund-window",
    "refund-method",
    "warranty-length",
    "shipping-free",
    "store-hours",
]


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "quickstart"
    shutil.copytree(QUICKSTART, folder)
    (folder / "pyproject.toml").write_text("[project]\nname = 'demo'\n", encoding="utf-8")
    return folder


def blank_answers(folder: Path, ids: list[str]) -> None:
    path = folder / "outputs.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    outputs = data["outputs"]
    for sample_id in ids:
        entry = outputs[sample_id]
        if isinstance(entry, dict):
            entry["output"] = ""
        else:
            outputs[sample_id] = ""
    path.write_text(json.dumps(data), encoding="utf-8")


def run(folder: Path, *args: str):  # type: ignore[no-untyped-def]
    return run_assay(["run", "dataset.yml", "--outputs", "outputs.json", *args], cwd=folder)


def test_a_collapse_against_the_baseline_fails_and_names_the_flipped_rows(project: Path) -> None:
    first = run(project, "--format", "json", "--out", "report.json", "--quiet")
    assert first.returncode == 0, first.stderr
    assert run_assay(["baseline", "set", "report.json"], cwd=project).returncode == 0
    present = set(json.loads((project / "outputs.json").read_text())["outputs"])
    blanked = [s for s in BLANKED if s in present]
    assert len(blanked) >= 5
    blank_answers(project, blanked)
    second = run(project, "--compare", "baseline", "--format", "json", "--out", "new.json")
    assert second.returncode == 1, second.stderr
    assert "went from pass to fail" in second.stderr
    gate = json.loads((project / "new.json").read_text())["gate"]
    [flips] = [f for f in gate["failures"] if f["rule"] == "max_flips"]
    named = flips["message"]
    assert sum(sample_id in named for sample_id in blanked) >= 5
    # The paired tests cannot see drops this size on 5-9 samples: said once on stderr and in
    # the report (one line for every metric), with the minimum detectable difference.
    undetectable = "exact-match pass-rate -0.6000 (5 pairs, MDD n/a)"
    assert second.stderr.count("cannot tell these changes from noise") == 1
    assert undetectable in second.stderr
    warnings = json.loads((project / "new.json").read_text())["warnings"]
    [folded] = [w for w in warnings if "cannot tell these changes from noise" in w]
    assert undetectable in folded and "minimum detectable difference" in folded
    mdd = float(folded.split("rouge-l mean -0.1587 (9 pairs, MDD ")[1].split(")")[0])
    assert mdd > 0.1587  # the drop is below what 9 pairs can detect, hence the warning


def test_max_drop_fails_on_an_absolute_drop(project: Path) -> None:
    assert run(project, "--format", "json", "--out", "report.json", "-q").returncode == 0
    assert run_assay(["baseline", "set", "report.json"], cwd=project).returncode == 0
    blank_answers(project, ["capital-france"])
    result = run(
        project, "--compare", "baseline", "--max-flips", "5",
        "--max-drop", "exact-match:pass_rate=0.05", "--format", "json", "--out", "new.json",
    )  # fmt: skip
    assert result.returncode == 1
    gate = json.loads((project / "new.json").read_text())["gate"]
    assert [f["rule"] for f in gate["failures"]] == ["max_drop"]
    assert gate["failures"][0]["subject"] == "exact-match:pass_rate"


@pytest.mark.parametrize("fmt", ["json", "md", "html", "junit"])
def test_the_failing_answer_appears_in_every_format_and_not_when_redacted(
    project: Path, fmt: str
) -> None:
    plain = run(project, "--format", fmt, "--no-store", "-q")
    assert plain.returncode == 0, plain.stderr
    assert "Sydney" in plain.stdout and "Canberra" in plain.stdout
    assert "What is the capital of Australia?" in plain.stdout
    redacted = run(project, "--format", fmt, "--no-store", "-q", "--redact")
    assert redacted.returncode == 0
    for text in ("Sydney", "Canberra", "capital of Australia"):
        assert text not in redacted.stdout
    assert "capital-australia" in redacted.stdout  # ids stay


def test_markdown_never_says_none_while_rows_fail(project: Path) -> None:
    text = run(project, "--no-store", "-q").stdout
    assert "Failures: None" not in text and "None." not in text
    assert "## Failed and errored rows" in text
    assert "14 results failed (scored below threshold) in 10 executions, 0 errored" in text


def test_a_metric_threshold_option_moves_the_pass_rule(tmp_path: Path) -> None:
    samples = [
        {"id": "a", "input": {"q": "x"}, "expected_output": "the cat sat on the mat"},
        {"id": "b", "input": {"q": "y"}, "expected_output": "a dog ran"},
    ]
    outputs = {"outputs": {"a": "the cat sat on a mat", "b": "a dog ran"}}
    (tmp_path / "o.json").write_text(json.dumps(outputs), encoding="utf-8")
    rates = {}
    for threshold in (0.5, 0.9):
        dataset = {
            "schema_version": "assay.dataset.v1",
            "name": "t",
            "metrics": [{"name": "rouge-l", "threshold": threshold}],
            "samples": samples,
        }
        (tmp_path / "d.json").write_text(json.dumps(dataset), encoding="utf-8")
        result = run_assay(
            ["run", "d.json", "--outputs", "o.json", "-f", "json", "--no-store", "-q"],
            cwd=tmp_path,
        )
        report = json.loads(result.stdout)
        [rouge] = report["metrics"]
        assert rouge["threshold"] == threshold
        rates[threshold] = rouge["pass_rate"]
        assert report["summary"]["failed_rows"] == (0 if threshold == 0.5 else 1)
    assert rates == {0.5: 1.0, 0.9: 0.5}  # rouge-l(a) = 5/6 = 0.833: passes 0.5, fails 0.9


def test_compare_scores_a_saved_outputs_file_and_leads_with_the_flips(project: Path) -> None:
    """README: `assay compare new.json report.json` with new.json a saved-outputs file."""
    assert run(project, "--format", "json", "--out", "report.json", "-q").returncode == 0
    blank_answers(project, ["capital-france", "refund-window"])
    shutil.move(project / "outputs.json", project / "new.json")
    result = run_assay(["compare", "new.json", "report.json"], cwd=project)
    assert result.returncode == 0, result.stderr
    text = result.stdout
    flips_at = text.index("FLIPPED pass->fail: ")
    assert flips_at < text.index("scope ") and "capital-france exact-match" in text
    assert "refund-window" in text[flips_at : text.index("scope ")]
    assert "incomparable" not in text and "--all shows them" in text
    every = run_assay(["compare", "new.json", "report.json", "--all"], cwd=project)
    assert "incomparable" in every.stdout and "--all shows them" not in every.stdout


def test_compare_max_flips_gates_on_rows_that_went_from_pass_to_fail(project: Path) -> None:
    assert run(project, "--format", "json", "--out", "report.json", "-q").returncode == 0
    blank_answers(project, ["capital-france", "refund-window"])  # both passed before
    assert run(project, "--format", "json", "--out", "new.json", "-q").returncode == 0
    strict = run_assay(["compare", "new.json", "report.json", "--max-flips", "0"], cwd=project)
    assert strict.returncode == 1, strict.stderr
    flipped = [line for line in strict.stdout.splitlines() if "pass-to-fail " in line]
    assert len(flipped) >= 2  # exact-match on capital-france; contains (and rouge-l) on refunds
    assert f"{len(flipped)} row(s) went from pass to fail (allowed: 0)" in strict.stderr
    allowed = ["--max-flips", str(len(flipped))]
    assert run_assay(["compare", "new.json", "report.json", *allowed], cwd=project).returncode == 0
    bad = run_assay(["compare", "new.json", "report.json", "--max-flips", "-1"], cwd=project)
    assert bad.returncode == 2 and "--max-flips must be >= 0" in bad.stderr


def test_compare_refuses_outputs_against_a_named_reference(project: Path) -> None:
    result = run_assay(["compare", "outputs.json", "baseline"], cwd=project)
    assert result.returncode == 2 and "needs a reference report file" in result.stderr
    assert "Traceback" not in result.stderr


def test_quiet_keeps_the_reasons_a_gate_failed(project: Path) -> None:
    """--quiet drops progress and the summary; a failed gate still says why on stderr."""
    passed = run(project, "-f", "json", "-o", "r.json", "-q")
    assert passed.returncode == 0 and passed.stderr == ""
    failed = run(project, "-f", "json", "-o", "r.json", "-q", "--min-macro-f1", "0.99")
    assert failed.returncode == 1
    assert failed.stderr.splitlines()[-2:] == [
        "assay: gate: macro-F1 0.7419 is below the minimum 0.9900",
        "assay: gate FAILED",
    ]
