"""The SQLite run store: runs, executions in dataset order, resume keys, rebuilt reports."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from assay.data.results import ExecutionResult, ScoreResult
from assay.engine.rebuild import report_from_store
from assay.errors import StoreError
from assay.store.runs import RunStore
from assay.store.schema import STORE_SCHEMA
from report.reports import check_report

USAGE = {
    "model": "m",
    "prompt_tokens": 3,
    "completion_tokens": 1,
    "total_tokens": 4,
    "latency_ms": 2.5,
    "cost_usd": None,
    "cached": False,
}


def result(
    sample_id: str,
    repetition: int = 0,
    *,
    value: float | None = 1.0,
    error: str | None = None,
    sut_error: str | None = None,
) -> ExecutionResult:
    scores = (
        {}
        if sut_error
        else {"m": ScoreResult(value if error is None else None, {"n": 1}, error, (USAGE,))}
    )
    return ExecutionResult(sample_id, repetition, scores, sut_error=sut_error)


def new_run(
    store: RunStore, run_id: str = "r", metrics: list[str] | None = None, repetitions: int = 1
) -> None:
    store.create_run(
        run_id,
        dataset_name="d",
        dataset_path="d.yml",
        config={
            "metrics": metrics or ["m"],
            "repetitions": repetitions,
            "system_under_test": {"kind": "saved-outputs", "target": "o.json"},
            "dataset_schema_version": "assay.dataset.v1",
            "dataset_samples": 3,
        },
    )


def test_execution_result_round_trips_through_json() -> None:
    original = ExecutionResult(
        "s",
        2,
        {
            "a": ScoreResult(0.25, {"k": [1, 2]}, None, (USAGE,)),
            "b": ScoreResult(None, {}, "boom", ()),
        },
        sut_error=None,
    )
    data = json.loads(json.dumps(original.to_json()))
    again = ExecutionResult.from_json("s", 2, data)
    assert again.to_json() == original.to_json()
    assert again.passed() is False


def test_store_records_in_dataset_order_and_knows_what_is_done(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "sub" / "runs.db", commit_interval_s=0)
    try:
        new_run(store, repetitions=2)
        # recorded out of order, as a concurrent run finishes
        for sample_id, position, repetition, kwargs in [
            ("c", 2, 0, {}),
            ("a", 0, 1, {"error": "metric broke"}),
            ("b", 1, 0, {"sut_error": "SUT down"}),
            ("a", 0, 0, {}),
        ]:
            store.record(
                "r",
                result(sample_id, repetition, **kwargs),
                {"output": "x"},
                position=position,
                tags=["t"],
                row_hash="h",
            )
        assert [(r.sample_id, r.repetition) for r, _, _ in store.iter_results("r")] == [
            ("a", 0),
            ("a", 1),
            ("b", 0),
            ("c", 0),
        ]
        assert store.done_keys("r") == {("a", 0), ("a", 1), ("b", 0), ("c", 0)}
        assert store.done_keys("r", include_errored=False) == {("a", 0), ("c", 0)}
        record = store.get_run("r")
        assert (record.executions, record.errored, record.status) == (4, 2, "running")

        # a retried execution replaces the earlier attempt
        store.record("r", result("a", 1), {"output": "x"}, position=0, tags=["t"], row_hash="h")
        assert store.get_run("r").errored == 1
        assert store.get_run("r").executions == 4
    finally:
        store.close()


def test_clean_executions_given_as_columns_are_stored_as_one_by_one(tmp_path: Path) -> None:
    """record_clean (a chunk with no error and no usage) writes the table rows that record
    writes for the same executions."""
    clean = [
        ExecutionResult(sid, rep, {"m": ScoreResult(0.5, {"n": 1})})
        for sid, rep in [("a", 0), ("b", 1)]
    ]
    tags, hashes, rows = [["t"], []], ["h1", "h2"], [b'{"id":"a"}', b'{"id":"b"}']
    outputs: list[dict[str, object] | None] = [{"output": "x"}, None]
    tables = []
    for name in ("one", "columns"):
        store = RunStore(tmp_path / f"{name}.db", commit_interval_s=0)
        try:
            new_run(store)
            if name == "one":
                for i, r in enumerate(clean):
                    store.record(
                        "r",
                        r,
                        outputs[i],
                        position=i,
                        tags=tags[i],
                        row_hash=hashes[i],
                        row=rows[i],
                    )
            else:
                store.record_clean(
                    "r",
                    [r.sample_id for r in clean],
                    [r.repetition for r in clean],
                    positions=[0, 1],
                    tags=tags,
                    row_hashes=hashes,
                    rows=rows,
                    outputs=outputs,
                )
            store.flush()
            tables.append(store.db.execute("SELECT * FROM executions ORDER BY position").fetchall())
        finally:
            store.close()
    assert tables[0] == tables[1] and len(tables[0]) == 2
    assert tables[1][0][4:] == (b'["t"]', "h1", 0, b'{"output":"x"}', b'{"id":"a"}')


def test_many_rows_to_a_statement_store_what_one_by_one_stores(tmp_path: Path) -> None:
    """A flush inserts many rows per statement: a later row for the same execution still
    replaces an earlier one, inside a statement, across statements and in the remainder."""
    from assay.store.schema import ROWS_PER_INSERT

    count = 2 * ROWS_PER_INSERT + 37
    keys = [(f"s{i}", 0) for i in range(count)]
    keys[ROWS_PER_INSERT + 5] = keys[3]  # a repeat in the next statement
    keys[7] = keys[2]  # and in the same one
    keys[-1] = keys[ROWS_PER_INSERT + 1]  # in the remainder
    store = RunStore(tmp_path / "runs.db", commit_interval_s=3600)
    try:
        new_run(store)
        for position, (sample_id, repetition) in enumerate(keys):
            store.record(
                "r",
                result(sample_id, repetition, value=position / count),
                None,
                position=position,
                tags=[],
                row_hash=f"h{position}",
            )
        store.flush()
        got = store.db.execute(
            "SELECT sample_id, repetition, position, row_hash FROM executions ORDER BY sample_id"
        ).fetchall()
    finally:
        store.close()
    last = {key: position for position, key in enumerate(keys)}  # the last write of each
    assert got == sorted((k[0], k[1], p, f"h{p}") for k, p in last.items())


def test_store_survives_reopening(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    store = RunStore(path)
    new_run(store)
    store.record("r", result("a"), None, position=0, tags=[], row_hash="h")
    store.set_status("r", "finished")
    store.close()
    again = RunStore(path)
    try:
        assert again.get_run("r").executions == 1
        assert again.get_run("r").status == "finished"
    finally:
        again.close()
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone() == (
            STORE_SCHEMA,
        )
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)


def test_a_checkpoint_behind_copies_the_log_while_the_store_reads_and_writes_on(
    tmp_path: Path,
) -> None:
    path = tmp_path / "runs.db"
    store = RunStore(path)
    new_run(store)
    for i in range(50):
        store.record("r", result(f"s{i}"), None, position=i, tags=[], row_hash="h")
    store.checkpoint_behind()
    assert store.get_run("r").executions == 50  # reads go on meanwhile
    store.record("r", result("late"), None, position=50, tags=[], row_hash="h")  # and writes
    store.set_status("r", "finished")
    store.close()
    # Closed as before: the log copied into the file and removed, every row in it.
    assert not (tmp_path / "runs.db-wal").exists()
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT count(*) FROM executions").fetchone() == (51,)
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_run_listing_latest_and_errors(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "runs.db")
    try:
        with pytest.raises(StoreError):
            store.latest_run_id()
        new_run(store, "first")
        new_run(store, "second")
        store.create_run("third", dataset_name="other", dataset_path=None, config={"metrics": []})
        assert [r.run_id for r in store.list_runs()] == ["third", "second", "first"]
        assert store.latest_run_id() == "third"
        assert store.latest_run_id("d") == "second"
        with pytest.raises(StoreError, match="already exists"):
            new_run(store, "first")
        with pytest.raises(StoreError, match="no run 'nope'"):
            store.get_run("nope")
        with pytest.raises(StoreError, match="no run 'nope'"):
            store.run_config("nope")
        assert store.run_config("third") == {"metrics": []}
        assert store.run_config("first") == store.get_run("first").config
    finally:
        store.close()


def test_unopenable_store_is_a_store_error(tmp_path: Path) -> None:
    (tmp_path / "dir.db").mkdir()
    with pytest.raises(StoreError):
        RunStore(tmp_path / "dir.db")


def test_report_from_store(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "runs.db")
    try:
        new_run(store)
        store.record("r", result("a", value=0.8), None, position=0, tags=["x"], row_hash="h1")
        store.record("r", result("b", error="nope"), None, position=1, tags=[], row_hash="h2")
        store.record(
            "r", result("c", sut_error="down"), None, position=2, tags=["x"], row_hash="h3"
        )
        store.set_status("r", "halted")
        report = report_from_store(store, "r")
    finally:
        store.close()
    data = check_report(report)
    assert [row["id"] for row in data["rows"]] == ["a", "b", "c"]
    m = report.metric("m")
    assert (m.attempted, m.scored, m.errored, m.skipped, m.mean) == (3, 1, 1, 1, 0.8)
    assert report.run.halted is True and any("halted" in w for w in report.warnings)
    assert report.run.system_under_test.kind == "saved-outputs"
    assert (
        report.usage.calls == 2
        and report.usage.cost_usd is None
        and report.usage.unpriced_models == ["m"]
    )


# --------------------------------------------------------------------------- resume through the CLI

FLAKY_SUT = '''
"""Fails on 'b' while fail.flag exists; logs every call to calls.log."""

from pathlib import Path


def answer(sample_input):
    with open("calls.log", "a", encoding="utf-8") as log:
        log.write(sample_input["q"] + "\\n")
    if sample_input["q"] == "b" and Path("fail.flag").exists():
        raise ConnectionError("upstream unavailable")
    return sample_input["q"].upper()
'''

FLAKY_DATASET = """
name: flaky
metrics: [exact-match]
samples:
  - {id: "1", input: {q: a}, expected_output: A}
  - {id: "2", input: {q: b}, expected_output: B}
  - {id: "3", input: {q: c}, expected_output: C}
