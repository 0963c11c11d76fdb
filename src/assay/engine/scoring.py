"""Scoring one metric on finished answers, with every failure captured as that row's error.

:func:`score_sync` and :func:`score_async` score one execution; :func:`score_column` scores a
batch, through the metric's ``score_batch`` when it has one (see :mod:`assay.metrics.batch`)
and row by row otherwise, with the same result for each row either way. A metric that raises,
returns something other than a :class:`~assay.metrics.base.MetricScore`, or gives a value
outside [0, 1] records an error for that row; the run goes on.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from typing import Any, cast

from assay.data.dataset import Sample
from assay.data.executions import (
    DetailRows,
    Execution,
    MetricColumn,
    Outcomes,
    PlainScores,
    ResultChunk,
)
from assay.data.outputs import Output
from assay.data.results import ScoreResult
from assay.errors import AssayError, MetricError
from assay.metrics.base import Metric, MetricScore, batches, check_details, prefetches, prepares
from assay.metrics.batch import ScoreColumn
from assay.metrics.registry import applies
from assay.store.schema import ORJSON_FLOAT_BOUND


def _internal_error(metric: str, exc: BaseException) -> str:
    text = str(exc).splitlines()[0][:300] if str(exc) else ""
    return f"metric '{metric}' crashed: {type(exc).__name__}" + (f": {text}" if text else "")


def _accept(metric: Metric, value: object) -> ScoreResult:
    if not isinstance(value, MetricScore):
        return ScoreResult(
            None, error=f"metric '{metric.name}' returned {type(value).__name__}, not a MetricScore"
        )
    try:
        check_details(value.details, metric.name)
    except MetricError as exc:
        return ScoreResult(None, error=str(exc), usage=tuple(value.usage or ()))
    return ScoreResult(value.value, value.details, None, _usage_tuple(value.usage))


def _usage_tuple(
    usage: Sequence[Mapping[str, Any]] | Mapping[str, Any] | None,
) -> tuple[dict[str, Any], ...]:
    if not usage:
        return ()
    if isinstance(usage, Mapping):
        return (dict(usage),)
    return tuple(dict(u) for u in usage)


def score_column(
    metric: Metric, samples: Sequence[Sample], outputs: Sequence[Output]
) -> list[ScoreResult]:
    """One metric over a batch: its ``score_batch`` when it has one, else ``score`` row by row.

    Either way each row's result is what :func:`score_sync` gives for it. A ``score_batch`` that
    raises, or returns a column of the wrong length, is ignored and the batch is scored row by
    row; values outside [0, 1] become that row's error, as ``MetricScore`` would make them.
    """
    scored = score_plain(metric, samples, outputs)
    if isinstance(scored, PlainScores):
        return [ScoreResult(value, row) for value, row in zip(scored.values, scored.details)]
    return scored


def score_plain(
    metric: Metric, samples: Sequence[Sample], outputs: Sequence[Output]
) -> PlainScores | list[ScoreResult]:
    """:func:`score_column`, a batch whose every row scored plainly (a value in [0, 1], plain
    JSON details, nothing to check) left as its two columns instead of a result per row."""
    if not batches(metric) or not samples:
        return [score_sync(metric, s, o) for s, o in zip(samples, outputs)]
    try:
        column = metric.score_batch(samples, outputs)
        values = column.values.tolist()
    except Exception:  # a broken batch kernel costs speed, never a different result
        return [score_sync(metric, s, o) for s, o in zip(samples, outputs)]
    if len(values) != len(samples):
        return [score_sync(metric, s, o) for s, o in zip(samples, outputs)]
    details = _column_details(column, len(values))
    if not column.errors and _all_plain(details) and all(0.0 <= v <= 1.0 for v in values):
        plain = cast("Sequence[dict[str, Any]]", details)  # none errs or needs a check
        return PlainScores(values, plain)
    return _checked_rows(metric, column, values, details)


def _checked_rows(
    metric: Metric,
    column: ScoreColumn,
    values: list[float],
    details: Sequence[dict[str, Any] | None],
) -> list[ScoreResult]:
    """Each row of a column with its error, range and details checks (see score_column)."""
    results = []
    for index, value in enumerate(values):
        error = column.errors.get(index)
        if error is None and not 0.0 <= value <= 1.0:  # NaN included, as MetricScore says
            error = f"metric score must be in [0.0, 1.0]; got {value!r}"
        row = details[index]
        if error is None and row is None:
            row = column.details_at(index)
            try:
                check_details(row, metric.name)
            except MetricError as exc:
                error = str(exc)
        if error is None and row is not None:
            results.append(ScoreResult(value, row))
        else:
            results.append(ScoreResult(None, error=error))
    return results


_SAFE_TYPES = frozenset({str, int, bool, type(None)})


def _all_plain(details: Sequence[dict[str, Any] | None]) -> bool:
    """Whether every row's details were built without needing a check (see _column_details)."""
    # built for all rows or for none
    return type(details) is DetailRows or not details or details[0] is not None


