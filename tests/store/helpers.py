"""Shared pieces of the store tests: the CLI in a subprocess, and datasets made on the spot."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

SRC = str(Path(__file__).resolve().parents[2] / "src")

# A system under test that answers the upper-cased question, wrong for ids ending in 7 and
# raising for ids ending in 99 (errored rows, stored a row each); SLEEP_S a call when set.
BOT = """
import os, time

def answer(sample_input):
    delay = float(os.environ.get("BOT_SLEEP_S", "0"))
    if delay:
        time.sleep(delay)
    q = sample_input["q"]
    if q.endswith("99"):
        raise ConnectionError("upstream unavailable")
    return "x" if q.endswith("7") else q.upper()
"""


def assay(
    *args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    """``python -m assay ARGS`` in ``cwd`` with no ASSAY_ variable of this process."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")}
    base["PYTHONPATH"] = os.pathsep.join([SRC, str(cwd)])
    return subprocess.run(
        [sys.executable, "-m", "assay", *args],
        cwd=cwd,
        env={**base, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def popen(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")}
    base["PYTHONPATH"] = os.pathsep.join([SRC, str(cwd)])
    return subprocess.Popen(
        [sys.executable, "-m", "assay", *args],
        cwd=cwd,
        env={**base, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def write_project(folder: Path, samples: int, *, name: str = "big") -> None:
    """``{name}.jsonl`` (``samples`` samples), saved outputs for it (``outputs.json``, or
    ``{name}-outputs.json``), and bot.py."""
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / f"{name}.jsonl").open("w", encoding="utf-8") as out:
        for i in range(samples):
            sample = {
                "id": f"s{i}",
                "input": {"q": f"q{i}"},
                "expected_output": f"Q{i}",
                "metadata": {"tags": ["even" if i % 2 == 0 else "odd"]},
            }
            out.write(json.dumps(sample) + "\n")
    outputs = [{"id": f"s{i}", "output": f"Q{i}" if i % 3 else "no"} for i in range(samples)]
    named = "outputs.json" if name == "big" else f"{name}-outputs.json"
    (folder / named).write_text(json.dumps({"outputs": outputs}), encoding="utf-8")
    (folder / "bot.py").write_text(BOT, encoding="utf-8")


def comparable(report: dict[str, Any]) -> dict[str, Any]:
    """A report without what differs between two runs of the same work (ids, clocks)."""
    return {
        "rows": report["rows"],
        "metrics": report["metrics"],
        "failures": [{**f, "message": f["message"]} for f in report["failures"]],
        "summary": report["summary"],
    }
