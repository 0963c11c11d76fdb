"""Inputs a fuzzing pass found crashing ``assay`` or misbehaving: each ends as exit 2 with one
line, or as the sample's recorded failure, never as a traceback or an exit code of its own."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import textwrap
from pathlib import Path

import pytest

from engine.procs import run_assay

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "examples" / "quickstart"


def one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    """The single error line of a finished command that exited 2 (no traceback)."""
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("assay: error: "), lines
    return str(lines[0])


def small_run(tmp_path: Path) -> list[str]:
    (tmp_path / "d.json").write_text(
        json.dumps(
            {"name": "t", "samples": [{"id": "s1", "input": {"q": "x"}, "expected_output": "a"}]}
        ),
        encoding="utf-8",
    )
    (tmp_path / "o.json").write_text(json.dumps({"outputs": {"s1": "a"}}), encoding="utf-8")
    return ["run", "d.json", "--outputs", "o.json", "--no-store", "-q", "-o", "r.json"]


def quickstart(tmp_path: Path, *options: str) -> None:
    """The bundled quickstart example run in ``tmp_path`` with ``options`` (it must finish)."""
    example = [
        "run",
        str(QUICKSTART / "dataset.yml"),
        "--outputs",
        str(QUICKSTART / "outputs.json"),
    ]
    made = run_assay([*example, "-q", *options], cwd=tmp_path)
    assert made.returncode in (0, 1), made.stderr


def test_an_empty_or_relative_metric_module_is_a_config_error(tmp_path: Path) -> None:
    for name in (":", ":X", ".:X", "..a:X"):
        line = one_line_error(run_assay([*small_run(tmp_path), "-m", name], cwd=tmp_path))
        assert f"metric '{name}': cannot import module" in line


def test_a_config_file_that_is_not_utf8_is_named(tmp_path: Path) -> None:
    (tmp_path / "assay.toml").write_bytes(b"[gate]\nmin_macro_f1 = 0.5 # \xff\n")
    line = one_line_error(run_assay([*small_run(tmp_path), "-m", "exact-match"], cwd=tmp_path))
    assert "assay.toml: not valid UTF-8" in line


def test_sys_exit_in_a_system_under_test_or_a_metric_is_that_sample_s_failure(
    tmp_path: Path,
) -> None:
    (tmp_path / "exits.py").write_text(
        textwrap.dedent(
            """
            import sys

            def answer(inp):
                sys.exit(3)

            class ExitMetric:
                name = "exit-metric"

                def score(self, sample, output):
                    raise SystemExit(5)
            """
        ),
        encoding="utf-8",
    )
    args = small_run(tmp_path)
    env = {"PYTHONPATH": str(tmp_path)}
    sut = run_assay(
        [*args[:2], "--sut", "exits:answer", *args[4:], "-m", "exact-match", "-f", "json"],
        cwd=tmp_path,
        env=env,
    )
    assert sut.returncode == 1, sut.stderr  # the gate fails on the errored row; no exit 3
    failures = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))["failures"]
    assert failures[0]["message"] == "raised SystemExit: 3"
    metric = run_assay([*args, "-m", "exits:ExitMetric", "-f", "json"], cwd=tmp_path, env=env)
    assert metric.returncode == 1, metric.stderr
    failures = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))["failures"]
    assert failures[0]["message"] == "metric 'exit-metric' crashed: SystemExit: 5"


def test_a_damaged_run_store_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    """A row cut short ends as exit 2 with one line naming the store, run and sample."""
    store = tmp_path / "s.db"
    quickstart(tmp_path, "--store", str(store), "--run-id", "r1", "-o", "r.md")
    with sqlite3.connect(store) as connection:
        connection.execute("update chunks set rows = substr(rows, 1, 100)")
    line = one_line_error(run_assay(["report", "r1", "--store", str(store)], cwd=tmp_path))
    assert f"run store {store}: run 'r1': the stored execution of sample 'capital-france'" in line
    assert "is damaged" in line


@pytest.mark.parametrize(
    ("edit", "damaged"),
    [
        ("update runs set config = 'garbage'", "the stored configuration (runs.config)"),
        ("update runs set config = '[1, 2]'", "the stored configuration (runs.config)"),
        ("""update runs set config = '{"metrics": 5}'""", "(key 'metrics': "),
        ("""update runs set config = '{"repetitions": "x"}'""", "(key 'repetitions': "),
        ("update runs set created_at = 'yesterday'", "the stored run record (runs)"),
        ("update chunks set keys = '[1]'", "a chunk of stored executions"),
        ("update chunks set rows = 'garbage'", "a chunk of stored executions"),
        (
            "update chunks set rows = "
            """cast(replace(rows, '"score":1.0', '"score":"x"') as blob)""",
            "a score of 'x' is not a number in [0, 1]",
        ),
        ("insert into compliance values ('r1', 'garbage')", "the stored compliance"),
    ],
)
def test_a_run_store_edited_by_hand_names_what_is_damaged(
    tmp_path: Path, edit: str, damaged: str
) -> None:
    store = tmp_path / "s.db"
    quickstart(tmp_path, "--store", str(store), "--run-id", "r1", "-o", "r.md")
    with sqlite3.connect(store) as connection:
        connection.execute(edit)
    commands = [["report", "r1", "--store", str(store), "-o", "again.json"]]
    if "compliance" not in edit and "created_at" not in edit:  # what a resume reads
        example = [str(QUICKSTART / "dataset.yml"), "--outputs", str(QUICKSTART / "outputs.json")]
        commands.append(["run", *example, "--store", str(store), "--resume", "r1", "-q"])
    for command in commands:
        line = one_line_error(run_assay(command, cwd=tmp_path))
        assert line.startswith(f"assay: error: run store {store}: run 'r1': "), line
        assert damaged in line and "is damaged" in line, line


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        ("update chunks set rows = substr(rows, 1, 30)", None),
        ("update chunks set rows = cast('garbage' as blob)", "a row that is not a report row"),
        ("update chunks set rows = rows || cast(x'0a' as blob) || rows", "2 rows where 1 were"),
    ],
)
def test_a_damaged_chunk_of_a_run_stored_in_chunks_only_is_named(
    tmp_path: Path, edit: str, problem: str | None
) -> None:
    """A clean run keeps every row in chunks, and a report streams their bytes as stored: a
    chunk cut short, replaced or doubled is a StoreError naming the store and run (from the
    aggregates' read of every row, or from the rows' own check), never broken JSON."""
    from assay.errors import StoreError
    from assay.store.runs import RunStore

    store = tmp_path / "s.db"
    command = [*small_run(tmp_path), "-m", "exact-match", "--run-id", "r1"]
    command[command.index("--no-store")] = "--store"
    command.insert(command.index("--store") + 1, str(store))
    assert run_assay(command, cwd=tmp_path).returncode == 0
    with sqlite3.connect(store) as connection:
        assert connection.execute("select count(*) from executions").fetchone() == (0,)
        connection.execute(edit)
    report = ["report", "r1", "--store", str(store), "-f", "json", "-o", "again.json"]
    line = one_line_error(run_assay(report, cwd=tmp_path))
    assert line.startswith(f"assay: error: run store {store}: run 'r1': "), line
    assert "is damaged" in line, line
    if problem is not None:  # the rows' own check, as the end of a run reads them
        reader = RunStore(store, read_only=True)
        rows = reader.chunked_rows("r1")
        assert rows is not None
        with pytest.raises(StoreError, match=f"the chunk at position 0 is damaged .{problem}"):
            list(rows)
        reader.db.close()


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        ("drop table chunks", "is damaged: its 'chunks' table is missing"),
        ("update meta set value = 'assay.store.v99'", "has schema 'assay.store.v99'"),
    ],
)
def test_a_store_without_its_chunks_or_of_a_newer_schema_is_refused(
    tmp_path: Path, edit: str, problem: str
) -> None:
    """Before: with the chunks table dropped, 'assay report' said 0 samples (exit 0), and a
    run rewrote a v99 store's version to v2. Now every reader and writer refuses them."""
    store = tmp_path / "s.db"
    quickstart(tmp_path, "--store", str(store), "--run-id", "r1", "-o", "r.md")
    with sqlite3.connect(store) as connection:
        connection.execute(edit)
    example = [str(QUICKSTART / "dataset.yml"), "--outputs", str(QUICKSTART / "outputs.json")]
    for command in (
        ["report", "r1", "--store", str(store)],
        ["runs", "--store", str(store)],
        ["run", *example, "--store", str(store), "-q", "-o", "again.md"],
    ):
        line = one_line_error(run_assay(command, cwd=tmp_path))
        assert line == f"assay: error: run store {store} {problem}" or problem in line, line
    with sqlite3.connect(store) as connection:  # nothing was rewritten
        version = connection.execute("select value from meta").fetchone()[0]
    assert version == ("assay.store.v99" if "v99" in edit else "assay.store.v2")


