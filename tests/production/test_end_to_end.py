"""The whole production slice with real parts: an application instrumented with the
OpenTelemetry SDK exports over OTLP/HTTP to ``assay collect`` (a separate process on loopback);
``assay monitor`` scores the traces and raises a drift alert when the answers stop citing their
contexts; ``assay promote`` writes a dataset that ``assay validate`` accepts; the planted e-mail
address and API key are nowhere in the stores.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from jsonschema import Draft202012Validator
from rag_app import OFF_TOPIC, App

from assay.cli import main
from assay.cli.schema_files import load
from report.reports import check_report

SRC = Path(__file__).resolve().parents[2] / "src"

EMAIL = "jane.roe@example.org"
API_KEY = "sk-proj-Zx81QwErTy12UiOp34AsDf56GhJk78Lm"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    for name in list(os.environ):
        if name.startswith("ASSAY_"):
            monkeypatch.delenv(name)
    (tmp_path / ".assay").mkdir()
    return tmp_path


@pytest.fixture
def collector(project: Path) -> Iterator[tuple[int, subprocess.Popen[str]]]:
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    process = subprocess.Popen(
        [sys.executable, "-m", "assay", "collect", "--port", str(port)],
        cwd=project,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    line = process.stderr.readline()  # "collect: listening on ..." once the socket is bound
    assert "listening" in line, line + process.stderr.read()
    yield port, process
    if process.poll() is None:
        process.kill()
        process.wait()


def stop(process: subprocess.Popen[str]) -> str:
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    return out


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        main(list(args))
    captured = capsys.readouterr()
    return int(info.value.code or 0), captured.out, captured.err


def test_sdk_to_collector_to_monitor_alert_promote_validate(
    project: Path,
    collector: tuple[int, subprocess.Popen[str]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    port, process = collector
    app = App.exporting_to(f"http://127.0.0.1:{port}/v1/traces")
    for number in range(60):
        extra = f" My email is {EMAIL} and my key is {API_KEY}." if number == 3 else ""
        app.answer(number, extra)
    app.drifted = True
    for number in range(60, 100):
        app.answer(number)
    app.close()
    summary = stop(process)
    assert "400 spans read, 400 kept (100 traces)" in summary
    assert "email 2" in summary and "secret" in summary  # the chat span and the tool argument

    code, out, err = run(capsys, "monitor", "--settle", "0", "--format", "json")
    assert code == 1, err  # one-shot mode exits 1 on an alert
    result = json.loads(out)
    Draft202012Validator(load("monitor.v1.json")).validate(result)
    assert result["scored"] == 100
    verdicts = {d["metric"]: d for d in result["drift"]}
    faithfulness = verdicts["faithfulness"]
    assert faithfulness["status"] == "alert", out
    assert faithfulness["stable_pass_rate"] == 1.0
    assert faithfulness["current_pass_rate"] == pytest.approx(10 / 50)
    assert any("below the threshold" in reason for reason in faithfulness["reasons"])
    moved = {row["trace_id"] for row in faithfulness["rows"]}
    assert len(moved) == 20  # capped; every one a drifted trace
    assert all(row["score"] < 0.5 for row in faithfulness["rows"])

    # The monitor pass is an ordinary run in the run store.
    code, out, _ = run(capsys, "report", result["run_id"], "--format", "json")
    assert code == 0
    report = check_report(out)  # schema-valid, as every report
    assert report["summary"]["total_samples"] == 100

    # Nothing new to score: a second pass scores none and still alerts.
    code, out, _ = run(capsys, "monitor", "--settle", "0")
    assert code == 1 and "scored 0 trace(s)" in out and "faithfulness: ALERT" in out

    dataset = project / "promoted.yml"
    code, out, _ = run(capsys, "promote", "--out", str(dataset), "--metric", "faithfulness")
    assert code == 0, out
    document = yaml.safe_load(dataset.read_text())
    rows = document["samples"]
    assert len(rows) == 4  # 40 drifted traces, four distinct questions: deduplicated by content
    assert all(row["expected_output"] is None for row in rows)
    for row in rows:
        provenance = row["metadata"]["assay"]["production"]
        assert provenance["answer"] == OFF_TOPIC  # only drifted traces failed
        assert provenance["failed_metrics"] == ["faithfulness"]
    code, out, err = run(capsys, "validate", str(dataset))
    assert code == 0 and ": ok (4 samples" in out
    assert "4 promoted row(s) still need an expected_output" in err

    # Promoting again adds nothing.
    code, out, _ = run(capsys, "promote", "--out", str(dataset), "--metric", "faithfulness")
    assert "0 row(s) added, 4 in" in out

    for path in (project / ".assay").iterdir():
        data = path.read_bytes()
        assert EMAIL.encode() not in data, path
        assert API_KEY.encode() not in data, path
        assert b"Zx81QwErTy12" not in data, path
