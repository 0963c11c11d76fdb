"""Interrupted runs: SIGKILL then --resume, --retry-errors, and Ctrl-C (SIGINT) with exit 130.

Every test drives ``assay run`` in a subprocess against a loopback HTTP system under test that
counts its calls per sample, so "without redoing finished work" is checked by call counts.
"""

from __future__ import annotations

import copy
import json
import shlex
import signal
import sqlite3
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from engine.procs import assay_command, assay_env, run_assay
from engine.sut_server import SutServer, write_dataset

VOLATILE_RUN_FIELDS = ("run_id", "started_at", "finished_at", "duration_seconds")


def normalised(report: dict[str, Any]) -> dict[str, Any]:
    """A report without what legitimately differs between two runs of the same work."""
    data = copy.deepcopy(report)
    for key in VOLATILE_RUN_FIELDS:
        data["run"].pop(key)
    return data


def load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def stored(store: Path, run_id: str) -> tuple[int, str]:
    """(executions stored, run status) read straight from the SQLite store."""
    with sqlite3.connect(store) as db:
        count = db.execute(
            "SELECT (SELECT COUNT(*) FROM executions WHERE run_id = ?) "
            "+ (SELECT COALESCE(SUM(size), 0) FROM chunks WHERE run_id = ?)",
            (run_id, run_id),
        ).fetchone()[0]
        status = db.execute("SELECT status FROM runs WHERE run_id = ?", (run_id,)).fetchone()[0]
    return int(count), str(status)


