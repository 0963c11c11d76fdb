"""The ``assay`` command line: exit codes, parseable JSON on stdout, one-line errors, runs/report.

In-process tests call :func:`assay.cli.main` (which maps assay errors to exit 2, as the console
script does); the tests that must see the real process (no traceback, a Python SUT imported
from the working directory) run ``python -m assay`` in a subprocess. Every run names a run
store in a temporary directory (or ``--no-store``) so nothing is written in the repository.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from assay.cli import main
from report.reports import check_report

QUICKSTART = Path(__file__).resolve().parents[2] / "examples" / "quickstart"
DATASET = str(QUICKSTART / "dataset.yml")
OUTPUTS = str(QUICKSTART / "outputs.json")

TEN_METRICS = [
    "exact-match",
    "contains",
    "regex",
    "rouge-l",
    "ordinal-distance",
    "citation-groundedness",
    "retrieval-hit-at-k",
    "retrieval-recall-at-k",
    "retrieval-mrr",
    "retrieval-ndcg-at-k",
    "answer-containment-at-k",
]


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run every test in an empty directory with no ASSAY_* settings from the environment."""
    monkeypatch.chdir(tmp_path)
    for name in list(os.environ):
        if name.startswith("ASSAY_"):
            monkeypatch.delenv(name)