"""


def assay(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")}
    return subprocess.run(
        [sys.executable, "-m", "assay", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_cli_resume_with_retry_errors(tmp_path: Path) -> None:
    (tmp_path / "flaky_bot.py").write_text(textwrap.dedent(FLAKY_SUT), encoding="utf-8")
    (tmp_path / "d.yml").write_text(FLAKY_DATASET, encoding="utf-8")
    (tmp_path / "fail.flag").write_text("", encoding="utf-8")
    common = ["--sut", "flaky_bot:answer", "-f", "json", "--store", "runs.db", "-q"]

    first = assay("run", "d.yml", *common, "--run-id", "nightly", cwd=tmp_path)
    assert first.returncode == 1, first.stderr
    report = check_report(first.stdout)
    assert [(f["sample_id"], f["stage"]) for f in report["failures"]] == [
        ("2", "system-under-test")
    ]
    assert "ConnectionError" in report["failures"][0]["message"]
    assert sorted((tmp_path / "calls.log").read_text().split()) == ["a", "b", "c"]

    (tmp_path / "fail.flag").unlink()
    (tmp_path / "calls.log").write_text("", encoding="utf-8")
    second = assay("run", "d.yml", *common, "--resume", "nightly", "--retry-errors", cwd=tmp_path)
    assert second.returncode == 0, second.stderr
    assert (tmp_path / "calls.log").read_text().split() == ["b"]
    fixed = check_report(second.stdout)
    assert fixed["summary"]["errored_rows"] == 0
    assert [row["id"] for row in fixed["rows"]] == ["1", "2", "3"]
    assert all(row["scores"]["exact-match"]["score"] == 1.0 for row in fixed["rows"])
    assert fixed["run"]["run_id"] == "nightly"

    listing = assay("runs", "--store", "runs.db", cwd=tmp_path)
    assert listing.returncode == 0
    header, row = listing.stdout.splitlines()[:2]
    assert header.split()[:7] == [
        "RUN", "STATUS", "DATASET", "SYSTEM", "EXECUTIONS", "FAILED", "ERRORED"
    ]  # fmt: skip
    assert row.split()[0] == "nightly" and row.split()[4:7] == ["3", "0", "0"]
    assert not (tmp_path / ".assay").exists()


def test_resume_of_a_run_killed_before_its_row_was_written_starts_it(tmp_path: Path) -> None:
    (tmp_path / "flaky_bot.py").write_text(textwrap.dedent(FLAKY_SUT), encoding="utf-8")
    (tmp_path / "d.yml").write_text(FLAKY_DATASET, encoding="utf-8")
    common = ["--sut", "flaky_bot:answer", "-f", "json", "--store", "runs.db", "-q"]
    # No run 'early' exists: the process that would have created it died at start-up.
    resumed = assay("run", "d.yml", *common, "--resume", "early", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert "run 'early' had not started; starting it now" in resumed.stderr
    report = check_report(resumed.stdout)
    assert report["run"]["run_id"] == "early"
    assert [row["id"] for row in report["rows"]] == ["1", "2", "3"]
    with sqlite3.connect(tmp_path / "runs.db") as db:
        status = db.execute("SELECT status FROM runs WHERE run_id = 'early'").fetchone()
    assert status == ("finished",)


def test_assay_run_checkpoints_behind_once_the_gate_verdict_is_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from assay.cli import main

    quickstart = Path(__file__).resolve().parents[2] / "examples" / "quickstart"
    verdicts: list[object] = []
    checkpoint = RunStore.checkpoint_behind

    def behind(store: RunStore) -> None:
        verdicts.append(store.gate(store.latest_run_id()))  # the last write is in by now
        checkpoint(store)

    monkeypatch.setattr(RunStore, "checkpoint_behind", behind)
    argv = ["run", str(quickstart / "dataset.yml"), "--outputs", str(quickstart / "outputs.json")]
    argv += ["-m", "exact-match", "--store", str(tmp_path / "runs.db"), "-q", "-f", "json"]
    with pytest.raises(SystemExit):
        main([*argv, "-o", str(tmp_path / "report.json")])
    assert len(verdicts) == 1 and isinstance(verdicts[0], dict)
    assert not (tmp_path / "runs.db-wal").exists()
