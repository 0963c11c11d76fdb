"""``python -m assay`` leaves through :func:`assay.cli.script_main`: exit handlers run, the
standard streams are flushed and the status is ``sys.exit``'s; only the interpreter's teardown
is skipped. Checked in fresh interpreters, against what Python itself does with the same
``sys.exit`` argument.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
PROBE = """
import atexit, sys, threading, time
import assay.cli as cli
atexit.register(print, "exit handler ran")
print("buffered line")  # stdout is a pipe: block-buffered, written only by a flush
ARGUMENT = {argument}
if {thread}:
    threading.Thread(target=lambda: (time.sleep(0.3), print("thread finished"))).start()

def main():
    if ARGUMENT != "return":
        sys.exit(ARGUMENT)

cli.main = main
{entry}
"""


def _run(argument: object, *, entry: str, thread: bool = False) -> subprocess.CompletedProcess[str]:
    code = PROBE.format(argument=repr(argument), thread=thread, entry=entry)
    return subprocess.run(
        [sys.executable, "-c", code],
        env={"PYTHONPATH": str(SRC), "PATH": ""},
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize("argument", [0, 1, 2, 130, 256, -1, None, True, "return", "a message"])
def test_the_quick_exit_ends_as_sys_exit_would(argument: object) -> None:
    quick = _run(argument, entry="cli.script_main()")
    usual = _run(argument, entry="main()" if argument == "return" else "sys.exit(ARGUMENT)")
    assert (quick.returncode, quick.stdout, quick.stderr) == (
        usual.returncode,
        usual.stdout,
        usual.stderr,
    )
    assert quick.stdout == "buffered line\nexit handler ran\n"


def test_a_running_non_daemon_thread_is_waited_for() -> None:
    done = _run(0, entry="cli.script_main()", thread=True)
    assert done.returncode == 0
    assert done.stdout == "buffered line\nthread finished\nexit handler ran\n"


def test_python_m_assay_prints_and_exits_like_before(tmp_path: Path) -> None:
    version = subprocess.run(
        [sys.executable, "-m", "assay", "--version"],
        env={"PYTHONPATH": str(SRC), "PATH": ""},
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert (version.returncode, version.stdout) == (0, "assay 0.1.0\n")
    missing = subprocess.run(
        [sys.executable, "-m", "assay", "validate", str(tmp_path / "none.json")],
        env={"PYTHONPATH": str(SRC), "PATH": ""},
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert missing.returncode == 2
    assert missing.stderr.startswith("assay: error:") and "Traceback" not in missing.stderr
