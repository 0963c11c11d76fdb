"""Several systems in one `assay run`: the quickstart with two saved-outputs files, and two
Python systems. The pairwise statistics must be the ones `assay compare` gives the same runs."""

from __future__ import annotations

import json
import os
from pathlib import Path

import jsonschema
import pytest

from assay.cli import main
from assay.cli.schema_files import load

QUICKSTART = Path(__file__).resolve().parents[2] / "examples" / "quickstart"


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for name in list(os.environ):
        if name.startswith("ASSAY_"):
            monkeypatch.delenv(name)


def run_main(capsys, *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        main(list(args))
    captured = capsys.readouterr()
    code = info.value.code
    return (0 if code is None else int(code)), captured.out, captured.err


@pytest.fixture
def two_files(tmp_path: Path) -> tuple[Path, Path]:
    """v1: the quickstart's answers; v2: Australia fixed, Japan broken (one flip each way)."""
    saved = json.loads((QUICKSTART / "outputs.json").read_text())
    v1 = tmp_path / "v1.json"
    v1.write_text(json.dumps(saved))
    saved["outputs"]["capital-australia"] = "Canberra"
    saved["outputs"]["capital-japan"] = "Kyoto"
    v2 = tmp_path / "v2.json"
    v2.write_text(json.dumps(saved))
    return v1, v2


def test_two_saved_outputs_files_one_report_side_by_side(capsys, tmp_path, two_files):
    v1, v2 = two_files
    dataset = str(QUICKSTART / "dataset.yml")
    code, out, err = run_main(
        capsys,
        "run",
        dataset,
        "--outputs",
        f"old={v1}",
        "--outputs",
        f"new={v2}",
        "-f",
        "json",
        "--also",
        f"md={tmp_path / 'r.md'}",
        "--also",
        f"html={tmp_path / 'r.html'}",
    )
    assert code == 0, err
    # as one run's line
    assert "assay: old: pass rate 0.6667, macro-F1 0.7419, 10 failed, 0 errored, gate passed" in err
    document = json.loads(out)
    jsonschema.validate(document, load("systems.v1.json"))
    assert [s["name"] for s in document["systems"]] == ["old", "new"]
    pair = document["comparisons"][0]
    assert (pair["reference"], pair["current"]) == ("old", "new")
    flips = {(f["sample_id"], f["direction"]) for f in pair["comparison"]["flips"]}
    assert flips == {("capital-japan", "pass-to-fail"), ("capital-australia", "fail-to-pass")}

    # the same statistics as `assay compare` on the two stored runs
    runs = [s["report"]["run"]["run_id"] for s in document["systems"]]
    code, compared, _ = run_main(capsys, "compare", runs[1], runs[0], "-f", "json")
    assert code == 0
    assert json.loads(compared)["metrics"] == pair["comparison"]["metrics"]

    # each system's report is what a single-system run of its file reports
    code, single, _ = run_main(capsys, "run", dataset, "--outputs", str(v2), "-f", "json")
    alone, together = json.loads(single), document["systems"][1]["report"]
    assert alone["metrics"] == together["metrics"] and alone["summary"] == together["summary"]

    markdown = (tmp_path / "r.md").read_text()
    assert "|  | old | new |" in markdown
    assert "- capital-japan · exact-match: pass → fail (1.000 → 0.000)" in markdown
    html = (tmp_path / "r.html").read_text()
    assert "<th>old</th><th>new</th>" in html and "<script" not in html


def test_two_python_systems_and_the_gate_of_each(capsys, tmp_path):
    (tmp_path / "bots.py").write_text(
        "def good(inp):\n    return 'Paris'\n\ndef bad(inp):\n    return 'Lyon'\n"
    )
    (tmp_path / "d.yml").write_text(
        "name: tiny\nmetrics: [exact-match]\nsamples:\n"
        "  - {id: a, input: {q: x}, expected_output: Paris}\n"
        "  - {id: b, input: {q: y}, expected_output: Paris}\n"
    )
    code, out, err = run_main(
        capsys,
        "run",
        "d.yml",
        "--sut",
        "g=bots:good",
        "--sut",
        "b=bots:bad",
        "--min-pass-rate",
        "exact-match=1.0",
        "-f",
        "md",
    )
    assert code == 1  # the gate failed for system b
    assert "gate FAILED" in err and "assay: g:" in err
    assert "| gate | passed | FAILED |" in out
    assert "| exact-match | 2 | 1.000 | 0.000 | -1.000" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--outputs", "V1", "--outputs", "V2"], "several systems need names"),
        (["--outputs", "x=V1", "--outputs", "x=V2"], "system names must be unique"),
        (["--outputs", "a b=V1", "--outputs", "c=V2"], "system name 'a b'"),
        (["--outputs", "a=V1", "--outputs", "b=V2", "--compare", "latest"], "--compare works"),
        (["--outputs", "a=V1", "--outputs", "b=V2", "-f", "junit"], "JUnit output needs one"),
        (["--outputs", "a=V1", "--outputs", "b=V2", "--sut-url", "http://x"], "--sut-url works"),
    ],
)
def test_usage_errors_are_one_line_exit_2(capsys, two_files, args, message):
    v1, v2 = two_files
    args = [a.replace("V1", str(v1)).replace("V2", str(v2)) for a in args]
    code, _, err = run_main(capsys, "run", str(QUICKSTART / "dataset.yml"), *args)
    assert code == 2
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_one_named_system_is_a_plain_run(capsys, two_files):
    v1, _ = two_files
    code, out, _ = run_main(
        capsys, "run", str(QUICKSTART / "dataset.yml"), "--outputs", f"only={v1}", "-f", "json"
    )
    assert code == 0
    assert json.loads(out)["schema_version"] == "assay.report.v2"