def _column_details(column: ScoreColumn, size: int) -> Sequence[dict[str, Any] | None]:
    """Rows' details built in one pass where every column is plain JSON (None: check the row).

    A details column of strings, integers, booleans, None and finite floats cannot fail
    :func:`check_details`, so its rows need no per-row check. A row leaves out the keys
    ``column.absent`` says it lacks, as :meth:`ScoreColumn.details_at` does.
    """
    keys = list(column.details)
    columns = [column.details[key] for key in keys]
    plain = all(type(key) is str for key in keys) and all(
        len(c) == size and _plain_column(c) for c in columns
    )
    if not plain:
        return [None] * size
    if column.absent:  # keys some rows lack (their placeholders are None: plain too)
        gone = [column.absent.get(key, frozenset()) for key in keys]
        return [
            {k: c[i] for k, c, missing in zip(keys, columns, gone) if i not in missing}
            for i in range(size)
        ]
    return DetailRows(keys, columns, size)  # a row's dict is built when it is read


def _plain_column(values: Sequence[Any]) -> bool:
    """Whether a details column holds only JSON scalars, its floats finite and under
    ORJSON_FLOAT_BOUND in magnitude (so its rows are encoded as :func:`encode_plain_rows` may)."""
    types = set(map(type, values))
    if float in types:
        types.discard(float)
        bound = ORJSON_FLOAT_BOUND
        finite = all(-bound < v < bound for v in values if type(v) is float)  # NaN fails
        return finite and types <= _SAFE_TYPES
    return types <= _SAFE_TYPES


def score_sync(metric: Metric, sample: Sample, output: Output) -> ScoreResult:
    """Score one execution with a synchronous metric, capturing any failure."""
    try:
        return _accept(metric, metric.score(sample, output))
    except MetricError as exc:
        return ScoreResult(None, error=str(exc), usage=_usage_tuple(exc.usage))
    except AssayError as exc:
        return ScoreResult(None, error=str(exc))
    except (Exception, SystemExit) as exc:  # a custom metric's bug (or exit) must not end the run
        return ScoreResult(None, error=_internal_error(metric.name, exc))


async def score_async(metric: Metric, sample: Sample, output: Output) -> ScoreResult:
    try:
        value = metric.score(sample, output)
        if inspect.isawaitable(value):
            value = await value
        return _accept(metric, value)
    except MetricError as exc:
        return ScoreResult(None, error=str(exc), usage=_usage_tuple(exc.usage))
    except AssayError as exc:
        return ScoreResult(None, error=str(exc))
    except (Exception, SystemExit) as exc:
        return ScoreResult(None, error=_internal_error(metric.name, exc))


def is_async_metric(metric: Metric) -> bool:
    return inspect.iscoroutinefunction(metric.score) or prefetches(metric) or prepares(metric)


def score_chunk(
    metrics: Sequence[Metric],
    scopes: Mapping[str, frozenset[str]],
    chunk: Sequence[Execution],
    answers: Sequence[Output | str],
) -> ResultChunk:
    """Every applicable metric's outcomes over a chunk of the synchronous path, each metric
    scoring its rows in one :func:`score_plain` call, with each metric's column. A text answer
    is the system under test's failure for that execution."""
    scored: list[tuple[str, list[int], Outcomes]] = []
    columns: dict[str, MetricColumn] = {}
    answered = [i for i, answer in enumerate(answers) if not isinstance(answer, str)]
    unclean = len(answered) < len(answers)  # the system under test failed somewhere
    everyone = _rows_of(chunk, answers, answered)
    for metric in metrics:
        picked, samples, outputs = everyone
        if scopes:
            picked = [i for i in answered if applies(scopes, metric.name, chunk[i].sample.tags)]
            picked, samples, outputs = _rows_of(chunk, answers, picked)
        outcomes = score_plain(metric, list(samples), list(outputs))  # each metric its own
        scored.append((metric.name, picked, outcomes))
        if isinstance(outcomes, PlainScores):
            columns[metric.name] = MetricColumn.of_plain(picked, outcomes)
            continue
        columns[metric.name] = column = MetricColumn.of(picked, outcomes)
        unclean = unclean or bool(column.errored.any()) or any(r.usage for r in outcomes)
    return ResultChunk(chunk, answers, scored, columns, clean=not unclean)


def _rows_of(
    chunk: Sequence[Execution], answers: Sequence[Output | str], picked: list[int]
) -> tuple[list[int], list[Sample], list[Output]]:
    """The picked rows of a chunk: their indices, samples and answers."""
    samples = [chunk[i].sample for i in picked]
    return picked, samples, [cast(Output, answers[i]) for i in picked]
