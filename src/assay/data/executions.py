"""What a run executes and what comes back: executions planned in dataset order, and a
chunk of finished ones with each metric's outcomes as a column.

An :class:`Execution` is one (sample, repetition) at its dataset position. The synchronous
runner scores executions a chunk at a time and hands a :class:`ResultChunk` on, so the report
folds scores in as arrays (see :meth:`assay.report.aggregate.ReportBuilder.add_chunk`).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, overload

from assay.data.dataset import Sample
from assay.data.outputs import Output
from assay.data.results import ExecutionResult, ScoreResult, Thresholds, passes, threshold_for

if TYPE_CHECKING:  # numpy loads where first used: a run's first requests do not wait for it
    import numpy as np
    import numpy.typing as npt


class Execution(NamedTuple):
    """One (sample, repetition) at its position in the dataset (a tuple: one is built per row
    of a run, about three times as fast as a frozen dataclass)."""

    position: int
    sample: Sample
    repetition: int


@dataclass(frozen=True, slots=True)
class MetricColumn:
    """One metric's outcomes over a chunk: the rows it scored (indices into the chunk), their
    values (NaN where the row errored) and which rows errored."""

    rows: npt.NDArray[np.intp]
    values: npt.NDArray[np.float64]
    errored: npt.NDArray[np.bool_]

    @classmethod
    def of(cls, rows: Sequence[int], results: Sequence[ScoreResult]) -> MetricColumn:
        import numpy as np

        values = np.fromiter(
            (math.nan if r.error is not None or r.value is None else r.value for r in results),
            dtype=np.float64,
            count=len(results),
        )
        errored = np.fromiter(
            (r.error is not None or r.value is None for r in results),
            dtype=np.bool_,
            count=len(results),
        )
        return cls(np.asarray(rows, dtype=np.intp), values, errored)

    @classmethod
    def of_plain(cls, rows: Sequence[int], scores: PlainScores) -> MetricColumn:
        """The column of outcomes that all scored (none errored)."""
        import numpy as np

        values = np.array(scores.values, dtype=np.float64)
        return cls(np.asarray(rows, dtype=np.intp), values, np.zeros(len(values), dtype=np.bool_))


class DetailRows(Sequence[dict[str, Any]]):
    """Rows' details kept as the metric's batch gave them, a column per key (every row has
    every key): a row's dict is built only when it is read (a failing row's reason), and the
    store encodes the rows from the columns (:func:`assay.store.schema.encode_scored_columns`).
    """

    __slots__ = ("columns", "keys", "size")

    def __init__(self, keys: list[str], columns: list[Sequence[Any]], size: int) -> None:
        self.keys = keys
        self.columns = columns
        self.size = size

    def __len__(self) -> int:
        return self.size

    @overload
    def __getitem__(self, index: int) -> dict[str, Any]: ...

    @overload
    def __getitem__(self, index: slice) -> list[dict[str, Any]]: ...

    def __getitem__(self, index: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if isinstance(index, slice):
            return list(self)[index]
        if not -self.size <= index < self.size:
            raise IndexError(index)
        return {key: column[index] for key, column in zip(self.keys, self.columns)}

    def __iter__(self) -> Iterator[dict[str, Any]]:
        keys = self.keys
        if not keys:
            return ({} for _ in range(self.size))
        return (dict(zip(keys, row)) for row in zip(*self.columns))

    def __eq__(self, other: object) -> bool:
        """Equal to a sequence of the same rows, as the list of dicts it stands for is."""
        if not isinstance(other, Sequence) or isinstance(other, (str, bytes)):
            return NotImplemented
        return len(other) == self.size and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]  # a list's rows: unhashable, as a list is


@dataclass(frozen=True, slots=True)
class PlainScores:
    """One metric's outcomes over the rows it scored, every one a value in [0, 1] with plain
    JSON details (scalars; floats finite and under ``ORJSON_FLOAT_BOUND``: see
    :func:`assay.engine.scoring.score_plain`): no result object per row."""

    values: list[float]
    details: Sequence[dict[str, Any]]  # a list, or DetailRows (the batch's columns)


Outcomes = PlainScores | list[ScoreResult]
"""One metric's outcomes over the rows it scored: plain columns, or a result per row."""


