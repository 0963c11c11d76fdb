"""``assay monitor``: score stored production traces through ``assay run``'s own path, then
judge drift per metric.

Each unscored trace becomes a sample (``input.question``, no expected output, the trace id in
metadata) and its saved output (answer, retrieved contexts, tool calls as a trajectory, usage);
:func:`assay.api.metric_plan`, :func:`assay.api.preflight` and
:func:`assay.engine.evaluation.run_samples` score them exactly as ``assay run --outputs`` does,
so every monitor pass is an ordinary run in the run store with an ordinary report. The scores
are also kept per trace in the trace store, where :mod:`assay.production.drift` reads them.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Literal

from pydantic import BaseModel, ConfigDict

from assay.api import metric_plan, preflight
from assay.data.dataset import Dataset, MetricSpec, Sample
from assay.data.outputs import Output, coerce_output
from assay.data.results import ExecutionResult, passes, threshold_for
from assay.engine.evaluation import RunOptions, RunState, run_samples
from assay.engine.sut import SavedOutputs
from assay.production.drift import Drift, DriftRule, Observation, drift
from assay.production.mapping import TraceRecord
from assay.production.store import Score, TraceStore
from assay.providers import settings as provider_settings
from assay.providers.settings import ProviderSettings

if TYPE_CHECKING:
    from assay.report.model import Report
    from assay.store.runs import RunStore

MONITOR_SCHEMA: Final = "assay.monitor.v1"
DEFAULT_METRICS: Final = ("faithfulness", "answer-relevancy")
DATASET_NAME: Final = "production"


@dataclass(frozen=True)
class MonitorOptions:
    """What to score and how to judge it."""

    metrics: Sequence[str | MetricSpec] = DEFAULT_METRICS
    rubric: Any = None
    """The rubric a bare ``rubric`` metric uses (as a dataset's top-level ``rubric:``)."""
    since_ns: int = 0
    until_ns: int | None = None
    settle_s: float = 5.0
    rule: DriftRule = field(default_factory=DriftRule)


class MonitorResult(BaseModel):
    """One monitor pass: what it scored, the run it recorded, and each metric's drift."""

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal["assay.monitor.v1"] = MONITOR_SCHEMA
    run_id: str | None
    scored: int
    incomplete: int
    answers_redacted: dict[str, int]
    drift: list[Drift]

    @property
    def alerting(self) -> list[Drift]:
        return [d for d in self.drift if d.status == "alert"]


def sample_of(record: TraceRecord) -> Sample:
    """A trace as a sample: its question, no expected output, provenance in metadata."""
    metadata: dict[str, Any] = {"tags": ["production"], "trace_id": record.trace_id}
    if record.session is not None:
        metadata["session"] = record.session
    if record.service is not None:
        metadata["service"] = record.service
    metadata.update({k: v for k, v in record.metadata.items() if k not in metadata})
    question = {"question": record.input} if record.input is not None else {}
    return Sample(id=record.trace_id, input=question, expected_output=None, metadata=metadata)


def output_of(record: TraceRecord) -> Output:
    """A trace's answer as a saved output: text, contexts, tool calls, usage."""
    body: dict[str, Any] = {"output": record.output or ""}
    if record.contexts:
        body["contexts"] = list(record.contexts)
    if record.context_ids and len(record.context_ids) == len(record.contexts):
        body["retrieved"] = [
            {"id": i, "text": t} for i, t in zip(record.context_ids, record.contexts)
        ]
    if record.tool_calls:
        calls = [c.model_dump(exclude_none=True) for c in record.tool_calls]
        body["trajectory"] = {"tool_calls": calls}
    if record.usage:
        body["usage"] = dict(record.usage)
    return coerce_output(body)


@dataclass
class _Pending:
    records: list[TraceRecord]
    incomplete: int
    redacted: dict[str, int]


def metric_names(metrics: Sequence[str | MetricSpec]) -> list[str]:
    return [m if isinstance(m, str) else m.name for m in metrics]


def _pending(store: TraceStore, options: MonitorOptions, now_ns: int) -> _Pending:
    """Stored, settled traces in the range that lack a score for some chosen metric."""
    done = store.scored(metric_names(options.metrics))
    settled = now_ns - int(options.settle_s * 1e9)
    pending = _Pending([], 0, {})
    for trace_id, _ in store.trace_ids(options.since_ns, options.until_ns, settled):
        if trace_id in done:
            continue
        record = store.record(trace_id)
        if record is None or record.output is None:
            pending.incomplete += 1
            continue
        pending.records.append(record)
        for kind, n in record.output_redacted.items():
            pending.redacted[kind] = pending.redacted.get(kind, 0) + n
    return pending


def score_traces(
    records: Sequence[TraceRecord],
    metrics: Sequence[str | MetricSpec],
    run_store: RunStore | None,
    rubric: object = None,
) -> tuple[Report, list[Score]]:
    """Score ``records`` as one run; the report and each (trace, metric) score."""
    samples = [sample_of(r) for r in records]
    dataset = Dataset(name=DATASET_NAME, samples=samples, rubric=rubric)
    settings = provider_settings.from_environment()  # the judge and embedder of the scores
    plan = metric_plan(dataset, list(metrics), settings)
    warnings = preflight(plan, dataset, settings)
    outputs = {r.trace_id: output_of(r) for r in records}
    results: list[ExecutionResult] = []
    state = RunState(on_results=results.extend)
    report = run_samples(
        dataset,
        sut=SavedOutputs(outputs, "production-traces"),
        metrics=plan.metrics,
        options=RunOptions(thresholds=plan.thresholds, dataset_path="production"),
        store=run_store,
        state=state,
        warnings=warnings,
        scopes=plan.scopes,
    )
    scores = [
        Score(
            trace_id=result.sample_id,
            metric=name,
            value=outcome.value,
            error=outcome.error,
            passed=outcome.value is not None
            and passes(outcome.value, threshold_for(plan.thresholds, name)),
            run_id=state.run_id,
        )
        for result in results
        for name, outcome in result.scores.items()
    ]
    return report, scores


def thresholds(options: MonitorOptions) -> dict[str, float]:
    """Each chosen metric's pass threshold, resolved as a run resolves it (so a threshold
    changed in ``--metrics-file`` applies to scores stored before the change too)."""
    placeholder = Sample(id="-", input={}, expected_output=None)
    dataset = Dataset(name=DATASET_NAME, samples=[placeholder], rubric=options.rubric)
    # Built, never called: no provider settings are read for the thresholds.
    return metric_plan(dataset, list(options.metrics), ProviderSettings()).thresholds


def monitor_once(
    store: TraceStore, run_store: RunStore | None, options: MonitorOptions
) -> tuple[MonitorResult, Report | None]:
    """Score what is pending, then judge every chosen metric's drift over the range."""
    limits = thresholds(options)  # a bad metric spec fails here, before any scoring
    pending = _pending(store, options, time.time_ns())
    report: Report | None = None
    if pending.records:
        report, scores = score_traces(pending.records, options.metrics, run_store, options.rubric)
        store.save_scores(scores)
    verdicts = [
        drift(metric, _observations(store, metric, options, limits), options.rule)
        for metric in metric_names(options.metrics)
    ]
    result = MonitorResult(
        run_id=report.run.run_id if report is not None else None,
        scored=len(pending.records),
        incomplete=pending.incomplete,
        answers_redacted=dict(sorted(pending.redacted.items())),
        drift=verdicts,
    )
    return result, report


def _observations(
    store: TraceStore, metric: str, options: MonitorOptions, limits: dict[str, float]
) -> list[Observation]:
    threshold = threshold_for(limits, metric)
    return [
        Observation(s.trace_id, s.value, s.value is not None and passes(s.value, threshold))
        for s in store.scores(metric, options.since_ns, options.until_ns)
    ]
