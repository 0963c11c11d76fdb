"""The one timer every benchmark here uses: best wall time over interleaved rounds; and the
bytecode step the whole-process benchmarks take first."""

from __future__ import annotations

import compileall
import gc
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "assay"


def compile_package() -> str:
    """Compile assay's modules into their ``__pycache__`` once, as pip does at install, and say
    so. Python reads an existing .pyc even under PYTHONDONTWRITEBYTECODE=1 (it only stops
    writing them), so without this step a child process recompiles every module it imports
    whenever the environment sets that variable, which no installed package does."""
    started = time.perf_counter()
    ok = compileall.compile_dir(PACKAGE, quiet=1)
    state = "done" if ok else "FAILED for some modules"
    return (
        f"bytecode: compiled src/assay into __pycache__ first, as an install does "
        f"({state}, {time.perf_counter() - started:.2f} s)"
    )


def race(
    repeat: int,
    candidates: dict[str, Callable[[], Any]],
    *,
    collect: bool = True,
    clock: Callable[[], float] = time.perf_counter,
) -> dict[str, float]:
    """Best wall time per candidate. Rounds interleave the candidates so that load drift on a
    shared machine affects them alike; ``collect=False`` pauses the cyclic GC during each run,
    as timeit does. ``clock=time.process_time`` times this process's CPU seconds instead: the
    time other processes hold the CPU is left out (steadier on a busy machine)."""
    best = dict.fromkeys(candidates, float("inf"))
    for _ in range(repeat):
        for name, fn in candidates.items():
            gc.collect()
            if not collect:
                gc.disable()
            try:
                started = clock()
                fn()
                best[name] = min(best[name], clock() - started)
            finally:
                gc.enable()
    return best
