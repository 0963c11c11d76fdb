"""From execution results to a :class:`Report`: aggregates, cohorts, histograms, usage.

:class:`ReportBuilder` consumes results one at a time (from a live run or from the run store),
keeping only compact per-metric score arrays and one small row per execution, so a report over
100,000 samples needs no list of full outputs in memory.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from assay.data.executions import MetricColumn, ResultChunk
from assay.data.results import (
    NO_SCORE,
    SUT_STAGE,
    ExecutionResult,
    Thresholds,
    passes,
    row_document,
    threshold_for,
)
from assay.metrics.registry import applies
from assay.report.model import (
    REPORT_SCHEMA,
    UNTAGGED_LABEL,
    Cohort,
    DatasetInfo,
    Failure,
    Repetitions,
    Report,
    Row,
    RowScore,
    RunInfo,
    SampleAggregate,
    Summary,
    trusted,
)
from assay.report.slices import SliceScores, cohort_metric, extend_slice, metric_aggregate
from assay.report.statistics import wilson_interval
from assay.report.usage import UsageAccumulator

if TYPE_CHECKING:  # numpy loads where first used: a run's first requests do not wait for it
    import numpy as np
    import numpy.typing as npt


def make_row(
    result: ExecutionResult,
    tags: list[str],
    row_hash: str,
    metric_names: Sequence[str],
    thresholds: Thresholds | None = None,
) -> Row:
    """The report row of one execution (:func:`assay.data.results.row_document`) as a model."""
    fields = row_document(result, tags, row_hash, metric_names, thresholds)
    fields["scores"] = {name: trusted(RowScore, s) for name, s in fields["scores"].items()}
    return trusted(Row, fields)


def _in_order(items: list[Any], keys: list[tuple[int, int]]) -> list[Any]:
    """``items`` sorted by their (position, repetition) keys, stably; as is when in order."""
    if all(a <= b for a, b in itertools.pairwise(keys)):
        return items
    order = sorted(range(len(items)), key=keys.__getitem__)
    return [items[i] for i in order]


class ReportBuilder:
    """Accumulates execution results and produces the report."""

    def __init__(
        self,
        metric_names: Sequence[str],
        scopes: Mapping[str, frozenset[str]] | None = None,
        *,
        keep_rows: bool = True,
        thresholds: Thresholds | None = None,
        per_sample: bool = True,
    ) -> None:
        self.metric_names = list(metric_names)
        self.thresholds = dict(thresholds or {})
        self.failed_rows = 0
        self.errored_rows = 0
        # Without rows the report's rows come from the run store at render time (rows_from_store).
        self.keep_rows = keep_rows
        self.scopes = dict(scopes or {})
        self._hashes: dict[str, str] = {}
        self._overall: dict[str, SliceScores] = {m: SliceScores() for m in self.metric_names}
        self._cohorts: dict[str | None, dict[str, SliceScores]] = {}
        self._cohort_sizes: dict[str | None, int] = defaultdict(int)
        self.rows: list[Row] = []
        self.failures: list[Failure] = []
        # Dataset order of each row and failure ((position, repetition)), for sort().
        self._row_keys: list[tuple[int, int]] = []
        self._failure_keys: list[tuple[int, int]] = []
        self.usage = UsageAccumulator()
        self.executions = 0
        self.passed = 0
        self.sut_errors = 0
        self.metric_errors = 0
        # Per sample: [executions, passed, errored, scored executions, sum of means, sum of squares,
        # position]. Only kept with per_sample (repeated runs): a run of one repetition needs no
        # per-sample aggregate, and 1M samples' tallies would cost ~200 MB.
        self.per_sample = per_sample
        self._per_sample: dict[str, list[float]] = {}
        self.spent_usd = 0.0

    def _slices(self, tags: list[str]) -> list[dict[str, SliceScores]]:
        keys: list[str | None] = list(tags) if tags else [None]
        slices = [self._overall]
        for key in keys:
            self._cohort_sizes[key] += 1
            if key not in self._cohorts:
                self._cohorts[key] = {m: SliceScores() for m in self.metric_names}
            slices.append(self._cohorts[key])
        return slices

    def add(
        self, result: ExecutionResult, tags: list[str], row_hash: str, position: int | None = None
    ) -> None:
        """Fold one execution in; ``tags``, ``row_hash`` and ``position`` come from its sample.

        ``position`` is the sample's place in the dataset (default: the order of arrival).
        """
        key = (self.executions if position is None else position, result.repetition)
        slices = self._slices(tags)
        self.executions += 1
        sut_error = result.sut_error
        errored = sut_error is not None
        if sut_error is not None:
            self.sut_errors += 1
            self._fail(result, key, SUT_STAGE, None, sut_error)
            self.usage.add(SUT_STAGE, result.sut_usage)
        total = 0.0
        scored = 0
        all_pass = True
        for name in self.metric_names:
            outcome = result.scores.get(name)
            if outcome is None:
                if result.sut_error is not None and applies(self.scopes, name, tags):
                    for part in slices:
                        part[name].skipped += 1
                continue
            if outcome.usage:
                self.usage.add(name, outcome.usage)
            value = outcome.value
            if outcome.error is not None or value is None:
                errored = True
                self.metric_errors += 1
                self._fail(result, key, "metric", name, outcome.error or NO_SCORE)
                for part in slices:
                    part[name].errored += 1
                continue
            for part in slices:
                part[name].append(value)
            total += value
            scored += 1
            all_pass = all_pass and passes(value, threshold_for(self.thresholds, name))
        passed = not errored and all_pass
        self.passed += passed
        self.errored_rows += errored
        self.failed_rows += not errored and not all_pass
        if self.keep_rows:
            self.rows.append(make_row(result, tags, row_hash, self.metric_names, self.thresholds))
            self._row_keys.append(key)
        if self.per_sample:
            self._tally(result.sample_id, row_hash, key[0], passed, errored, total, scored)

    def add_chunk(
        self, chunk: ResultChunk, tags: Sequence[list[str]], hashes: Sequence[str]
    ) -> npt.NDArray[np.bool_]:
        """Fold a chunk in, a metric column at a time; per row, whether it passed.

        ``tags`` and ``hashes`` are each row's sample tags and row hash, as for :meth:`add`.
        The same aggregates as :meth:`add` row by row. Rows the columns cannot carry alone (a
        system-under-test failure, provider usage, kept rows or per-sample tallies) go through
        :meth:`add`.
        """
        import numpy as np

        if (
            self.keep_rows
            or self.per_sample
            or (
                not chunk.clean
                and any(r.sut_error is not None or r.has_usage for r in chunk.results)
            )
        ):
            results = chunk.results
            for execution, result, labels, row_hash in zip(chunk.executions, results, tags, hashes):
                self.add(result, labels, row_hash, execution.position)
            return np.fromiter((r.passed(self.thresholds) for r in results), dtype=np.bool_)
        size = len(chunk.executions)
        cohorts = self._cohort_masks(tags)
        errored = np.zeros(size, dtype=np.bool_)
        below = np.zeros(size, dtype=np.bool_)
        for name in self.metric_names:
            column = chunk.columns.get(name)
            if column is not None and column.rows.size:
                self._fold_column(name, column, cohorts, chunk)
                errored[column.rows[column.errored]] = True
                scored = ~column.errored
                threshold = threshold_for(self.thresholds, name)
                below[column.rows[scored][~passes(column.values[scored], threshold)]] = True
        self.executions += size
        passed = ~errored & ~below
        self.passed += int(passed.sum())
        self.errored_rows += int(errored.sum())
        self.failed_rows += int((~errored & below).sum())
        return passed

    def _cohort_masks(self, tags: Sequence[list[str]]) -> list[tuple[str | None, Any]]:
        """Each cohort the chunk's rows fall in, with a mask of its rows (the untagged too)."""
        import numpy as np

        members: dict[str | None, list[int]] = {}
        for index, labels in enumerate(tags):
            for key in labels or (None,):
                members.setdefault(key, []).append(index)
        masks = []
        for key, rows in members.items():
            self._cohort_sizes[key] += len(rows)
            if key not in self._cohorts:
                self._cohorts[key] = {m: SliceScores() for m in self.metric_names}
            mask = np.zeros(len(tags), dtype=np.bool_)
            mask[rows] = True
            masks.append((key, mask))
        return masks

    def _fold_column(
        self,
        name: str,
        column: MetricColumn,
        cohorts: list[tuple[str | None, Any]],
        chunk: ResultChunk,
    ) -> None:
        """One metric's column into the overall and cohort score arrays; its errors recorded."""
        scored = ~column.errored
        extend_slice(self._overall[name], column.values[scored], int(column.errored.sum()))
        for key, mask in cohorts:
            inside = mask[column.rows]
            errored = int((column.errored & inside).sum())
            extend_slice(self._cohorts[key][name], column.values[scored & inside], errored)
        for index in column.rows[column.errored].tolist():
            execution, result = chunk.executions[index], chunk.results[index]
            outcome = result.scores[name]
            self.metric_errors += 1
            order = (execution.position, result.repetition)
            self._fail(result, order, "metric", name, outcome.error or NO_SCORE)

    def _tally(
        self,
        sample_id: str,
        row_hash: str,
        position: int,
        passed: bool,
        errored: bool,
        total: float,
        scored: int,
    ) -> None:
        """One execution into its sample's tally (repeated runs: pass rate, instability)."""
        self._hashes[sample_id] = row_hash
        tally = self._per_sample.get(sample_id)
        if tally is None:
            tally = self._per_sample[sample_id] = [0, 0, 0, 0, 0.0, 0.0, position]
        tally[0] += 1
        tally[1] += passed
        tally[2] += errored
        if scored:
            mean = total / scored
            tally[3] += 1
            tally[4] += mean
            tally[5] += mean * mean

    def _fail(
        self,
        result: ExecutionResult,
        key: tuple[int, int],
        stage: str,
        metric: str | None,
        message: str,
    ) -> None:
        self._failure_keys.append(key)
        self.failures.append(
            trusted(
                Failure,
                {
                    "sample_id": result.sample_id,
                    "repetition": result.repetition,
                    "stage": stage,
                    "metric": metric,
                    "message": message,
                },
            )
        )

    @property
    def sample_count(self) -> int:
        """Distinct samples seen (without per-sample tallies: one execution per sample)."""
        return len(self._per_sample) if self.per_sample else self.executions

    def sort(self) -> None:
        """Put rows and failures in dataset order (a concurrent run finishes out of order)."""
        self.rows = _in_order(self.rows, self._row_keys)
        self.failures = _in_order(self.failures, self._failure_keys)
        self._row_keys.sort()
        self._failure_keys.sort()
        self._per_sample = dict(sorted(self._per_sample.items(), key=lambda item: item[1][6]))

    # ----------------------------------------------------------------------- build

    def _cohort(self, key: str | None) -> Cohort:
        return Cohort(
            name=key,
            label=key if key is not None else UNTAGGED_LABEL,
            is_untagged=key is None,
            samples=self._cohort_sizes[key],
            metrics=[
                cohort_metric(name, self._cohorts[key][name], threshold_for(self.thresholds, name))
                for name in self.metric_names
            ],
        )

    def _repetitions(self, count: int) -> Repetitions | None:
        if count <= 1:
            return None
        aggregates = []
        for sample_id, (n, passed, errored, scored, total, squares, _) in self._per_sample.items():
            n, passed = int(n), int(passed)
            mean = total / scored if scored else None
            spread = (
                math.sqrt(max(0.0, squares / scored - mean * mean)) if mean is not None else None
            )
            aggregates.append(
                SampleAggregate(
                    id=sample_id,
                    row_hash=self._hashes.get(sample_id, ""),
                    repetitions=n,
                    passed=passed,
                    errored=int(errored),
                    pass_rate=passed / n,
                    pass_rate_ci=wilson_interval(passed, n),
                    unstable=n > 1 and 0 < passed < n,
                    score_mean=mean,
                    score_stddev=spread,
                )
            )
        return Repetitions(
            count=count,
            unstable_samples=[a.id for a in aggregates if a.unstable],
            samples=aggregates,
        )

    def build(self, *, dataset: DatasetInfo, run: RunInfo, warnings: Sequence[str] = ()) -> Report:
        metrics = [
            metric_aggregate(name, self._overall[name], threshold_for(self.thresholds, name))
            for name in self.metric_names
        ]
        rates = [m.pass_rate for m in metrics if m.pass_rate is not None]
        excluded = [m.name for m in metrics if m.pass_rate is None]
        tagged = sorted(
            (k for k in self._cohorts if k is not None), key=lambda t: t.encode("utf-8")
        )
        cohorts = [self._cohort(k) for k in tagged]
        if None in self._cohorts:
            cohorts.append(self._cohort(None))
        all_warnings = list(warnings)
        if excluded:
            all_warnings.append(
                "no score at all for "
                + ", ".join(excluded)
                + "; left out of macro-F1 (see failures)"
            )
        summary = Summary(
            total_samples=self.sample_count,
            total_executions=self.executions,
            sut_errors=self.sut_errors,
            metric_errors=self.metric_errors,
            failed_rows=self.failed_rows,
            errored_rows=self.errored_rows,
            pass_rate=self.passed / self.executions if self.executions else None,
            macro_f1=sum(rates) / len(rates) if rates else None,
            macro_f1_excluded=excluded,
        )
        return Report.model_construct(
            schema_version=REPORT_SCHEMA,
            dataset=dataset,
            run=run,
            summary=summary,
            metrics=metrics,
            cohorts=cohorts,
            usage=self.usage.build(),
            repetitions=self._repetitions(run.repetitions),
            budget=None,
            gate=None,
            comparison=None,
            warnings=all_warnings,
            failures=self.failures,
            rows=self.rows,
        )
