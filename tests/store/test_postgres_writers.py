"""Many writers into one PostgreSQL store, and a server restart in the middle of a run.

Each test starts (or reuses) a real PostgreSQL server (tests/pg_fixtures.py); none mocks it.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import psycopg
import pytest

from pg_server import PgServer

from .helpers import assay, comparable, popen, write_project

WRITERS = 8
SAMPLES = 10_000


def _stored_keys(url: str, run_id: str) -> list[tuple[str, int]]:
    """Every (sample, repetition) stored for a run: its rows and its chunks' keys, with
    repeats kept (a key stored twice appears twice)."""
    with psycopg.connect(url) as conn:
        keys = [
            (str(s), int(r))
            for s, r in conn.execute(
                "SELECT sample_id, repetition FROM executions WHERE run_id = %s", (run_id,)
            )
        ]
        for (raw,) in conn.execute("SELECT keys FROM chunks WHERE run_id = %s", (run_id,)):
            columns = json.loads(bytes(raw))
            keys += list(zip(columns["ids"], columns["repetitions"], strict=True))
    return keys


def test_eight_concurrent_writers_store_every_row_once(pg_url: str, tmp_path: Path) -> None:
    write_project(tmp_path, SAMPLES)
    runs = []
    for n in range(WRITERS):
        # half score saved outputs (rows kept a chunk to a row), half call a Python system
        # (a row per execution, errored ones among them)
        system = ["--outputs", "outputs.json"] if n % 2 else ["--sut", "bot:answer"]
        run_id = f"w{n}"
        args = ["run", "big.jsonl", *system, "--metric", "exact-match", "--run-id", run_id]
        runs.append((run_id, popen(*args, "--store", pg_url, "-q", "-f", "json", cwd=tmp_path)))
    reports = {}
    for run_id, process in runs:
        out, err = process.communicate(timeout=900)
        # the python system's errored rows end the run with 1; the saved outputs' with 0
        assert process.returncode == (1 if run_id in ("w0", "w2", "w4", "w6") else 0), err
        reports[run_id] = json.loads(out)
    for run_id, report in reports.items():
        keys = _stored_keys(pg_url, run_id)
        assert len(keys) == SAMPLES and len(set(keys)) == SAMPLES, run_id
        assert {k[0] for k in keys} == {f"s{i}" for i in range(SAMPLES)}
        assert [row["id"] for row in report["rows"]] == [f"s{i}" for i in range(SAMPLES)]
    with psycopg.connect(pg_url) as conn:
        status = dict(conn.execute("SELECT run_id, status FROM runs").fetchall())
    assert status == {run_id: "finished" for run_id, _ in runs}
    listing = assay("runs", "--store", pg_url, cwd=tmp_path)
    assert listing.returncode == 0, listing.stderr
    header, *lines = listing.stdout.splitlines()
    columns = header.split()
    executions, errored = columns.index("EXECUTIONS"), columns.index("ERRORED")
    rows = [line.split() for line in lines]
    # the python system raises for ids ending in 99: 100 errored rows of 10,000
    expected = {f"w{n}": ("10000", "0" if n % 2 else "100") for n in range(WRITERS)}
    assert {row[0]: (row[executions], row[errored]) for row in rows} == expected


def test_a_server_restart_mid_run_loses_no_row(
    pg_url: str, pg_server_session: PgServer, tmp_path: Path
) -> None:
    if not (pg_server_session.data / "PG_VERSION").is_file():
        pytest.skip("the test server's data folder is not on this machine (cannot restart it)")
    samples = 1500
    write_project(tmp_path, samples)
    common = ["run", "big.jsonl", "--sut", "bot:answer", "--metric", "exact-match", "-q"]
    common += ["-f", "json", "--store", pg_url, "--concurrency", "4"]
    # ~3 s of answers: the restart lands while rows are being written
    running = popen(*common, "--run-id", "cut", cwd=tmp_path, env={"BOT_SLEEP_S": "0.008"})
    time.sleep(1.5)
    assert running.poll() is None, "the run ended before the restart"
    restart = threading.Thread(target=pg_server_session.restart)
    restart.start()
    out, err = running.communicate(timeout=600)
    restart.join()
    if running.returncode not in (0, 1):  # the run gave up: resume completes it
        resumed = assay(*common, "--resume", "cut", cwd=tmp_path)
        assert resumed.returncode == 1, resumed.stderr
        out = resumed.stdout
    assert running.returncode in (0, 1, 2), err
    whole = assay(*common, "--run-id", "whole", cwd=tmp_path)
    assert whole.returncode == 1, whole.stderr
    cut_report, whole_report = json.loads(out), json.loads(whole.stdout)
    assert comparable(cut_report) == comparable(whole_report)
    again = assay("report", "cut", "--store", pg_url, "-f", "json", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert comparable(json.loads(again.stdout)) == comparable(whole_report)
    assert len(_stored_keys(pg_url, "cut")) == samples
