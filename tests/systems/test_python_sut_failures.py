"""What a Python ``--sut`` does on one sample ends as that sample's failure, through the CLI.

Each case runs ``python -m assay run`` in a fresh process: a stray ``BaseException``, a hang
past ``--sut-timeout`` or an answer that cannot be read is a row with an error, never a
traceback, a hang or a run left unfinished.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"

MODULE = """
import asyncio, time

class MyBase(BaseException):
    pass

def my_base(inp): raise MyBase("boom")
def generator_exit(inp): raise GeneratorExit()
def cancelled(inp): raise asyncio.CancelledError()
async def a_cancelled(inp): raise asyncio.CancelledError()
async def a_generator_exit(inp): raise GeneratorExit()
async def a_my_base(inp): raise MyBase("boom")
def interrupt(inp): raise KeyboardInterrupt()
async def a_hang(inp): await asyncio.sleep(10**6)
def hang(inp): time.sleep(10**6)
def quick(inp): return "a"

class BadStr(str):
    def __str__(self): raise RuntimeError("boom")
    def __len__(self): raise RuntimeError("boom len")

class FineStr(str):
    pass

def bad_str(inp): return BadStr("a")
def bad_str_context(inp): return {"output": "a", "contexts": [BadStr("c")]}
def fine_str(inp): return FineStr("a")
def surrogate(inp): return "a\\ud800b"
def surrogate_id(inp): return {"output": "a", "retrieved": ["d\\ud800"]}
def surrogate_text(inp): return {"output": "a", "retrieved": [{"id": "d", "text": "\\udfff"}]}
def surrogate_context(inp): return {"output": "a", "contexts": ["\\ud800"]}
def surrogate_trajectory(inp): return {"output": "a", "trajectory": {"note": "\\ud800"}}
"""

DATASET = """
name: sut-failures
metrics: [exact-match]
samples: [{id: s1, input: {q: x}, expected_output: a}]
"""


_FLAGS = ("-f", "json", "--store", "runs.db", "-q")


def _run(tmp_path: Path, function: str, *flags: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "sut_mod.py").write_text(textwrap.dedent(MODULE), encoding="utf-8")
    (tmp_path / "d.yml").write_text(DATASET, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(SRC), "ASSAY_HOME": str(tmp_path / "home")}
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "assay",
            "run",
            "d.yml",
            "--sut",
            f"sut_mod:{function}",
            *_FLAGS,
            *flags,
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def _failure(result: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    (failure,) = json.loads(result.stdout)["failures"]
    assert (failure["sample_id"], failure["stage"]) == ("s1", "system-under-test")
    return dict(failure)


@pytest.mark.parametrize(
    ("function", "raised"),
    [
        ("my_base", "MyBase"),
        ("generator_exit", "GeneratorExit"),
        ("cancelled", "CancelledError"),
        ("a_cancelled", "CancelledError"),
        ("a_generator_exit", "GeneratorExit"),
        ("a_my_base", "MyBase"),
    ],
)
def test_a_stray_base_exception_fails_the_sample(
    tmp_path: Path, function: str, raised: str
) -> None:
    assert f"raised {raised}" in _failure(_run(tmp_path, function))["message"]


def test_keyboard_interrupt_from_the_sut_still_stops_the_run(tmp_path: Path) -> None:
    result = _run(tmp_path, "interrupt")
    assert result.returncode == 130, result.stderr


@pytest.mark.parametrize("function", ["a_hang", "hang"])
def test_sut_timeout_fails_a_hanging_sample_and_the_run_ends(tmp_path: Path, function: str) -> None:
    """A sync SUT's thread cannot be stopped: the exit must not wait for it either."""
    result = _run(tmp_path, function, "--sut-timeout", "0.5")
    assert _failure(result)["message"] == "did not answer within 0.5 s (--sut-timeout)"


def test_sut_timeout_leaves_quick_answers_alone(tmp_path: Path) -> None:
    result = _run(tmp_path, "quick", "--sut-timeout", "30")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["failures"] == []


@pytest.mark.parametrize(
    ("function", "message"),
    [
        ("bad_str", "returned text in 'output' whose str() raised RuntimeError: boom"),
        ("bad_str_context", "returned text in 'contexts' whose str() raised RuntimeError: boom"),
        ("surrogate", "returned text in 'output' that is not valid Unicode"),
        ("surrogate_id", "returned text in 'retrieved' that is not valid Unicode"),
        ("surrogate_text", "returned text in 'retrieved' that is not valid Unicode"),
        ("surrogate_context", "returned text in 'contexts' that is not valid Unicode"),
        ("surrogate_trajectory", "returned text in 'trajectory' that is not valid Unicode"),
    ],
)
def test_an_unwritable_answer_fails_the_sample_naming_the_field(
    tmp_path: Path, function: str, message: str
) -> None:
    assert _failure(_run(tmp_path, function))["message"].startswith(message)


def test_a_plain_str_subclass_is_read_as_its_text(tmp_path: Path) -> None:
    result = _run(tmp_path, "fine_str")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["failures"] == []