@dataclass(slots=True)
class ResultChunk:
    """Finished executions scored together: per row its answer (an error message when the
    system under test failed), per metric its outcomes on the rows it scored (``scored``, in
    the metrics' order) and a :class:`MetricColumn`.

    ``clean`` says no row has a system-under-test failure, a metric error or missing score, or
    provider usage, so no row needs looking at for them (False: look). Each row's
    :class:`ExecutionResult` is built only when asked for (:attr:`results`, :meth:`result_at`):
    a clean chunk of saved outputs goes to the store and the report from its columns.
    """

    executions: Sequence[Execution]
    answers: Sequence[Output | str]
    scored: list[tuple[str, list[int], Outcomes]]
    columns: dict[str, MetricColumn]
    clean: bool = False
    _results: list[ExecutionResult] | None = None

    @property
    def results(self) -> list[ExecutionResult]:
        """Each row's result, in row order (built on first use)."""
        if self._results is None:
            rows: list[dict[str, ScoreResult]] = [{} for _ in self.executions]
            for name, picked, outcomes in self.scored:
                for index, result in zip(picked, _score_results(outcomes)):
                    rows[index][name] = result
            self._results = [
                _execution_result(execution, answer, scores)
                for execution, answer, scores in zip(self.executions, self.answers, rows)
            ]
        return self._results

    def result_at(self, index: int) -> ExecutionResult:
        """Row ``index``'s result, without building the other rows'."""
        if self._results is not None:
            return self._results[index]
        scores = {}
        for name, picked, outcomes in self.scored:
            at = index if len(picked) == len(self.executions) else _find(picked, index)
            if at is not None:
                scores[name] = _score_result(outcomes, at)
        return _execution_result(self.executions[index], self.answers[index], scores)

    def full_columns(self) -> list[tuple[str, PlainScores]] | None:
        """Every metric's plain outcomes when each scored every row; None otherwise."""
        size, full = len(self.executions), []
        for name, picked, outcomes in self.scored:
            if not isinstance(outcomes, PlainScores) or len(picked) != size:
                return None
            full.append((name, outcomes))
        return full


class ChunkResults(Sequence[ExecutionResult]):
    """A chunk's results as a sequence whose length costs nothing: the rows' results are built
    only if something reads them (progress lines, a budget), not for a quiet run."""

    def __init__(self, chunk: ResultChunk) -> None:
        self.chunk = chunk

    def __len__(self) -> int:
        return len(self.chunk.executions)

    @overload
    def __getitem__(self, index: int) -> ExecutionResult: ...

    @overload
    def __getitem__(self, index: slice) -> list[ExecutionResult]: ...

    def __getitem__(self, index: int | slice) -> ExecutionResult | list[ExecutionResult]:
        return self.chunk.results[index]

    def __iter__(self) -> Iterator[ExecutionResult]:
        return iter(self.chunk.results)


def failing_entries(chunk: ResultChunk, thresholds: Thresholds | None) -> npt.NDArray[np.intp]:
    """Per row of ``chunk``, how many of its stages failed or errored (the system under test,
    each metric): the failing rows it gives, as :class:`~assay.report.failing.FailingRowCollector`
    counts them."""
    import numpy as np

    counts = np.fromiter(
        (isinstance(answer, str) for answer in chunk.answers),
        dtype=np.intp,
        count=len(chunk.answers),
    )
    for name, column in chunk.columns.items():
        failed = ~passes(column.values, threshold_for(thresholds, name))  # NaN (errored) too
        counts[column.rows] += failed | column.errored
    return counts


def _score_results(outcomes: Outcomes) -> list[ScoreResult]:
    if isinstance(outcomes, PlainScores):
        return [ScoreResult(v, d) for v, d in zip(outcomes.values, outcomes.details)]
    return outcomes


def _score_result(outcomes: Outcomes, at: int) -> ScoreResult:
    if isinstance(outcomes, PlainScores):
        return ScoreResult(outcomes.values[at], outcomes.details[at])
    return outcomes[at]


def _find(picked: list[int], index: int) -> int | None:
    """Where ``index`` is in ``picked`` (ascending row indices), or None."""
    at = bisect.bisect_left(picked, index)
    return at if at < len(picked) and picked[at] == index else None


def _execution_result(
    execution: Execution, answer: Output | str, scores: dict[str, ScoreResult]
) -> ExecutionResult:
    sample_id, repetition = execution.sample.id, execution.repetition
    if isinstance(answer, str):
        return ExecutionResult(sample_id, repetition, {}, sut_error=answer)
    return ExecutionResult(sample_id, repetition, scores)


def plan(
    samples: Iterable[Sample], repetitions: int, skip: Iterable[tuple[str, int]] = ()
) -> list[Execution]:
    """Every (sample, repetition) still to do, in dataset order."""
    return list(iter_plan(samples, repetitions, set(skip)))


def iter_plan(
    samples: Iterable[Sample], repetitions: int, skip: Iterable[tuple[str, int]] = ()
) -> Iterator[Execution]:
    """:func:`plan` one execution at a time: a run over a streamed dataset holds none of it."""
    done = skip if isinstance(skip, (set, frozenset)) else set(skip)
    for position, sample in enumerate(samples):
        for repetition in range(repetitions):
            if not done or (sample.id, repetition) not in done:
                yield Execution(position, sample, repetition)
