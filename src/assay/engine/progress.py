"""Run progress on stderr: a rich bar on a terminal, plain lines in a log (CI).

A terminal gets the live bar. Anywhere else (a CI log, a pipe, a file) carriage-return
spinners would turn into thousands of garbled lines, so progress is a plain line such as
``assay: progress 120/1000 executions (12%), 3 failed, 1 errored, 14 s`` each time another
10 % of the executions is done or 10 s have passed, whichever comes first, at most one a
second. The 10 s line comes even when nothing finished (a slow system under test), so a CI log
shows the run is alive. A run over within its first second prints none: the summary says it all.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal, TextIO

from assay.data.results import ExecutionResult, Thresholds

Mode = Literal["bar", "lines", "off"]


def progress_mode(*, quiet: bool, stream: TextIO | None = None) -> Mode:
    """``off`` with --quiet, the bar on a terminal, plain lines elsewhere."""
    if quiet:
        return "off"
    target = stream if stream is not None else sys.stderr
    isatty = getattr(target, "isatty", None)
    return "bar" if callable(isatty) and isatty() else "lines"


@dataclass
class LineSchedule:
    """When the next plain line is due: every ``step`` of the total or ``every_s`` seconds."""

    step: float = 0.10
    every_s: float = 10.0
    quiet_s: float = 1.0
    started: float = 0.0
    last_at: float = 0.0
    last_done: int = 0

    def due(self, done: int, total: int, now: float) -> bool:
        """Whether a line is due after ``done`` of ``total`` executions at ``now``."""
        if now - self.started < self.quiet_s:
            return False
        if now - self.last_at >= self.every_s:
            return True  # also with nothing new: the run is alive
        if done == self.last_done:
            return False
        if now - self.last_at < self.quiet_s and done < total:
            return False
        if done >= total > 0:
            return True
        if total <= 0:
            return False
        return int(done / (total * self.step)) > int(self.last_done / (total * self.step))

    def mark(self, done: int, now: float) -> None:
        self.last_at, self.last_done = now, done


@dataclass
class Counts:
    done: int = 0
    failed: int = 0
    errored: int = 0

    def add(self, result: ExecutionResult, thresholds: Thresholds | None) -> None:
        """Count one execution with the report's words: errored, else failed, else passed."""
        self.done += 1
        if result.sut_error is not None or any(s.error is not None for s in result.scores.values()):
            self.errored += 1
        elif not result.passed(thresholds):
            self.failed += 1


def progress_line(counts: Counts, total: int, elapsed_s: float) -> str:
    """``assay: progress 12/30 executions (40%), 2 failed, 0 errored, 3 s``."""
    share = f" ({100 * counts.done // total}%)" if total > 0 else ""
    of = f"/{total}" if total > 0 else ""
    return (
        f"assay: progress {counts.done}{of} executions{share}, {counts.failed} failed, "
        f"{counts.errored} errored, {elapsed_s:.0f} s"
    )


class Progress:
    """Progress of one run on stderr, in the form :func:`progress_mode` chose."""

    def __init__(
        self,
        mode: Mode,
        *,
        thresholds: Thresholds | None = None,
        stream: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
        tick_s: float = 1.0,
    ) -> None:
        self.mode = mode
        self.tick_s = tick_s
        self._lock = threading.Lock()
        self.thresholds = thresholds
        self.stream = stream
        self.clock = clock
        self.counts = Counts()
        self.schedule = LineSchedule()
        self._total: Callable[[], int] = lambda: 0
        self._bar: Any = None
        self._task: Any = None

    @contextmanager
    def session(self, total: Callable[[], int]) -> Iterator[None]:
        """Show progress while the block runs; ``total`` is read as the run learns it."""
        self._total = total
        self.schedule.started = self.schedule.last_at = self.clock()
        if self.mode == "lines":
            with self._heartbeat():
                yield
        elif self.mode == "bar":
            with self._rich_bar():
                yield
        else:
            yield

    @contextmanager
    def _heartbeat(self) -> Iterator[None]:
        """A daemon thread that checks every ``tick_s`` whether the 10 s line is due."""
        stop = threading.Event()

        def beat() -> None:
            while not stop.wait(self.tick_s):
                self.tick()

        thread = threading.Thread(target=beat, name="assay-progress", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()

    @contextmanager
    def _rich_bar(self) -> Iterator[None]:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, TimeRemainingColumn
        from rich.progress import Progress as RichProgress

        with RichProgress(
            "[progress.description]{task.description}",
            BarColumn(),
            MofNCompleteColumn(),
            TimeRemainingColumn(),
            console=Console(stderr=True),
            transient=True,
        ) as bar:
            self._bar = bar
            self._task = bar.add_task("scoring", total=None)
            try:
                yield
            finally:
                self._bar = None

    def advance(self, results: Sequence[ExecutionResult]) -> None:
        """Executions finished (one, or a chunk of saved outputs); off: nothing is counted."""
        if self.mode == "off":
            return
        with self._lock:
            for result in results:
                self.counts.add(result, self.thresholds)
        if self._bar is not None:
            self._bar.update(self._task, advance=len(results), total=self._total() or None)
        elif self.mode == "lines":
            self.tick()

    def tick(self) -> None:
        """Print a plain line if one is due now (called per result and by the heartbeat)."""
        with self._lock:
            now, total = self.clock(), self._total()
            if not self.schedule.due(self.counts.done, total, now):
                return
            self.schedule.mark(self.counts.done, now)
            line = progress_line(self.counts, total, now - self.schedule.started)
            stream = self.stream if self.stream is not None else sys.stderr
            stream.write(line + "\n")
            stream.flush()