def _default_sigint() -> None:
    """In the child before exec: Ctrl-C's default action, even when pytest runs with SIGINT
    ignored (a shell's background job), which the child would inherit and keep."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start(args: list[str], cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        assay_command(*args),
        cwd=cwd,
        env=assay_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_default_sigint,
    )


def wait_for_calls(
    server: SutServer, process: subprocess.Popen[str], calls: int, limit_s: float = 60.0
) -> None:
    deadline = time.monotonic() + limit_s
    while server.total_calls() < calls:
        if process.poll() is not None:
            pytest.fail(
                f"assay ended (rc {process.returncode}) before {calls} calls: "
                f"{process.stderr.read() if process.stderr else ''}"
            )
        if time.monotonic() > deadline:
            process.kill()
            pytest.fail("the run made no progress")
        time.sleep(0.005)


def common(dataset: Path, url: str, store: Path, out: Path, *extra: str) -> list[str]:
    return [
        "run",
        str(dataset),
        "--sut-url",
        url,
        "--store",
        str(store),
        "-f",
        "json",
        "-o",
        str(out),
        "-q",
        *extra,
    ]


def test_sigkill_then_resume_gives_the_uninterrupted_report(tmp_path: Path) -> None:
    dataset = tmp_path / "dataset.json"
    ids = write_dataset(dataset, 200)
    store = tmp_path / "runs.db"

    with SutServer(latency_s=0.02) as server:
        clean = run_assay(
            common(dataset, server.url, tmp_path / "ref.db", tmp_path / "clean.json", "-j", "4"),
            cwd=tmp_path,
        )
        assert clean.returncode == 0, clean.stderr
        assert all(server.calls[i] == 1 for i in ids)
        server.reset_counts()

        process = start(
            common(
                dataset, server.url, store, tmp_path / "killed.json", "-j", "4", "--run-id", "job-1"
            ),
            tmp_path,
        )
        wait_for_calls(server, process, 60)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
        assert process.returncode == -signal.SIGKILL
        assert not (tmp_path / "killed.json").exists()
        # Requests the killed process had already sent are counted now; a loaded machine can
        # take a while to accept the last of them, so the quiet period is generous.
        server.settle(quiet_s=1.0, limit_s=30.0)

        kept, status = stored(store, "job-1")
        assert 0 < kept < len(ids), "the kill must land partway"
        assert status == "running"  # nobody got to mark it: it was killed
        before = server.total_calls()

        resumed = run_assay(
            common(
                dataset,
                server.url,
                store,
                tmp_path / "resumed.json",
                "-j",
                "4",
                "--resume",
                "job-1",
            ),
            cwd=tmp_path,
        )
        assert resumed.returncode == 0, resumed.stderr
        # Exactly the executions the store did not have were redone, nothing else.
        assert server.total_calls() - before == len(ids) - kept
        # Each sample was answered once, or twice if it was in flight (or uncommitted) at the kill.
        assert all(1 <= server.calls[i] <= 2 for i in ids)
        assert sum(server.calls[i] == 2 for i in ids) == before - kept

    report = load(tmp_path / "resumed.json")
    assert report["run"]["run_id"] == "job-1"
    assert report["summary"]["total_executions"] == len(ids)
    assert normalised(report) == normalised(load(tmp_path / "clean.json"))
    assert stored(store, "job-1") == (len(ids), "finished")

    # `assay report` renders the stored run again, identically, without calling anything.
    again = run_assay(
        [
            "report",
            "job-1",
            "--store",
            str(store),
            "-f",
            "json",
            "-o",
            str(tmp_path / "again.json"),
        ],
        cwd=tmp_path,
    )
    assert again.returncode == 0, again.stderr
    rerendered = normalised(load(tmp_path / "again.json"))
    expected = normalised(report)
    for block in ("gate", "comparison"):  # the gate is evaluated by `assay run`, not stored
        rerendered.pop(block, None)
        expected.pop(block, None)
    rerendered["run"].pop("assay_version")
    expected["run"].pop("assay_version")
    assert rerendered["rows"] == expected["rows"]
    assert rerendered["metrics"] == expected["metrics"]
    assert rerendered["summary"] == expected["summary"]


def test_retry_errors_calls_only_the_failed_samples(tmp_path: Path) -> None:
    dataset = tmp_path / "dataset.json"
    ids = write_dataset(dataset, 40)
    flaky = frozenset({"s0003", "s0017", "s0018", "s0039"})
    store = tmp_path / "runs.db"

    with SutServer(latency_s=0.002, fail_first=flaky) as server:
        first = run_assay(
            common(dataset, server.url, store, tmp_path / "first.json", "--run-id", "job-2"),
            cwd=tmp_path,
        )
        assert first.returncode == 1, first.stderr  # captured failures fail the gate
        report = load(tmp_path / "first.json")
        failures = report["failures"]
        assert sorted(f["sample_id"] for f in failures) == sorted(flaky)
        assert all(
            f["stage"] == "system-under-test" and "HTTP 500" in f["message"] for f in failures
        )
        assert "secret-body-text" not in (tmp_path / "first.json").read_text() + first.stderr
        assert all(server.calls[i] == 1 for i in ids)

        retried = run_assay(
            common(
                dataset,
                server.url,
                store,
                tmp_path / "retried.json",
                "--resume",
                "job-2",
                "--retry-errors",
            ),
            cwd=tmp_path,
        )
        assert retried.returncode == 0, retried.stderr
        for sample_id in ids:
            assert server.calls[sample_id] == (2 if sample_id in flaky else 1), sample_id

        # Nothing left to retry: a second --retry-errors calls nobody.
        before = server.total_calls()
        noop = run_assay(
            common(
                dataset,
                server.url,
                store,
                tmp_path / "noop.json",
                "--resume",
                "job-2",
                "--retry-errors",
            ),
            cwd=tmp_path,
        )
        assert noop.returncode == 0, noop.stderr
        assert server.total_calls() == before

        # The reference: an uninterrupted run once the system no longer fails.
        clean = run_assay(
            common(dataset, server.url, tmp_path / "ref.db", tmp_path / "clean.json"), cwd=tmp_path
        )
        assert clean.returncode == 0, clean.stderr

    assert normalised(load(tmp_path / "retried.json")) == normalised(load(tmp_path / "clean.json"))


def test_ctrl_c_stops_cleanly_and_prints_the_resume_command(tmp_path: Path) -> None:
    dataset = tmp_path / "dataset.json"
    ids = write_dataset(dataset, 150)
    store = tmp_path / "runs.db"
    out = tmp_path / "report.json"
    with SutServer(latency_s=0.03) as server:
        process = start(
            common(dataset, server.url, store, out, "-j", "2", "--run-id", "job-3"), tmp_path
        )
        wait_for_calls(server, process, 20)
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=30)
        assert process.returncode == 130, stderr
        assert "Traceback" not in stderr
        assert "--resume" in stderr
        kept, status = stored(store, "job-3")
        assert kept >= 10
        assert kept < len(ids)
        assert status == "interrupted"
        server.settle(quiet_s=1.0, limit_s=30.0)

        # The printed command resumes the run (it is the original command plus --resume).
        line = next(x for x in stderr.splitlines() if "--resume" in x).strip()
        words = shlex.split(line)
        assert words[0] == "assay" and words[-2:] == ["--resume", "job-3"]
        before = server.total_calls()
        resumed = subprocess.run(
            assay_command(*words[1:]),
            cwd=tmp_path,
            env=assay_env(),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert resumed.returncode == 0, resumed.stderr
        assert server.total_calls() - before == len(ids) - kept
    report = load(out)
    assert report["summary"]["total_executions"] == len(ids)
    assert report["summary"]["errored_rows"] == 0
    assert stored(store, "job-3") == (len(ids), "finished")


def test_the_resume_line_leaves_out_url_credentials_and_query() -> None:
    """Before, Ctrl-C printed --sut-url/--base-url as given: user, password and token shown."""
    from assay.cli.run_execution import _resume_command

    argv = [
        "run",
        "d.yml",
        "--sut-url",
        "http://user:pw@rag.internal:8080/answer?token=S3CRET",
        "--base-url=https://key:pw2@api.example.com/v1?api-key=K3Y#frag",
        "--run-id",
        "old",
    ]
    line = _resume_command("job-3", argv)
    for secret in ("user", "pw", "S3CRET", "key:", "K3Y", "frag"):
        assert secret not in line
    command, note = line.splitlines()
    assert shlex.split(command) == [
        "assay",
        "run",
        "d.yml",
        "--sut-url",
        "http://rag.internal:8080/answer",
        "--base-url=https://api.example.com/v1",
        "--resume",
        "job-3",
    ]
    assert "--base-url, --sut-url" in note and "again" in note
    plain = ["run", "d.yml", "--sut-url", "http://127.0.0.1:9/a", "--base-url", "http://h/v1"]
    assert _resume_command("r", plain) == f"assay {' '.join(plain)} --resume r"