def refusals_of(tmp_path: Path, entry: object) -> list[str]:
    """The one error line of ``validate`` and of ``run`` on a dataset whose metrics list is
    ``[entry]`` (both must refuse it)."""
    sample = {"id": "s1", "input": {"q": "x"}, "expected_output": "a"}
    document = {"name": "t", "metrics": [entry], "samples": [sample]}
    (tmp_path / "m.json").write_text(json.dumps(document), encoding="utf-8")
    run = [*small_run(tmp_path)[:1], "m.json", *small_run(tmp_path)[2:]]
    return [one_line_error(run_assay(args, cwd=tmp_path)) for args in (["validate", "m.json"], run)]


def test_a_bad_metric_entry_of_a_dataset_names_the_file_and_field(tmp_path: Path) -> None:
    for entry in ("no-such-metric", {"name": "rouge-l", "beta": -1}, {"name": "os:system"}):
        for line in refusals_of(tmp_path, entry):
            assert line.startswith("assay: error: m.json: field 'metrics': "), line


def test_a_lone_surrogate_escape_is_refused_and_a_pair_is_kept(tmp_path: Path) -> None:
    """``"\\ud800"`` alone is no text (no report could hold it); ``"\\ud83d\\ude00"`` is one."""
    sample = '{"id": "s1", "input": {"q": "x"}, "expected_output": "%s"}'
    for name, text, good in (
        ("lone.json", "\\ud800", False),
        ("pair.json", "\\ud83d\\ude00", True),
    ):
        (tmp_path / name).write_text('{"name": "t", "samples": [%s]}' % (sample % text), "utf-8")
        result = run_assay(["validate", name], cwd=tmp_path)
        if good:
            assert result.returncode == 0, result.stderr
        else:
            assert "lone surrogate escape \\ud800" in one_line_error(result)
    args = small_run(tmp_path)
    (tmp_path / "o.json").write_text('{"outputs": {"s1": "\\udfff"}}', encoding="utf-8")
    line = one_line_error(run_assay([*args, "-m", "exact-match"], cwd=tmp_path))
    assert line.startswith("assay: error: o.json: not valid text: a lone surrogate"), line


