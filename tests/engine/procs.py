"""Helpers to run ``assay`` in a subprocess with a clean environment."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"


def assay_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for an ``assay`` subprocess: no ASSAY_*/OPENAI_* leaking in from outside."""
    # PYTEST_CURRENT_TEST holds the test id, which can pass the kernel's 128 KiB limit on one
    # environment string (a parameter id made of a long text) and make the exec fail.
    leak = ("ASSAY_", "OPENAI_", "PYTEST_CURRENT_TEST")
    env = {k: v for k, v in os.environ.items() if not k.startswith(leak)}
    env["PYTHONPATH"] = str(SRC) + os.pathsep + env.get("PYTHONPATH", "")
    env["NO_PROXY"] = "127.0.0.1,localhost"
    env.update(extra or {})
    return env


def assay_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "assay", *args]


def run_assay(
    args: Sequence[str], *, cwd: Path, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        assay_command(*args),
        cwd=cwd,
        env=assay_env(env),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
