"""The one timer every benchmark here uses: best wall time over interleaved rounds."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from typing import Any


def race(
    repeat: int, candidates: dict[str, Callable[[], Any]], *, collect: bool = True
) -> dict[str, float]:
    """Best wall time per candidate. Rounds interleave the candidates so that load drift on a
    shared machine affects them alike; ``collect=False`` pauses the cyclic GC during each run,
    as timeit does."""
    best = dict.fromkeys(candidates, float("inf"))
    for _ in range(repeat):
        for name, fn in candidates.items():
            gc.collect()
            if not collect:
                gc.disable()
            try:
                started = time.perf_counter()
                fn()
                best[name] = min(best[name], time.perf_counter() - started)
            finally:
                gc.enable()
    return best