def test_a_deeply_nested_report_is_refused_by_every_reader(tmp_path: Path) -> None:
    (tmp_path / "deep.json").write_text('{"rows": ' + "[" * 50_000 + "]" * 50_000 + "}", "utf-8")
    for args in (["brief", "deep.json"], ["compare", "deep.json", "deep.json"]):
        line = one_line_error(run_assay(args, cwd=tmp_path))
        assert line == "assay: error: deep.json: the document is nested more than 100 levels deep"


def test_a_report_with_a_score_outside_0_1_is_refused(tmp_path: Path) -> None:
    """A NaN (or 1.5) score is no score a metric gives: the report is refused where it is read,
    by compare and brief alike, naming the row's field (before: compare crashed on NaN)."""
    quickstart(tmp_path, "--no-store", "-f", "json", "-o", "good.json")
    for bad in (float("nan"), 1.5):
        report = json.loads((tmp_path / "good.json").read_text(encoding="utf-8"))
        next(iter(report["rows"][0]["scores"].values()))["score"] = bad
        (tmp_path / "bad.json").write_text(json.dumps(report), encoding="utf-8")
        for args in (["compare", "bad.json", "good.json"], ["brief", "bad.json"]):
            line = one_line_error(run_assay(args, cwd=tmp_path))
            assert line.startswith("assay: error: bad.json: field 'rows.0.scores."), line


def test_validate_refuses_what_run_refuses_in_the_metrics_list(tmp_path: Path) -> None:
    sample = {"id": "s1", "input": {"q": "x"}, "expected_output": "a"}
    for entry, words in (
        ({"name": "rouge-l", "threshold": 2}, "'threshold' must be in [0, 1]"),
        ({"name": "rouge-l", "tags": 5}, "'tags' must be a tag or a non-empty list"),
    ):
        document = {"name": "t", "metrics": [entry], "samples": [sample]}
        (tmp_path / "m.json").write_text(json.dumps(document), encoding="utf-8")
        line = one_line_error(run_assay(["validate", "m.json"], cwd=tmp_path))
        assert line.startswith("assay: error: m.json: field 'metrics': ") and words in line


