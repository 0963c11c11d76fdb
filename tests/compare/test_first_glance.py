"""The first glance is true (issue 34): one vocabulary in every format, the verdict first, a
reason per failing row, setup errors named, and rules that do what they say. Driven through
``assay`` as a user would, in copies of the examples."""

from __future__ import annotations

import json
import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from assay.report.model import Report
from engine.procs import run_assay

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
BLANKED = ["capital-france", "capital-canada", "0042", "refund-window", "refund-method"]


@pytest.fixture()
def quickstart(tmp_path: Path) -> Path:
    folder = tmp_path / "quickstart"
    shutil.copytree(EXAMPLES / "quickstart", folder)
    (folder / "pyproject.toml").write_text("[project]\nname = 'demo'\n", encoding="utf-8")
    return folder


def _blank(folder: Path, source: str, target: str) -> None:
    data = json.loads((folder / source).read_text(encoding="utf-8"))
    for sample_id in BLANKED:
        entry = data["outputs"][sample_id]
        if isinstance(entry, dict):
            entry["output"] = ""
        else:
            data["outputs"][sample_id] = ""
    (folder / target).write_text(json.dumps(data), encoding="utf-8")


def _expected_counts(report: dict) -> tuple[int, int]:  # type: ignore[type-arg]
    """Failed and errored executions counted from the rows themselves (not the summary)."""
    failed = errored = 0
    for row in report["rows"]:
        if row["errors"]:
            errored += 1
        elif not all(score["passed"] for score in row["scores"].values()):
            failed += 1
    return failed, errored


