"""What a run executes and what comes back: executions planned in dataset order, and a
chunk of finished ones with each metric's outcomes as a column.

An :class:`Execution` is one (sample, repetition) at its dataset position. The synchronous
runner scores executions a chunk at a time and hands a :class:`ResultChunk` on, so the report
folds scores in as arrays (see :meth:`assay.report.aggregate.ReportBuilder.add_chunk`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from assay.dataset import Sample
from assay.outputs import Output
from assay.results import ExecutionResult, ScoreResult

if TYPE_CHECKING:  # numpy loads where first used: a run's first requests do not wait for it
    import numpy as np
    import numpy.typing as npt


@dataclass(frozen=True)
class Execution:
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


@dataclass(frozen=True, slots=True)
class ResultChunk:
    """Finished executions scored together: per row its answer (an error message when the
    system under test failed) and result, and per metric a :class:`MetricColumn`.

    ``clean`` says no row has a system-under-test failure, a metric error or missing score, or
    provider usage, so no row needs looking at for them (False: look).
    """

    executions: Sequence[Execution]
    answers: Sequence[Output | str]
    results: list[ExecutionResult]
    columns: dict[str, MetricColumn]
    clean: bool = False


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
