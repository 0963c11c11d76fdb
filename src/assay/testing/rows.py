"""One dataset sample as a test: its answer, its report rows, and the check that fails it."""

from __future__ import annotations

from dataclasses import dataclass, field

from assay.data.dataset import Sample
from assay.data.outputs import Output
from assay.data.results import threshold_for
from assay.report.model import Row
from assay.testing.text import show


@dataclass(repr=False)
class AssayRow:
    """A sample's outcome: the answer it got and one report row per repetition."""

    sample: Sample
    output: Output | None
    rows: list[Row]
    thresholds: dict[str, float] = field(default_factory=dict)
    checked: bool = field(default=False, compare=False)

    def __repr__(self) -> str:
        return f"AssayRow({self.id!r}, passed={self.passed})"

    @property
    def id(self) -> str:
        return self.sample.id

    @property
    def passed(self) -> bool:
        """Every repetition scored at or above each metric's threshold, with no error."""
        return bool(self.rows) and all(row.passed for row in self.rows)

    def scores(self, repetition: int = 0) -> dict[str, float]:
        """Metric name -> score of one repetition, counted from 0 (errored metrics are absent)."""
        for row in self.rows:
            if row.repetition == repetition:
                return {name: score.score for name, score in row.scores.items()}
        raise KeyError(repetition)

    def problems(self) -> list[str]:
        """One line per failed or errored metric (per repetition when there are several)."""
        lines: list[str] = []
        several = len(self.rows) > 1
        for row in self.rows:
            prefix = f"repetition {row.repetition}: " if several else ""
            for name, message in row.errors.items():
                lines.append(f"{prefix}{name} errored: {message}")
            for name, score in row.scores.items():
                if not score.passed:
                    limit = threshold_for(self.thresholds, name)
                    lines.append(
                        f"{prefix}{name} failed: scored {score.score:.4f} (threshold {limit:.4f})"
                    )
        return lines

    def failure_message(self) -> str:
        """What a person fixing the sample needs: what failed, input, expected and actual."""
        problems = self.problems() or ["no metric scored this sample"]
        actual = show(self.output.text) if self.output is not None else "(no answer)"
        lines = [f"sample '{self.id}' did not pass:"]
        lines += [f"  - {line}" for line in problems]
        lines += [
            f"  input:    {show(self.sample.input)}",
            f"  expected: {show(self.sample.expected_output)}",
            f"  actual:   {actual}",
        ]
        return "\n".join(lines)

    def check(self) -> None:
        """Raise ``AssertionError`` with :meth:`failure_message` unless the sample passed."""
        __tracebackhide__ = True
        self.checked = True
        if not self.passed:
            raise AssertionError(self.failure_message())