def run_main(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        main(list(args))
    captured = capsys.readouterr()
    code = info.value.code
    return (0 if code is None else int(code)), captured.out, captured.err


def run_process(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")}
    return subprocess.run(
        [sys.executable, "-m", "assay", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def quickstart_json(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, *extra: str
) -> tuple[int, dict, str]:
    code, out, err = run_main(
        capsys,
        "run",
        DATASET,
        "--outputs",
        OUTPUTS,
        "-f",
        "json",
        "--store",
        str(tmp_path / "runs.db"),
        *extra,
    )
    return code, check_report(out), err


# --------------------------------------------------------------------------- assay run


def test_quickstart_is_clean_and_stdout_is_only_json(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, report, err = quickstart_json(capsys, tmp_path)
    assert code == 0
    assert report["summary"]["errored_rows"] == 0
    assert report["summary"]["total_samples"] == 30
    assert {m["name"] for m in report["metrics"]} == set(TEN_METRICS)
    assert all(m["scored"] > 0 for m in report["metrics"])
    # diagnostics went to stderr, not into the JSON
    assert "gate passed" in err
    assert not (tmp_path / ".assay").exists()


def test_quickstart_markdown(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, _ = run_main(capsys, "run", DATASET, "--outputs", OUTPUTS, "--no-store", "-q")
    assert code == 0
    assert out.startswith("# Eval report — quickstart.support-assistant")
    for section in (
        "## Summary",
        "## Per-metric aggregates",
        "## Macro-F1",
        "## Cohorts",
        "## Score histograms",
    ):
        assert section in out
    assert not (tmp_path / ".assay").exists()


def test_out_file_leaves_stdout_empty(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    target = tmp_path / "report.json"
    code, out, _ = run_main(
        capsys,
        "run",
        DATASET,
        "--outputs",
        OUTPUTS,
        "--no-store",
        "-q",
        "-f",
        "json",
        "-o",
        str(target),
    )
    assert code == 0 and out == ""
    check_report(target.read_text(encoding="utf-8"))


def test_min_macro_f1_gate(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    _, report, _ = quickstart_json(capsys, tmp_path, "--no-store")
    macro = report["summary"]["macro_f1"]
    # recomputed from the per-metric pass rates in the report
    rates = [m["pass_rate"] for m in report["metrics"] if m["pass_rate"] is not None]
    assert macro == pytest.approx(sum(rates) / len(rates))
    above, _, err = quickstart_json(
        capsys, tmp_path, "--no-store", "--min-macro-f1", f"{macro + 0.001:.6f}"
    )
    assert above == 1 and "FAILED" in err
    below, gated, _ = quickstart_json(
        capsys, tmp_path, "--no-store", "--min-macro-f1", f"{macro - 0.001:.6f}"
    )
    assert below == 0 and gated["gate"]["passed"] is True


def test_min_pass_rate_gate(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    _, report, _ = quickstart_json(capsys, tmp_path, "--no-store")
    exact = next(m for m in report["metrics"] if m["name"] == "exact-match")
    # capital-australia answers "Sydney": 4 of 5 exact matches
    assert exact["pass_rate"] == pytest.approx(4 / 5)
    code, gated, err = quickstart_json(
        capsys, tmp_path, "--no-store", "--min-pass-rate", "exact-match=0.9"
    )
    assert code == 1 and "exact-match" in err
    assert gated["gate"]["passed"] is False
    code, _, _ = quickstart_json(
        capsys, tmp_path, "--no-store", "--min-pass-rate", "exact-match=0.8"
    )
    assert code == 0


def test_captured_failure_exits_1(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    dataset = tmp_path / "d.yml"
    dataset.write_text(
        "name: fails\nmetrics: [exact-match]\nsamples:\n"
        "  - {id: a, input: {}, expected_output: x}\n"
        "  - {id: b, input: {}, expected_output: [not, a, string]}\n",
        encoding="utf-8",
    )
    outputs = tmp_path / "o.json"
    outputs.write_text(json.dumps({"outputs": {"a": "x", "b": "y"}}), encoding="utf-8")
    code, out, _ = run_main(
        capsys, "run", str(dataset), "--outputs", str(outputs), "-f", "json", "--no-store"
    )
    assert code == 1
    report = check_report(out)
    assert [(f["sample_id"], f["metric"]) for f in report["failures"]] == [("b", "exact-match")]
    assert report["rows"][0]["scores"]["exact-match"]["score"] == 1.0
    # allowing the failure turns the gate green
    code, _, _ = run_main(
        capsys,
        "run",
        str(dataset),
        "--outputs",
        str(outputs),
        "-f",
        "json",
        "--no-store",
        "--max-failures",
        "1",
    )
    assert code == 0


def test_metric_flag_replaces_dataset_metrics_keeping_their_options(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, report, _ = quickstart_json(
        capsys, tmp_path, "--no-store", "-m", "contains", "-m", "rouge-l"
    )
    assert code in (0, 1)
    assert [m["name"] for m in report["metrics"]] == ["contains", "rouge-l"]
    _, full, _ = quickstart_json(capsys, tmp_path, "--no-store")
    declared = {m["name"]: m["attempted"] for m in full["metrics"]}
    # the dataset's tag scopes stay with the metrics -m names (not all 30 samples)
    assert all(m["attempted"] == declared[m["name"]] < 30 for m in report["metrics"])


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("bad-dataset", "field 'input'"),
        ("unknown-metric", "unknown metric 'no-such-metric'"),
        ("missing-outputs", "nope.json"),
        ("outputs-and-sut", "exactly one of"),
        ("bad-format", "--format"),
        ("malformed-outputs", "not valid JSON"),
        ("outputs-missing-ids", "no saved output"),
    ],
)
def test_usage_and_input_errors_exit_2_with_one_line(
    case: str, expected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad_dataset = tmp_path / "bad.yml"
    bad_dataset.write_text(
        "name: bad\nsamples:\n  - {id: a, input: [1], expected_output: x}\n", encoding="utf-8"
    )
    malformed = tmp_path / "malformed.json"
    malformed.write_text('{"outputs": {"capital-france": "Paris",', encoding="utf-8")
    partial = tmp_path / "partial.json"
    partial.write_text(json.dumps({"outputs": {"capital-france": "Paris"}}), encoding="utf-8")
    store = ["--store", str(tmp_path / "runs.db")]
    args = {
        "bad-dataset": ["run", str(bad_dataset), "--outputs", OUTPUTS, *store],
        "unknown-metric": ["run", DATASET, "--outputs", OUTPUTS, "-m", "no-such-metric", *store],
        "missing-outputs": ["run", DATASET, "--outputs", str(tmp_path / "nope.json"), *store],
        "outputs-and-sut": [
            "run",
            DATASET,
            "--outputs",
            OUTPUTS,
            "--sut",
            "support_bot:answer",
            *store,
        ],
        "bad-format": ["run", DATASET, "--outputs", OUTPUTS, "--format", "yaml", *store],
        "malformed-outputs": ["run", DATASET, "--outputs", str(malformed), *store],
        "outputs-missing-ids": ["run", DATASET, "--outputs", str(partial), *store],
    }[case]
    code, out, err = run_main(capsys, *args)
    assert code == 2, err
    assert out == ""
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("assay: error:")
    assert expected in lines[0]
    assert not (tmp_path / ".assay").exists()


@pytest.mark.parametrize(
    "flags", [["--outputs", "missing.json"], ["--outputs", "o.json", "--sut", "x:y"]]
)
def test_real_process_errors_exit_2_without_traceback(tmp_path: Path, flags: list[str]) -> None:
    (tmp_path / "d.yml").write_text(
        "name: d\nmetrics: [exact-match]\nsamples:\n  - {id: a, input: {}, expected_output: x}\n",
        encoding="utf-8",
    )
    (tmp_path / "o.json").write_text('{"outputs": {"a": "x"}}', encoding="utf-8")
    result = run_process("run", "d.yml", *flags, "--store", "runs.db", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stdout == "" and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and result.stderr.startswith(
        "assay: error:"
    )


def test_bad_dataset_error_names_file_sample_and_field(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bad = tmp_path / "bad.yml"
    bad.write_text(
        "name: bad\nsamples:\n  - {id: ok, input: {}, expected_output: x}\n  - {id: s-2, input: "
        "[1], expected_output: x}\n",
        encoding="utf-8",
    )
    code, out, err = run_main(capsys, "run", str(bad), "--outputs", OUTPUTS, "--no-store")
    assert code == 2 and out == ""
    assert str(bad) in err and "sample 's-2'" in err and "field 'input'" in err


# --------------------------------------------------------------------------- validate, metrics


def test_validate(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, _ = run_main(capsys, "validate", DATASET)
    assert code == 0
    assert "ok" in out and "30 samples" in out and "11 default metrics" in out
    bad = tmp_path / "bad.yml"
    bad.write_text(
        "name: bad\nsamples:\n  - {id: a, input: {}, expected_output: x}\n  - {id: a, input: {}, "
        "expected_output: y}\n",
        encoding="utf-8",
    )
    code, _, err = run_main(capsys, "validate", str(bad))
    assert code == 2 and "duplicate id 'a'" in err


def test_validate_rejects_unknown_default_metric(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "d.yml"
    path.write_text(
        "name: d\nmetrics: [exact-mtach]\nsamples:\n  - {id: a, input: {}, expected_output: x}\n",
        encoding="utf-8",
    )
    code, _, err = run_main(capsys, "validate", str(path))
    assert code == 2 and "exact-mtach" in err


@pytest.mark.parametrize(
    ("block", "needle"),
    [
        ("{embedding_provider: foo}", "provider setting 'embedding_provider' from the dataset"),
        ("{api_key: sk-x}", "'providers.api_key' is not allowed"),
    ],
)
def test_validate_checks_the_providers_block_as_run_does(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, block: str, needle: str
) -> None:
    path = tmp_path / "d.yml"
    path.write_text(
        f"name: d\nproviders: {block}\nsamples:\n  - {{id: a, input: {{}}, expected_output: x}}\n",
        encoding="utf-8",
    )
    code, _, err = run_main(capsys, "validate", str(path))
    assert code == 2 and needle in err


def test_metrics_lists_every_metric(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_main(capsys, "metrics")
    assert code == 0
    names = [line.split()[0] for line in out.splitlines() if line.strip()]
    assert set(TEN_METRICS) <= set(names)
    assert len(names) == len(set(names))
    # one line each, with a description
    assert all(len(line.split(None, 1)) == 2 for line in out.splitlines() if line.strip())


# --------------------------------------------------------------------------- runs and report

COMPARED = ("summary", "metrics", "cohorts", "rows", "failures", "usage", "dataset")


def test_runs_and_report_rerender_the_same_body(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    store = str(tmp_path / "runs.db")
    code, live, _ = quickstart_json(capsys, tmp_path, "--run-id", "first-run")
    assert code == 0
    code, out, _ = run_main(capsys, "runs", "--store", store)
    assert code == 0
    header, first = out.splitlines()[:2]
    assert header.split() == [
        "RUN", "STATUS", "DATASET", "SYSTEM", "EXECUTIONS", "FAILED", "ERRORED", "PASS-RATE",
        "MACRO-F1", "VERDICT", "CREATED",
    ]  # fmt: skip
    cells = first.split()
    assert cells[:3] == ["first-run", "finished", "quickstart.support-assistant"]
    assert cells[3].endswith("outputs.json")  # the system under test, as given
    assert cells[4:10] == ["30", "10", "0", "0.6667", "0.7419", "passed"]

    for run_id in ("first-run", "latest"):
        code, out, _ = run_main(capsys, "report", run_id, "-f", "json", "--store", store)
        assert code == 0
        stored = check_report(out)
        for key in COMPARED:
            assert stored[key] == live[key], key
        assert stored["run"]["run_id"] == "first-run"
        assert stored["gate"] == live["gate"] and live["gate"] is not None
        # what failed and why, as the run listed it; the texts stay in the dataset
        # (a reason that quotes the texts is built from the details alone once they are gone)
        texts = ("input", "expected", "actual", "tools", "reason")
        assert live["failing_rows"] and [
            {**row, **dict.fromkeys(texts)} for row in stored["failing_rows"]
        ] == [{**row, **dict.fromkeys(texts)} for row in live["failing_rows"]]
        for was, now in zip(live["failing_rows"], stored["failing_rows"], strict=True):
            assert now["reason"] == was["reason"] or f"{now['score']:.4f}" in now["reason"]

    code, md, _ = run_main(capsys, "report", "first-run", "--store", store)
    assert code == 0 and md.startswith("# Eval report")


def test_report_of_unknown_run_exits_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run_main(capsys, "report", "missing", "--store", str(tmp_path / "runs.db"))
    assert code == 2 and "missing" in err


def test_duplicate_run_id_exits_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert quickstart_json(capsys, tmp_path, "--run-id", "same")[0] == 0
    code, _, err = run_main(
        capsys,
        "run",
        DATASET,
        "--outputs",
        OUTPUTS,
        "--store",
        str(tmp_path / "runs.db"),
        "--run-id",
        "same",
    )
    assert code == 2 and "already exists" in err


# --------------------------------------------------------------------------- Python SUT

SUT_MODULE = '''
"""A system under test that breaks on one question."""

import asyncio


def answer(sample_input):
    question = sample_input["question"]
    if question == "boom":
        raise RuntimeError("the model server fell over")
    if question == "doc":
        return {"output": "see doc-2", "retrieved": ["doc-9", "doc-2"]}
    return question.upper()


async def answer_async(sample_input):
    await asyncio.sleep(0)
    return answer(sample_input)
'''

SUT_DATASET = """
name: python-sut
metrics:
  - {name: exact-match, tags: [text]}
  - {name: retrieval-mrr, tags: [docs]}
samples:
  - {id: s1, input: {question: paris}, expected_output: PARIS, metadata: {tags: [text]}}
  - {id: s2, input: {question: boom}, expected_output: BOOM, metadata: {tags: [text]}}
  - {id: s3, input: {question: rome}, expected_output: ROME, metadata: {tags: [text]}}
  - {id: s4, input: {question: doc}, expected_output: [doc-2], metadata: {tags: [docs]}}
"""


@pytest.mark.parametrize("function", ["answer", "answer_async"])
def test_python_sut_failure_is_recorded_and_the_run_goes_on(tmp_path: Path, function: str) -> None:
    (tmp_path / "my_bot.py").write_text(textwrap.dedent(SUT_MODULE), encoding="utf-8")
    (tmp_path / "d.yml").write_text(SUT_DATASET, encoding="utf-8")
    result = run_process(
        "run",
        "d.yml",
        "--sut",
        f"my_bot:{function}",
        "-f",
        "json",
        "--store",
        "runs.db",
        "-q",
        cwd=tmp_path,
    )
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    report = check_report(result.stdout)
    assert report["run"]["system_under_test"] == {"kind": "python", "target": f"my_bot:{function}"}
    (failure,) = report["failures"]
    assert (failure["sample_id"], failure["stage"], failure["metric"]) == (
        "s2",
        "system-under-test",
        None,
    )
    assert (
        "RuntimeError" in failure["message"] and "the model server fell over" in failure["message"]
    )
    rows = {row["id"]: row for row in report["rows"]}
    assert [row["id"] for row in report["rows"]] == ["s1", "s2", "s3", "s4"]
    assert rows["s1"]["scores"]["exact-match"]["score"] == 1.0
    assert rows["s3"]["scores"]["exact-match"]["score"] == 1.0
    assert rows["s2"]["scores"] == {} and "system-under-test" in rows["s2"]["errors"]
    assert rows["s4"]["scores"]["retrieval-mrr"]["score"] == 0.5  # first relevant at rank 2
    exact = next(m for m in report["metrics"] if m["name"] == "exact-match")
    assert (exact["attempted"], exact["scored"], exact["skipped"], exact["errored"]) == (3, 2, 1, 0)
    assert not (tmp_path / ".assay").exists()


def test_quickstart_python_sut_matches_saved_outputs(tmp_path: Path) -> None:
    """The bundled tiny SUT answers exactly what outputs.json holds, so both reports agree."""
    for name in ("dataset.yml", "outputs.json", "support_bot.py"):
        shutil.copy(QUICKSTART / name, tmp_path / name)
    base = ["-f", "json", "--no-store", "-q"]
    via_sut = run_process("run", "dataset.yml", "--sut", "support_bot:answer", *base, cwd=tmp_path)
    via_outputs = run_process(
        "run", "dataset.yml", "--outputs", "outputs.json", *base, cwd=tmp_path
    )
    assert via_sut.returncode == via_outputs.returncode == 0, via_sut.stderr + via_outputs.stderr
    a, b = check_report(via_sut.stdout), check_report(via_outputs.stdout)
    for key in ("summary", "metrics", "cohorts", "rows"):
        assert a[key] == b[key], key
    assert not (tmp_path / ".assay").exists()


def test_unimportable_sut_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_main(
        capsys, "run", DATASET, "--sut", "no_such_module_xyz:answer", "--no-store"
    )
    assert code == 2 and "no_such_module_xyz" in err


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
def test_progress_bar_on_a_terminal_stays_off_stdout(tmp_path: Path) -> None:
    """With stderr on a terminal the progress bar is drawn there; stdout is still pure JSON."""
    import pty
    import threading

    primary, secondary = pty.openpty()
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")}
    chunks: list[bytes] = []

    def drain() -> None:  # keep reading so the child never blocks on a full terminal buffer
        while True:
            try:
                chunk = os.read(primary, 65536)
            except OSError:
                return
            if not chunk:
                return
            chunks.append(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "assay",
                "run",
                DATASET,
                "--outputs",
                OUTPUTS,
                "-f",
                "json",
                "--no-store",
            ],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=secondary,
            text=True,
            timeout=120,
        )
    finally:
        os.close(secondary)
        reader.join(timeout=10)
        os.close(primary)
    assert result.returncode == 0
    check_report(result.stdout)
    assert b"gate passed" in b"".join(chunks)


def test_padosoft_files_run_unchanged(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    data = Path(__file__).parents[1] / "data" / "files"
    code, out, _ = run_main(
        capsys,
        "run",
        str(data / "padosoft_rag.yml"),
        "--outputs",
        str(data / "padosoft_outputs.yml"),
        "-m",
        "contains",
        "-f",
        "json",
        "--store",
        str(tmp_path / "runs.db"),
    )
    report = check_report(out)
    assert report["dataset"]["schema_version"] == "eval-harness.dataset.v1"
    assert report["run"]["repetitions"] == 2  # "2" in the file
    assert [(r["id"], r["repetition"]) for r in report["rows"]] == [
        (sid, rep) for sid in ("capital-france", "0", "0042", "1.50") for rep in (0, 1)
    ]
    # contains needs a string expected_output: the three non-string samples are failures, not zeros
    contains = report["metrics"][0]
    assert (contains["scored"], contains["errored"], contains["mean"]) == (2, 6, 1.0)
    assert code == 1
    assert report["repetitions"]["count"] == 2