def test_repetitions_past_their_limit_are_refused_before_the_run(tmp_path: Path) -> None:
    """``--repetitions 100000000`` (or ``repetitions:`` in a dataset) is refused, not run."""
    from assay.engine.config import MAX_REPETITIONS

    args = [*small_run(tmp_path), "-m", "exact-match"]
    line = one_line_error(run_assay([*args, "--repetitions", "100000000"], cwd=tmp_path))
    assert line == (
        f"assay: error: --repetitions must be an integer from 1 to {MAX_REPETITIONS}; got 100000000"
    )
    help_text = " ".join(run_assay(["run", "--help"], cwd=tmp_path).stdout.split())
    assert f"Run each sample N times (1 to {MAX_REPETITIONS})" in help_text
    document = json.loads((tmp_path / "d.json").read_text(encoding="utf-8"))
    document["repetitions"] = MAX_REPETITIONS + 1
    (tmp_path / "d.json").write_text(json.dumps(document), encoding="utf-8")
    for command in (["validate", "d.json"], args):
        line = one_line_error(run_assay(command, cwd=tmp_path))
        assert line.startswith("assay: error: d.json: field 'repetitions': "), line
        assert str(MAX_REPETITIONS) in line


def test_a_bad_executor_in_assay_toml_names_the_file_and_key(tmp_path: Path) -> None:
    """Only a value from the flag (or ASSAY_EXECUTOR) is blamed on ``--executor``."""
    args = [*small_run(tmp_path), "-m", "exact-match"]
    config = tmp_path / "assay.toml"
    for text, expected in (
        ('executor = "rayy"\n', f"{config}: executor must be local or ray; got 'rayy'"),
        ("executor = 5\n", f"{config}: executor must be local or ray; got 5"),
        (
            'executor = "ray"\n[ray]\nbatch_size = "x"\n',
            f"{config} [ray].batch_size must be an integer of at least 1; got 'x'",
        ),
    ):
        config.write_text(text, encoding="utf-8")
        assert one_line_error(run_assay(args, cwd=tmp_path)) == f"assay: error: {expected}"
    line = one_line_error(run_assay([*args, "--executor", "rayy"], cwd=tmp_path))
    assert line == "assay: error: --executor must be local or ray; got 'rayy'"


def test_control_characters_in_an_error_line_are_escaped(tmp_path: Path) -> None:
    """A metric name with a NUL, an escape sequence and line breaks stays one printable line."""
    name = "exact\x00match\x1b[31m\nX\u2028Y\x7f"
    sample = {"id": "s1", "input": {"q": "x"}, "expected_output": "a"}
    document = {"name": "t", "metrics": [name], "samples": [sample]}
    (tmp_path / "m.json").write_text(json.dumps(document), encoding="utf-8")
    line = one_line_error(run_assay(["validate", "m.json"], cwd=tmp_path))
    assert "unknown metric 'exact\\x00match\\x1b[31m\\nX\\u2028Y\\x7f'" in line
    assert line.isprintable(), line


def test_pii_leak_kinds_are_checked_when_the_metric_is_built(tmp_path: Path) -> None:
    """``kinds: 5`` passed validate and then errored every row; now both commands refuse it."""
    for kinds, problem in ((5, "must be a list of kinds"), (["zzz"], "unknown kind(s) ['zzz']")):
        for line in refusals_of(tmp_path, {"name": "pii-leak", "kinds": kinds}):
            assert line.startswith(
                "assay: error: m.json: field 'metrics': pii-leak option 'kinds"
            ), line
            assert problem in line


def test_a_lone_surrogate_escape_in_a_jsonl_line_is_named_with_its_line(tmp_path: Path) -> None:
    """Before: 'line 2 is not valid JSON: not valid JSON' (the stdlib reads the escape)."""
    good = '{"id": "s1", "input": {"q": "x"}, "expected_output": "a"}'
    (tmp_path / "d.jsonl").write_text(good + "\n" + good.replace("s1", "s2\\udc00") + "\n", "utf-8")
    line = one_line_error(run_assay(["validate", "d.jsonl"], cwd=tmp_path))
    assert line == (
        "assay: error: d.jsonl: line 2: not valid text: a lone surrogate escape \\udc00 "
        "(an unpaired UTF-16 half)"
    )
    (tmp_path / "o.jsonl").write_text('{"id": "s1", "output": "\\ud800"}\n', "utf-8")
    args = [*small_run(tmp_path)[:2], "--outputs", "o.jsonl", *small_run(tmp_path)[4:]]
    line = one_line_error(run_assay([*args, "-m", "exact-match"], cwd=tmp_path))
    assert line.startswith("assay: error: o.jsonl: line 1: not valid text: a lone surrogate"), line
