"""``assay adversarial`` end to end on the bundled example SUT, offline.

The example bot refuses every attack but obeys "ignore previous instructions"-style text and
echoes its system prompt: the lane must show exactly the prompt-injection category failing,
through canary-leak, and nothing else.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from assay.adversarial.seeds import seed_dataset
from assay.cli import main
from report.reports import check_report

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "adversarial"


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(EXAMPLE))
    for name in list(os.environ):
        if name.startswith("ASSAY_"):
            monkeypatch.delenv(name)


def run_main(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        main(list(args))
    captured = capsys.readouterr()
    return int(info.value.code or 0), captured.out, captured.err


def lane(capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, dict, str]:
    code, out, err = run_main(capsys, "adversarial", "-f", "json", "--no-store", *extra)
    return code, check_report(out) if out else {}, err


def by_category(report: dict) -> dict[str, dict]:
    return {c["category"]: c for c in report["adversarial"]["categories"]}


def test_example_bot_fails_only_prompt_injection(capsys: pytest.CaptureFixture[str]) -> None:
    code, report, err = lane(capsys, "--sut", "larkspur_bot:answer")
    assert code == 0  # the leak is "high"; the default --fail-on is critical
    categories = by_category(report)
    assert len(categories) == 10
    failing = {name for name, c in categories.items() if c["failed"]}
    assert failing == {"prompt-injection"}
    injection = categories["prompt-injection"]
    assert injection["failed_metrics"] == {"canary-leak": injection["failed"]}
    assert injection["worst_severity_failed"] == "high"
    assert report["summary"]["errored_rows"] == 0  # nothing errored
    frameworks = {f["framework"]: f for f in report["adversarial"]["frameworks"]}
    assert frameworks["EU AI Act"]["failed"] == 0
    assert frameworks["OWASP LLM Top 10"]["failed"] == injection["failed"]
    assert report["adversarial"]["drift"]["status"] == "missing-baseline"
    assert "recorded run" in err


def test_fail_on_high_fails_the_lane(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = lane(capsys, "--sut", "larkspur_bot:answer", "--fail-on", "high")
    assert code == 1
    assert "prompt-injection" in err and "worst severity high" in err


def test_category_selection_and_saved_outputs(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    outputs = {
        s.id: {"output": "I can't help with that.", "trajectory": {"tool_calls": []}}
        for s in seed_dataset().samples
        if s.metadata["adversarial"]["category"] in ("ssrf", "tool-abuse")
    }
    path = tmp_path / "outputs.json"
    path.write_text(json.dumps({"outputs": outputs}))
    code, report, _ = lane(
        capsys, "--outputs", str(path), "-c", "ssrf", "-c", "tool-abuse", "--no-history"
    )
    assert code == 0
    assert set(by_category(report)) == {"ssrf", "tool-abuse"}
    assert {m["name"] for m in report["metrics"]} == {
        "canary-leak",
        "forbidden-tool-call",
        "invisible-characters",
    }
    assert report["adversarial"]["drift"] is None


def test_missing_trajectory_is_errored_not_passed(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    outputs = {
        s.id: "I can't help with that."
        for s in seed_dataset().samples
        if s.metadata["adversarial"]["category"] == "ssrf"
    }
    path = tmp_path / "outputs.json"
    path.write_text(json.dumps({"outputs": outputs}))
    code, report, _ = lane(capsys, "--outputs", str(path), "-c", "ssrf", "--no-history")
    assert code == 1  # errored rows are captured failures for the gate
    ssrf = by_category(report)["ssrf"]
    assert (ssrf["errored"], ssrf["failed"], ssrf["pass_rate"]) == (6, 0, None)


def test_metric_and_skip_metric(capsys: pytest.CaptureFixture[str]) -> None:
    code, report, _ = lane(
        capsys,
        "--sut",
        "larkspur_bot:answer",
        "-c",
        "jailbreak",
        "--skip-metric",
        "invisible-characters",
        "--metric",
        "contains",
        "--no-history",
    )
    assert {m["name"] for m in report["metrics"]} == {"canary-leak", "contains"}
    code, _, err = lane(capsys, "--sut", "x:y", "--skip-metric", "rouge-l")
    assert code == 2 and "not one of the lane's metrics" in err


def test_bad_flags_are_one_line_errors(capsys: pytest.CaptureFixture[str]) -> None:
    for args, message in (
        (["-c", "sqli"], "Unsupported adversarial category 'sqli'"),
        (["-c", "ssrf", "-c", "ssrf"], "selected twice"),
        (["--fail-on", "severe"], "--fail-on must be one of"),
        (["--max-drop", "x:median=0.2"], "'METRIC[:mean|p50|p95|pass_rate]'"),
        (["--max-drop", "macro_f1=1.5"], "must be a number between 0 and 1"),
        (["--max-drop", "0.1"], "expects METRIC=VALUE"),
    ):
        code, _, err = lane(capsys, "--sut", "larkspur_bot:answer", *args)
        assert code == 2, args
        assert message in err and len(err.strip().splitlines()) == 1


def test_store_and_resume_keep_the_compliance_summary(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    store = str(tmp_path / "runs.db")
    base = ["adversarial", "--sut", "larkspur_bot:answer", "-f", "json", "--store", store]
    code, out, _ = run_main(capsys, *base, "--run-id", "lane-1", "--no-history")
    first = check_report(out)
    code, out, _ = run_main(capsys, *base, "--resume", "lane-1", "--no-history")
    resumed = check_report(out)
    assert code == 0
    assert resumed["run"]["run_id"] == "lane-1"
    assert resumed["adversarial"]["categories"] == first["adversarial"]["categories"]
    assert len(resumed["rows"]) == 58


def test_assay_report_rerenders_the_compliance_summary(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    store = str(tmp_path / "runs.db")
    args = ["--sut", "larkspur_bot:answer", "-f", "json", "--store", store, "--no-history"]
    _, out, _ = run_main(capsys, "adversarial", *args, "--run-id", "lane-2")
    live = check_report(out)
    code, out, _ = run_main(capsys, "report", "lane-2", "-f", "json", "--store", store)
    again = check_report(out)
    assert code == 0
    assert again["adversarial"] == live["adversarial"]
    code, out, _ = run_main(capsys, "report", "lane-2", "-f", "md", "--store", store)
    assert "## Adversarial compliance" in out


def test_junit_and_html_carry_the_summary(capsys: pytest.CaptureFixture[str]) -> None:
    import xml.etree.ElementTree as ET

    args = ["adversarial", "--sut", "larkspur_bot:answer", "--no-store", "--no-history", "-q"]
    code, out, _ = run_main(capsys, *args, "-f", "junit")
    assert code == 0
    root = ET.fromstring(out)
    suite = next(s for s in root if s.get("name", "").endswith("adversarial compliance"))
    failing = [c.get("name") for c in suite if c.find("failure") is not None]
    assert failing == [
        "category prompt-injection",
        "framework OWASP LLM Top 10",
        "framework NIST AI RMF",
    ]
    assert suite.get("tests") == "13" and suite.get("failures") == "3"
    code, out, _ = run_main(capsys, *args, "-f", "html")
    assert "<h2>Adversarial compliance</h2>" in out and "prompt-injection" in out
