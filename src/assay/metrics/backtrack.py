"""The backtracking ``regex`` engine, run in a child process under hard limits.

Patterns RE2 cannot take (see :mod:`assay.metrics.pattern`) may backtrack exponentially,
recurse until the C stack overflows, or allocate without bound. Each such match runs in a fresh
interpreter that runs this file as a script (it imports only ``regex`` and the standard
library, before its limits start), limits its own address space, CPU time and core dumps, and arms a
real-time timer whose default action kills it at the wall-clock limit even inside C code. The worst
a pattern can do is end as a message that the metric records as that sample's failure.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import regex

MEMORY_BUDGET_BYTES = 256 * 1024 * 1024  # on top of what the fresh interpreter already maps
START_LIMIT_S = 60.0  # interpreter start-up on a loaded machine, before the pattern's clock


def match_in_worker(
    body: str, flags: int, anchored: bool, text: str, timeout_s: float
) -> bool | str:
    """Whether ``body`` matches ``text`` (compile included in ``timeout_s``), or why not known."""
    request = {"body": body, "flags": flags, "anchored": anchored, "text": text}
    request["timeout_s"] = timeout_s
    try:
        done = subprocess.run(
            [sys.executable, "-I", str(Path(__file__))],
            input=json.dumps(request).encode("ascii"),
            capture_output=True,
            timeout=START_LIMIT_S + timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return timed_out(timeout_s)
    except OSError as exc:
        return f"the regex worker process could not start: {exc.strerror or exc}"
    if done.returncode == 0:
        try:
            outcome: Any = json.loads(done.stdout)
        except ValueError:
            outcome = None
        if isinstance(outcome, (bool, str)):
            return outcome
    return _stopped(done.returncode, timeout_s)


def timed_out(timeout_s: float) -> str:
    return f"regex did not finish within {timeout_s:g}s (catastrophic backtracking?)"


def _stopped(returncode: int, timeout_s: float) -> str:
    if returncode == -signal.SIGALRM:
        return timed_out(timeout_s)
    if returncode == -signal.SIGXCPU:
        return f"regex used more than {int(timeout_s) + 1}s of CPU time"
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"the backtracking regex engine crashed on this pattern ({name})"
    return f"the backtracking regex engine stopped on this pattern (exit {returncode})"


# --------------------------------------------------------------------------- child side


def _serve() -> None:
    """Read one request from stdin, limit this process, match, print one JSON outcome."""
    request = json.loads(sys.stdin.buffer.read())
    timeout_s = float(request["timeout_s"])
    _limit_resources(timeout_s)
    outcome = _match(request, timeout_s)
    # The bound is for the pattern: once it has answered, a slow exit on a loaded machine
    # (writing, the interpreter's teardown) must not turn the answer into a timeout.
    signal.setitimer(signal.ITIMER_REAL, 0)
    sys.stdout.write(json.dumps(outcome) + "\n")
    sys.stdout.flush()
    os._exit(0)


def _match(request: dict[str, Any], timeout_s: float) -> bool | str:
    try:
        compiled = regex.compile(request["body"], int(request["flags"]))
        finder = compiled.match if request["anchored"] else compiled.search
        return finder(request["text"], timeout=timeout_s) is not None
    except regex.error as exc:
        return f"invalid regex pattern: {exc}"
    except TimeoutError:
        return timed_out(timeout_s)
    except MemoryError:
        return f"regex needs more than {MEMORY_BUDGET_BYTES >> 20} MiB of memory"
    except RecursionError:
        return "regex pattern is nested too deeply"
    except Exception as exc:
        return f"the backtracking regex engine failed: {type(exc).__name__}"


def _limit_resources(timeout_s: float) -> None:
    cpu = int(timeout_s) + 1
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    mapped = _mapped_bytes()
    if mapped is not None:
        limit = mapped + MEMORY_BUDGET_BYTES
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    signal.signal(signal.SIGALRM, signal.SIG_DFL)  # the kernel ends us, even inside C code
    signal.setitimer(signal.ITIMER_REAL, timeout_s)


def _mapped_bytes() -> int | None:
    """This process's address-space size (Linux); None where /proc is not there."""
    try:
        pages = int(Path("/proc/self/statm").read_text(encoding="ascii").split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return pages * resource.getpagesize()


if __name__ == "__main__":
    _serve()