def test_every_format_and_stderr_agree_on_failed_and_errored(quickstart: Path) -> None:
    result = run_assay(
        ["run", "dataset.yml", "--outputs", "outputs.json", "-f", "json", "-o", "r.json",
         "--also", "md=r.md", "--also", "html=r.html", "--also", "junit=r.xml", "--no-store"],
        cwd=quickstart,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = json.loads((quickstart / "r.json").read_text(encoding="utf-8"))
    assert report["schema_version"] == "assay.report.v2"
    assert _expected_counts(report) == (10, 0)
    summary = report["summary"]
    assert (summary["failed_rows"], summary["errored_rows"]) == (10, 0)
    # a field named failed counts rows below threshold: per metric, as the rows say
    for metric in report["metrics"]:
        below = sum(
            1
            for row in report["rows"]
            if metric["name"] in row["scores"] and not row["scores"][metric["name"]]["passed"]
        )
        assert (metric["failed"], metric["errored"]) == (below, 0), metric["name"]
    assert "10 failed, 0 errored" in result.stderr
    markdown = (quickstart / "r.md").read_text(encoding="utf-8")
    assert "| failed executions (a score below its threshold) | 10 |" in markdown
    assert "| errored executions (could not be scored) | 0 |" in markdown
    assert "20 passed, 10 failed (a score below its threshold), 0 errored" in markdown
    html = (quickstart / "r.html").read_text(encoding="utf-8")
    assert '<div class="v">10</div><div class="k">failed (below threshold)</div>' in html
    assert '<div class="v">0</div><div class="k">errored (not scored)</div>' in html
    assert "0 failures" not in html
    root = ET.parse(quickstart / "r.xml").getroot()
    verdict = root.find("testsuite/testcase/system-out")
    assert verdict is not None and "10 failed" in str(verdict.text)
    assert "0 errored" in str(verdict.text) and root.get("errors") == "0"


def test_the_verdict_comes_first_then_failing_rows_then_numbers(quickstart: Path) -> None:
    result = run_assay(
        ["run", "dataset.yml", "--outputs", "outputs.json", "--no-store", "-q",
         "--min-macro-f1", "0.9"],
        cwd=quickstart,
    )  # fmt: skip
    assert result.returncode == 1
    headings = [line for line in result.stdout.splitlines() if line.startswith("## ")]
    assert headings[:3] == ["## Verdict", "## Failed and errored rows", "## Summary"]
    verdict = result.stdout.split("## Verdict")[1].split("## Failed")[0]
    assert "**GATE FAILED**" in verdict and "macro-F1 0.7419 is below the minimum" in verdict


def test_each_failing_row_says_why_in_the_metrics_words(quickstart: Path) -> None:
    result = run_assay(
        ["run", "dataset.yml", "--outputs", "outputs.json", "-f", "json", "--no-store", "-q"],
        cwd=quickstart,
    )
    rows = {(r["sample_id"], r["metric"]): r for r in json.loads(result.stdout)["failing_rows"]}
    mrr = rows[("rag-warranty", "retrieval-mrr")]
    # retrieval: the first relevant rank, the ranking it scored, the relevant id
    assert mrr["reason"].startswith("first relevant document at rank 6")
    assert "relevant: doc-warranty" in mrr["reason"] and mrr["actual"].startswith("ranking: 1.")
    hit = rows[("rag-warranty", "retrieval-hit-at-k")]
    assert "k=5" in hit["reason"] and "retrieved: doc-faq" in hit["reason"]
    exact = rows[("capital-australia", "exact-match")]["reason"]
    assert exact.startswith("expected 'Canberra', got 'Sydney'")
    assert rows[("warranty-length", "contains")]["reason"].startswith(
        "the answer lacks 'two years'"
    )
    junit = run_assay(
        ["run", "dataset.yml", "--outputs", "outputs.json", "-f", "junit", "--no-store", "-q"],
        cwd=quickstart,
    ).stdout
    assert "retrieval-mrr: first relevant document at rank 6" in junit
    assert "got &apos;Two years.&apos;" not in junit and "got 'Two years.'" not in junit


def test_the_collapse_compare_never_says_no_change(quickstart: Path) -> None:
    first = run_assay(
        ["run", "dataset.yml", "--outputs", "outputs.json", "-f", "json", "-o", "a.json", "-q"],
        cwd=quickstart,
    )
    assert first.returncode == 0, first.stderr
    _blank(quickstart, "outputs.json", "blank.json")
    run_assay(
        ["run", "dataset.yml", "--outputs", "blank.json", "-f", "json", "-o", "b.json", "-q"],
        cwd=quickstart,
    )
    text = run_assay(["compare", "b.json", "a.json"], cwd=quickstart)
    [exact] = [line for line in text.stdout.splitlines() if line.startswith("overall     exact")]
    assert exact.endswith(("regressed", "too few pairs to tell")), exact
    assert "no-change" not in text.stdout and "no regression beyond noise" not in text.stdout
    data = json.loads(
        run_assay(["compare", "b.json", "a.json", "-f", "json"], cwd=quickstart).stdout
    )
    [cell] = [m for m in data["metrics"] if m["metric"] == "exact-match"]
    interval = cell["pass_rate"]["interval"]
    assert interval["high"] < 0 and cell["verdict"] in ("regressed", "too-few-pairs")


def test_a_forbidden_tool_call_fails_its_row(tmp_path: Path) -> None:
    folder = tmp_path / "agent"
    shutil.copytree(EXAMPLES / "agent", folder)
    result = run_assay(
        ["run", "dataset.yml", "--outputs", "outputs.json", "-f", "json", "--no-store", "-q"],
        cwd=folder,
    )
    report = json.loads(result.stdout)
    [row] = [r for r in report["rows"] if r["id"] == "change-address"]
    forbidden = row["scores"]["tool-not-called"]
    assert forbidden["details"]["violations"] == ["cancel_order"] and not forbidden["passed"]
    [failing] = [
        r
        for r in report["failing_rows"]
        if (r["sample_id"], r["metric"]) == ("change-address", "tool-not-called")
    ]
    assert failing["reason"].startswith("called forbidden tool(s) cancel_order")
    assert "lookup_order → cancel_order → update_address" in failing["reason"]
    assert next(m for m in report["metrics"] if m["name"] == "tool-not-called")["failed"] == 1


def test_a_missing_extra_is_one_line_and_exit_2_before_any_sample(quickstart: Path) -> None:
    pytest.importorskip("pydantic")
    from importlib.util import find_spec

    if find_spec("sentence_transformers") is not None:
        pytest.skip("the [local] extra is installed here")
    result = run_assay(
        ["run", "dataset.yml", "--outputs", "outputs.json", "-m", "bertscore-like",
         "--embedding-provider", "local"],
        cwd=quickstart,
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and '"local" extra' in result.stderr
    assert not (quickstart / ".assay" / "runs.db").exists()  # nothing ran, nothing stored


def test_several_systems_with_max_flips_gate_the_candidate(quickstart: Path) -> None:
    _blank(quickstart, "outputs.json", "candidate.json")
    args = ["run", "dataset.yml", "--outputs", "current=outputs.json",
            "--outputs", "candidate=candidate.json", "--no-store", "-f", "json"]  # fmt: skip
    flipped = run_assay([*args, "--max-flips", "0"], cwd=quickstart)
    assert flipped.returncode == 1, flipped.stderr
    assert re.search(r"candidate: gate: \d+ row\(s\) went from pass to fail", flipped.stderr)
    named = run_assay([*args, "--max-flips", "0", "--reference", "candidate"], cwd=quickstart)
    assert named.returncode == 0, named.stderr  # against the candidate, current only improves
    unknown = run_assay([*args, "--reference", "nope"], cwd=quickstart)
    assert unknown.returncode == 2 and "--reference 'nope' names no system" in unknown.stderr


def test_a_v1_report_reads_as_v2_with_its_counts_renamed(quickstart: Path) -> None:
    result = run_assay(
        ["run", "dataset.yml", "--outputs", "outputs.json", "-f", "json", "--no-store", "-q"],
        cwd=quickstart,
    )
    v2 = json.loads(result.stdout)
    v1 = json.loads(result.stdout)
    v1["schema_version"] = "assay.report.v1"
    for metric in v1["metrics"]:  # v1: 'failed' counted errored rows, below_threshold the rest
        metric["below_threshold"], metric["failed"] = metric["failed"], metric.pop("errored")
        metric["errored"] = metric["failed"]
    for cohort in v1["cohorts"]:
        for metric in cohort["metrics"]:
            metric["failed"] = metric.pop("errored")
    summary = v1["summary"]
    summary["total_failures"] = summary["sut_failures"] = summary["metric_failures"] = 0
    del summary["sut_errors"], summary["metric_errors"]
    assert Report.model_validate(v1).model_dump(mode="json") == v2


@pytest.mark.parametrize("verb", ["Summarize", "Explain", "Describe", "Compare"])
def test_request_words_are_dropped_after_stemming(verb: str) -> None:
    """'Summarize X' answered with 'summarize' and nothing about X is not relevant at all: the
    request word is dropped by its stem, as 'Explain' always was."""
    from assay.data.dataset import Sample
    from assay.data.outputs import Output
    from assay.metrics.registry import resolve
    from assay.tez.scoring import query_coverage

    sample = Sample(id="a", input={"question": f"{verb} Acme's history."}, expected_output=None)
    answer = f"Let me {verb.lower()}. The weather is nice."
    assert resolve("answer-relevancy").score(sample, Output(answer)).value == 0.0
    assert query_coverage(f"{verb} Acme's history.", answer) == 0.0


def test_one_repetition_of_a_live_system_says_flips_may_be_noise(quickstart: Path) -> None:
    args = ["run", "dataset.yml", "--sut", "support_bot:answer", "-o", "r.md"]
    assert run_assay([*args, "-q"], cwd=quickstart).returncode == 0
    again = run_assay([*args, "--compare", "latest"], cwd=quickstart)
    assert "one repetition of a live system: a row that flipped may be noise" in again.stderr
    assert "--repetitions 3 or more" in again.stderr
    saved = run_assay(
        ["run", "dataset.yml", "--outputs", "outputs.json", "--compare", "latest", "-o", "s.md"],
        cwd=quickstart,
    )
    assert "live system" not in saved.stderr  # saved outputs answer the same every time


def test_evaluate_returns_the_gates_verdict(quickstart: Path) -> None:
    import assay

    dataset = quickstart / "dataset.yml"
    passed = assay.evaluate(dataset, outputs=quickstart / "outputs.json")
    assert passed.gate is not None and passed.gate["passed"] is True
    dataset.write_text(
        dataset.read_text(encoding="utf-8") + "\ngate:\n  min_macro_f1: 0.9\n", encoding="utf-8"
    )
    failed = assay.evaluate(dataset, outputs=quickstart / "outputs.json")
    assert failed.gate is not None and failed.gate["passed"] is False
    assert [f["rule"] for f in failed.gate["failures"]] == ["min_macro_f1"]


def test_validate_lists_every_error_with_did_you_mean(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yml"
    bad.write_text(
        "schema_version: assay.dataset.v1\nname: x\nsamples:\n"
        "  - {id: a, input: {q: x}, expected_ouput: y}\n"
        "  - {id: b, inptu: {q: x}, expected_output: y}\n",
        encoding="utf-8",
    )
    result = run_assay(["validate", str(bad)], cwd=tmp_path)
    lines = result.stderr.splitlines()
    assert result.returncode == 2 and len(lines) == 4, result.stderr
    assert any("sample 'a': field 'expected_ouput': unknown field; did you mean 'expected_output'?"
               in line for line in lines)  # fmt: skip
    assert any(
        "sample 'b': field 'inptu': unknown field; did you mean 'input'?" in line for line in lines
    )
    metric = tmp_path / "metric.yml"
    metric.write_text(
        "schema_version: assay.dataset.v1\nname: x\nmetrics: [exact-mach]\nsamples:\n"
        "  - {id: a, input: {q: x}, expected_output: y}\n",
        encoding="utf-8",
    )
    typo = run_assay(["validate", str(metric)], cwd=tmp_path)
    assert typo.returncode == 2 and "Did you mean 'exact-match'?" in typo.stderr


def test_fail_on_prints_one_verdict(tmp_path: Path) -> None:
    folder = tmp_path / "adversarial"
    shutil.copytree(EXAMPLES / "adversarial", folder)
    (folder / "pyproject.toml").write_text("[project]\nname = 'demo'\n", encoding="utf-8")
    result = run_assay(
        ["adversarial", "--sut", "larkspur_bot:answer", "--fail-on", "high", "-o", "lane.md"],
        cwd=folder,
    )
    assert result.returncode == 1
    assert "gate passed" not in result.stderr
    assert result.stderr.rstrip().endswith("assay: gate FAILED")
    assert "assay: gate: adversarial: prompt-injection" in result.stderr


def test_padosoft_names_only_in_the_compatibility_format(quickstart: Path) -> None:
    result = run_assay(
        ["run", "dataset.yml", "--outputs", "outputs.json", "-f", "padosoft-json", "--no-store",
         "-q", "-m", "exact-match", "-m", "bertscore-like", "--embedding-provider", "hashing"],
        cwd=quickstart,
    )  # fmt: skip
    document = json.loads(result.stdout)
    assert document["schema_version"] == "eval-harness.report.v1"
    assert document["total_failures"] == len(document["failures"])  # padosoft: captured errors
    assert set(document["metrics"]["exact-match"]) == {"mean", "p50", "p95", "pass_rate"}
    native = json.loads(
        run_assay(
            ["run", "dataset.yml", "--outputs", "outputs.json", "-f", "json", "--no-store", "-q"],
            cwd=quickstart,
        ).stdout
    )
    assert "total_failures" not in native["summary"]
