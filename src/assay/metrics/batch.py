"""Scores of one metric over a batch of executions, as columns.

A metric may offer ``score_batch(samples, outputs) -> ScoreColumn``: the same numbers its
``score()`` gives row by row, computed for the whole batch at once. A row it cannot score is an
*errored* row (its message in ``errors``, its value NaN), never a 0.0. Deterministic metrics use
this to work on arrays instead of building one object per (sample, metric).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain
from typing import TYPE_CHECKING, Any

from assay.errors import AssayError
from assay.metrics.base import MetricScore

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from assay.data.dataset import Sample
    from assay.data.outputs import Output

_ABSENT: Any = None
_VALUES = operator.methodcaller("values")

Row = tuple[float, Mapping[str, Any]]
"""One row's score as a kernel returns it: the value and the details, no score object."""


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


def row_column(kernel: Callable[[int], Row], size: int) -> ScoreColumn:
    """A column from a per-row kernel: ``kernel(i)`` gives row ``i``'s value and details, and an
    AssayError it raises is row ``i``'s error (anything else propagates, as in
    :func:`score_rows`). Details keys keep the order they first appear in; a key that a scored
    row lacks is ``absent`` there."""
    values = [math.nan] * size
    errors: dict[int, str] = {}
    rows: list[Mapping[str, Any] | None] = [None] * size
    for index in range(size):
        try:
            values[index], rows[index] = kernel(index)
        except AssayError as exc:
            errors[index] = str(exc)
    return _details_column(values, errors, rows)


def failed_column(size: int, message: str) -> ScoreColumn:
    """Every row errored with the same message (an option that ``score`` rejects for every row)."""
    return _details_column([math.nan] * size, dict.fromkeys(range(size), message), [])


def _details_column(
    values: list[float], errors: dict[int, str], rows: list[Mapping[str, Any] | None]
) -> ScoreColumn:
    import numpy as np

    scored = [row for row in rows if row is not None]
    shapes = set(map(tuple, scored))
    if not shapes:  # no row scored
        return ScoreColumn(np.array(values, dtype=np.float64), errors)
    if len(shapes) == 1:  # every row has the same keys in the same order: transpose at C speed
        (keys,) = shapes
        blank = dict.fromkeys(keys, _ABSENT)
        filled = map(_VALUES, [blank if row is None else row for row in rows])
        details = dict(zip(keys, map(list, zip(*filled)))) if keys else {}
        return ScoreColumn(np.array(values, dtype=np.float64), errors, details)
    order = list(dict.fromkeys(chain.from_iterable(scored)))  # as the rows first hold them
    details = {key: [_ABSENT if row is None else row.get(key) for row in rows] for key in order}
    everywhere = set.intersection(*map(set, shapes))
    absent = {
        key: frozenset(i for i, row in enumerate(rows) if row is not None and key not in row)
        for key in order
        if key not in everywhere
    }
    return ScoreColumn(np.array(values, dtype=np.float64), errors, details, absent)


class RowScored:
    """A metric whose score is one per-row kernel, ``row(sample, output) -> (value, details)``:
    ``score`` wraps it in a :class:`MetricScore` and ``score_batch`` fills a column with it, so
    both paths share one definition. A metric overrides :meth:`batch_kernel` to do once per
    batch what ``row`` does per call (options checked, lookups built, parses shared)."""

    def row(self, sample: Sample, output: Output) -> Row:
        raise NotImplementedError

    def score(self, sample: Sample, output: Output) -> MetricScore:
        value, details = self.row(sample, output)
        return MetricScore(value, details)

    def score_batch(self, samples: Sequence[Sample], outputs: Sequence[Output]) -> ScoreColumn:
        """As ``score`` row by row; an AssayError from :meth:`batch_kernel` (an option that
        every row's ``score`` rejects) is every row's error."""
        try:
            kernel = self.batch_kernel(samples, outputs)
        except AssayError as exc:
            return failed_column(len(samples), str(exc))
        return row_column(kernel, len(samples))

    def batch_kernel(
        self, samples: Sequence[Sample], outputs: Sequence[Output]
    ) -> Callable[[int], Row]:
        """Row ``i``'s kernel for this batch; raise an AssayError only where ``score`` raises
        the same error for every row."""
        row = self.row
        return lambda index: row(samples[index], outputs[index])


def same_items(cached: Sequence[Any], given: Sequence[Any]) -> bool:
    """Whether two sequences hold the same objects (identity, element by element): how a
    per-batch memo recognises the runner's per-metric lists of the same executions."""
    return cached is given or (len(cached) == len(given) and all(map(operator.is_, cached, given)))
