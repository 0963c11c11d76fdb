"""``--redact``: no report, in any format, holds a text from the system's errors or the judge's
details; stored or not. Driven through ``assay run`` with a Python system under test and the
judge answered by the loopback OpenAI-protocol server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.procs import run_assay
from openai_server import OpenAIServer

SECRET = "S3CRET-TEXT"
SUT = f"""
def answer(sample):
    if sample["question"] == "boom":
        raise ValueError("{SECRET} in the exception " + sample["question"])
    return "{SECRET} in the answer"
"""
DATASET = """schema_version: assay.dataset.v1
name: redact
metrics: [exact-match, llm-as-judge]
samples:
  - {id: s1, input: {question: boom}, expected_output: x}
  - {id: s2, input: {question: fine}, expected_output: x}
"""


@pytest.mark.parametrize("store", [True, False])
def test_no_report_holds_an_error_or_detail_text_when_redacted(
    tmp_path: Path, openai_server: OpenAIServer, store: bool
) -> None:
    """Before, JSON rows kept the SUT's exception and the judge_reason, JUnit the exception."""
    openai_server.chat_reply = lambda request: json.dumps(
        {"score": 0.5, "reason": f"the judge quotes {SECRET}"}
    )
    (tmp_path / "redsut.py").write_text(SUT, encoding="utf-8")
    (tmp_path / "d.yml").write_text(DATASET, encoding="utf-8")
    outputs = {fmt: tmp_path / f"r.{fmt}" for fmt in ("json", "md", "html", "junit")}
    args = ["run", "d.yml", "--sut", "redsut:answer", "--base-url", openai_server.url]
    args += ["--redact", "-f", "json", "-o", str(outputs["json"]), "-q"]
    args += [f"--also={fmt}={path}" for fmt, path in outputs.items() if fmt != "json"]
    args += [] if store else ["--no-store"]
    env = {"ASSAY_API_KEY": "sk-test", "ASSAY_HOME": str(tmp_path / "home")}
    done = run_assay(args, cwd=tmp_path, env=env)  # ``python -m``: redsut imports from cwd
    assert done.returncode == 1, done.stderr  # the SUT's error fails the gate
    assert SECRET not in done.stdout + done.stderr
    for fmt, path in outputs.items():
        assert SECRET not in path.read_text(encoding="utf-8"), fmt
    rows = {row["id"]: row for row in json.loads(outputs["json"].read_text())["rows"]}
    assert rows["s1"]["errors"] == {"system-under-test": "(redacted)"}
    details = rows["s2"]["scores"]["llm-as-judge"]["details"]
    assert details["judge_reason"] == "(redacted)" and details["judge_score"] == 0.5
    assert "(redacted)" in outputs["junit"].read_text(encoding="utf-8")


def test_assay_report_of_a_redacted_run_is_redacted_again(
    tmp_path: Path, openai_server: OpenAIServer
) -> None:
    """Before, ``assay report RUN`` rendered a --redact run's stored rows and failures as kept."""
    openai_server.chat_reply = lambda request: json.dumps({"score": 0.5, "reason": SECRET})
    (tmp_path / "redsut.py").write_text(SUT, encoding="utf-8")
    (tmp_path / "d.yml").write_text(DATASET, encoding="utf-8")
    env = {"ASSAY_API_KEY": "sk-test", "ASSAY_HOME": str(tmp_path / "home")}
    args = ["run", "d.yml", "--sut", "redsut:answer", "--base-url", openai_server.url]
    first = run_assay([*args, "--redact", "-q", "-o", "first.json"], cwd=tmp_path, env=env)
    assert first.returncode == 1, first.stderr
    for fmt in ("json", "md", "html", "junit"):
        again = run_assay(["report", "latest", "-f", fmt], cwd=tmp_path, env=env)
        assert again.returncode == 0, again.stderr
        assert SECRET not in again.stdout, fmt
        assert "redacted" in again.stdout, fmt
    assert json.loads(run_assay(["report", "latest", "-f", "json"], cwd=tmp_path, env=env).stdout)[
        "redacted"
    ]
