"""Scores of one metric over a batch of executions, as columns.

A metric may offer ``score_batch(samples, outputs) -> ScoreColumn``: the same numbers its
``score()`` gives row by row, computed for the whole batch at once. A row it cannot score is an
*errored* row (its message in ``errors``, its value NaN), never a 0.0. Deterministic metrics use
this to work on arrays instead of building one object per (sample, metric).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from assay.errors import AssayError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from assay.dataset import Sample
    from assay.metrics.base import MetricScore
    from assay.outputs import Output

_ABSENT: Any = None


@dataclass(frozen=True, slots=True)
class ScoreColumn:
    """One metric's scores for a batch: ``values[i]`` is NaN exactly when ``i in errors``.

    ``details`` holds one column per details key; ``details_at(i)`` rebuilds row ``i``'s
    mapping (keys absent from that row are left out).
    """

    values: npt.NDArray[np.float64]
    errors: Mapping[int, str] = field(default_factory=dict)
    details: Mapping[str, Sequence[Any]] = field(default_factory=dict)
    absent: Mapping[str, frozenset[int]] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.values)

    def details_at(self, index: int) -> dict[str, Any]:
        if index in self.errors:
            return {}
        return {
            key: column[index]
            for key, column in self.details.items()
            if index not in self.absent.get(key, ())
        }


class ColumnBuilder:
    """Fills a :class:`ScoreColumn` row by row where a kernel has to fall back to ``score()``."""

    def __init__(self, size: int) -> None:
        import numpy as np

        self.size = size
        self.values = np.full(size, np.nan)
        self.errors: dict[int, str] = {}
        self.details: dict[str, list[Any]] = {}
        self.absent: dict[str, set[int]] = {}

    def put_column(self, key: str, column: Sequence[Any]) -> None:
        """A whole details column from a kernel (call before any ``put``)."""
        self.details[key] = column if isinstance(column, list) else list(column)

    def put(self, index: int, score: MetricScore) -> None:
        """Row ``index`` from a per-sample ``score()`` result."""
        self.values[index] = score.value
        self.errors.pop(index, None)
        for key in self.details.keys() - score.details.keys():
            self.absent.setdefault(key, set()).add(index)
        for key, value in score.details.items():
            column = self.details.get(key)
            if column is None:
                column = self.details[key] = [_ABSENT] * self.size
                self.absent[key] = set(range(self.size))
            column[index] = value
            if key in self.absent:
                self.absent[key].discard(index)

    def fail(self, index: int, message: str) -> None:
        self.values[index] = float("nan")
        self.errors[index] = message

    def build(self) -> ScoreColumn:
        absent = {key: frozenset(rows) for key, rows in self.absent.items() if rows}
        return ScoreColumn(self.values, self.errors, self.details, absent)


def score_rows(
    score: Callable[[Sample, Output], MetricScore],
    samples: Sequence[Sample],
    outputs: Sequence[Output],
    rows: Sequence[int],
    builder: ColumnBuilder,
) -> None:
    """Score ``rows`` one by one with ``score`` (a metric's own per-sample path).

    An AssayError (MetricError included) becomes that row's error; anything else propagates, and the
    runner then scores the whole batch row by row, so a batch never reports differently from
    ``score()``.
    """
    for index in rows:
        try:
            builder.put(index, score(samples[index], outputs[index]))
        except AssayError as exc:
            builder.fail(index, str(exc))
