"""A run-level bound on the backtracking engine: a pool of limited workers and a time budget.

Each backtracking match runs in a limited child process (:mod:`assay.metrics.backtrack`); on
a7b0681 they ran one at a time, a child per sample, with no bound on their sum (2,000 samples
of ``(\\w)\\1`` took 177 s). A :class:`BacktrackBudget`, one per run (the ``regex`` metric
object holds it), runs a batch's matches on at most :data:`WORKERS` children at once and stops
starting new ones once the run has spent :data:`RUN_BUDGET_S` seconds of wall-clock time in
them: what is left is errored, each row saying why. :meth:`BacktrackBudget.note` is the one
line the report carries: how many patterns fell back, why, and what the budget cut.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Final

WORKERS: Final = max(1, min(4, os.cpu_count() or 1))
RUN_BUDGET_S: Final = 120.0

Job = tuple[str, int, bool, str]  # pattern body, flags, anchored, text
Match = Callable[[str, int, bool, str, float], "bool | str"]


@dataclass
class BacktrackBudget:
    """What one run may spend in the backtracking engine, and what it did spend."""

    seconds: float = RUN_BUDGET_S
    workers: int = WORKERS
    match: Match | None = None  # default: the limited child process of assay.metrics.backtrack
    spent: float = 0.0
    matches: int = 0
    cut: int = 0
    reasons: dict[str, str] = field(default_factory=dict)  # pattern body -> why it fell back
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __getstate__(self) -> dict[str, object]:
        """Picklable without its lock (a Ray worker gets a copy, with a lock of its own)."""
        state = dict(self.__dict__)
        del state["_lock"]
        return state

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def run(self, jobs: Sequence[Job], timeout_s: float, reason: str) -> list[bool | str]:
        """Each job's outcome (a match, or why there is none), on a bounded pool of workers."""
        for body, *_ in jobs:
            self.reasons.setdefault(body, reason)
        if len(jobs) == 1:
            return [self._one(jobs[0], timeout_s)]
        # Here, not at import: every lexical run imports this module, few need the pool.
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(min(self.workers, len(jobs))) as pool:
            return list(pool.map(lambda job: self._one(job, timeout_s), jobs))

    def _one(self, job: Job, timeout_s: float) -> bool | str:
        with self._lock:
            left = self.seconds - self.spent
            if left <= 0:
                self.cut += 1
                return (
                    f"the run's time budget for the backtracking regex engine "
                    f"({self.seconds:g}s) is spent; not matched"
                )
        started = time.monotonic()
        try:
            return self._matcher()(*job, min(timeout_s, max(left, 0.01)))
        finally:
            with self._lock:
                self.spent += time.monotonic() - started
                self.matches += 1

    def _matcher(self) -> Match:
        if self.match is not None:
            return self.match
        # Here, not at import: subprocess and the worker load only when a pattern falls back.
        from assay.metrics.backtrack import match_in_worker

        return match_in_worker

    def note(self) -> str | None:
        """One line for the report: what fell back to the backtracking engine, and why."""
        if not self.reasons:
            return None
        why = sorted(set(self.reasons.values()))
        line = (
            f"regex: {len(self.reasons)} pattern(s) ran in the backtracking engine "
            f"({'; '.join(why)}): {self.matches} match(es) in {self.spent:.1f}s on up to "
            f"{self.workers} workers"
        )
        if self.cut:
            line += f"; {self.cut} not matched: the run's {self.seconds:g}s budget was spent"
        return line
