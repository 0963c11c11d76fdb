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


def rounds_verdict(ratios: list[float], bound: float = 1.0) -> str:
    """In how many rounds a CPU ratio was under ``bound``, the 95 % Wilson interval of that
    share, and whether "under ``bound``" is supported (the interval above one half), refuted
    (below it) or not resolved: a median ratio moved by this machine's noise (rounds from 0.6
    to 1.5 for the same two commands here) is not, alone, a claim."""
    from assay.report.statistics import wilson_interval

    under = sum(ratio < bound for ratio in ratios)
    share = wilson_interval(under, len(ratios))
    low, high = share.low, share.high
    finding = "supported" if low > 0.5 else "refuted" if high < 0.5 else "not resolved"
    return (
        f"under {bound:g}x in {under} of {len(ratios)} rounds (95 % {low:.2f}-{high:.2f}): "
        f"{finding} by these rounds"
    )
