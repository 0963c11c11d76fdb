"""The ``assay`` command lets numpy's idle OpenBLAS workers sleep at once
(:func:`assay.cli.let_idle_blas_threads_sleep`), in its own process, before numpy loads, and
keeps a value the user set."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from assay.cli import BLAS_TIMEOUT_ENV, let_idle_blas_threads_sleep

SRC = Path(__file__).resolve().parents[2] / "src"
PROBE = """
import os, sys
import assay.cli as cli

def main():
    print(os.environ.get("OPENBLAS_THREAD_TIMEOUT"), "numpy" in sys.modules)

cli.main = main
cli.script_main()
"""


def test_an_unset_timeout_becomes_the_shortest() -> None:
    environ: dict[str, str] = {}
    let_idle_blas_threads_sleep(environ)
    assert environ == {BLAS_TIMEOUT_ENV: "4"}


def test_a_timeout_the_user_set_is_kept() -> None:
    environ = {BLAS_TIMEOUT_ENV: "28"}
    let_idle_blas_threads_sleep(environ)
    assert environ == {BLAS_TIMEOUT_ENV: "28"}


@pytest.mark.parametrize(("given", "seen"), [(None, "4"), ("30", "30")])
def test_the_command_sets_it_before_numpy_loads(given: str | None, seen: str) -> None:
    env = {"PYTHONPATH": str(SRC), "PATH": ""}
    if given is not None:
        env[BLAS_TIMEOUT_ENV] = given
    done = subprocess.run(
        [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [seen, "False"]
