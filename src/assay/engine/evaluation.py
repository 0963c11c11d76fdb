"""One evaluation from start to report: plan, run, store, aggregate.

This is the library entry point behind ``assay run``::

    report = assay.evaluate(dataset, sut=SavedOutputs(...), metrics=resolve_all([...]))
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assay.data.dataset import Dataset, conversation_of
from assay.data.dataset_stream import IndexedSamples
from assay.data.executions import Execution, iter_plan
from assay.data.outputs import Output, coerce_output
from assay.data.results import DEFAULT_TEXT_LIMIT, ExecutionResult
from assay.engine.recorder import Recorder, ReportParts
from assay.engine.resume_check import OPTIONS_KEY, check_resume, options_hash
from assay.engine.runner import Runner, never_stop
from assay.engine.sut import SystemUnderTest
from assay.errors import UsageError
from assay.metrics.base import Metric
from assay.store.project import current_branch
from assay.store.runs import RunStore
from assay.store.schema import new_run_id

MAX_LABELS = 500  # sample tags kept in a run's configuration (a tag per sample: the first)

if TYPE_CHECKING:  # Ray's executor loads only for a run that goes to Ray
    from assay.engine.ray_executor import RayOptions
    from assay.report.failing import FailingRowCollector
    from assay.report.model import Report, RunInfo

ProgressHook = Callable[[int], None]


@dataclass
class RunOptions:
    """How to run: repetitions, concurrency, persistence and resumption."""

    repetitions: int | None = None
    sut_concurrency: int = 8
    run_id: str | None = None
    resume: bool = False
    resume_changed: bool = False
    retry_errors: bool = False
    dataset_path: str | None = None
    extra_info: dict[str, str | None] = field(default_factory=dict)
    ray: RayOptions | None = None
    thresholds: dict[str, float] = field(default_factory=dict)
    text_limit: int = DEFAULT_TEXT_LIMIT
    redact: bool = False


@dataclass
class RunState:
    """What a caller may watch while a run goes (progress) or stop it with (halt)."""

    run_id: str = ""
    total: int = 0
    done: int = 0
    halted: bool = False
    halt_reason: str | None = None
    should_stop: Callable[[], bool] = never_stop  # the runner scores in chunks only then
    # Each batch of finished executions as it is recorded (a chunk of saved outputs, or one).
    on_results: Callable[[Sequence[ExecutionResult]], None] | None = None


def _iso(stamp: float) -> str:
    return datetime.fromtimestamp(stamp, timezone.utc).isoformat(timespec="milliseconds")


def run_samples(
    dataset: Dataset,
    *,
    sut: SystemUnderTest,
    metrics: Sequence[Metric],
    options: RunOptions | None = None,
    store: RunStore | None = None,
    state: RunState | None = None,
    warnings: Sequence[str] = (),
    scopes: Mapping[str, frozenset[str]] | None = None,
    keep_rows: bool = True,
) -> Report:
    """Run every sample through the system under test and the metrics; return the report.

    With a store and ``keep_rows=False`` the report's ``rows`` stay empty and memory stays flat
    as the dataset grows; render them from the store with
    :func:`assay.engine.rebuild.rows_from_store`.
    """
    options = options or RunOptions()
    state = state or RunState()
    started = time.time()
    state.run_id = options.run_id or new_run_id()
    metric_names = [m.name for m in metrics]
    repetitions, skip = _open_run(
        store, state.run_id, dataset, sut, metric_names, options, scopes or {}
    )
    recorder = _recorder(store, state, metric_names, sut, options, scopes, keep_rows, repetitions)
    if store is not None and skip:
        _fold_stored(store, state.run_id, dataset, sut, skip, recorder, options)
    state.total = _planned_count(dataset, repetitions, skip)
    runner = Runner(
        metrics,
        sut,
        on_result=recorder.on_result,
        on_chunk=recorder.on_chunk,
        sut_concurrency=options.sut_concurrency,
        should_stop=state.should_stop,
        scopes=scopes,
        prepare_with=dataset.samples,
        executor=_executor(options.ray),
    )
    planned = iter_plan(dataset.samples, repetitions, skip)
    _drive(runner, recorder.planned(planned, by_chunk=runner.by_chunk), store, state)
    run = _run_info(state, sut, options, repetitions, started)
    notes = [note for metric in metrics for note in _run_notes(metric)]
    return _report(dataset, recorder, run, options, [*warnings, *notes])


def _run_notes(metric: Metric) -> list[str]:
    """A metric's lines about the whole run (the regex metric's backtracking), if it has any."""
    notes = getattr(metric, "run_notes", None)
    return list(notes()) if callable(notes) else []


def _open_run(
    store: RunStore | None,
    run_id: str,
    dataset: Dataset,
    sut: SystemUnderTest,
    metric_names: list[str],
    options: RunOptions,
    scopes: Mapping[str, frozenset[str]],
) -> tuple[int, set[tuple[str, int]]]:
    """Start the run in the store, or pick a stored one up: its repetitions and what to skip.

    A run killed before its row was written did nothing: resuming it is starting it.
    """
    repetitions = options.repetitions or dataset.repetitions
    if store is None:
        if options.resume:
            raise UsageError("--resume needs the run store (do not combine it with --no-store)")
        return repetitions, set()
    if options.resume and store.has_run(run_id):
        return _resume(store, run_id, dataset, metric_names, repetitions, options)
    store.create_run(
        run_id,
        dataset_name=dataset.name,
        dataset_path=options.dataset_path,
        config={
            "metrics": metric_names,
            "scopes": {name: sorted(tags) for name, tags in scopes.items()},
            "thresholds": dict(options.thresholds),
            "repetitions": repetitions,
            "system_under_test": sut.describe().model_dump(),
            "dataset_schema_version": dataset.schema_version,
            "dataset_samples": len(dataset.samples),
            **({"redact": True} if options.redact else {}),  # `assay report RUN` redacts too
            **_files(sut, options.dataset_path),
            **_labels(dataset),
            **options.extra_info,
            OPTIONS_KEY: options_hash(dataset, metric_names, options.thresholds),
        },
    )
    return repetitions, set()  # each sample's content hash is stored with its first execution


def _recorder(
    store: RunStore | None,
    state: RunState,
    metric_names: list[str],
    sut: SystemUnderTest,
    options: RunOptions,
    scopes: Mapping[str, frozenset[str]] | None,
    keep_rows: bool,
    repetitions: int,
) -> Recorder:
    """Where the run's results go: the store, the report's aggregates, the failing rows."""

    def on_done(results: Sequence[ExecutionResult]) -> None:
        state.done += len(results)
        if state.on_results is not None:
            state.on_results(results)

    def report_parts() -> ReportParts:
        # The report's modules load at the first result: a judge run's first request does
        # not wait for them.
        from assay.report.aggregate import ReportBuilder
        from assay.report.conversations import ConversationCollector
        from assay.report.failing import FailingRowCollector

        return ReportParts(
            ReportBuilder(
                metric_names,
                scopes,
                keep_rows=keep_rows or store is None,
                thresholds=options.thresholds,
                per_sample=repetitions > 1,
            ),
            FailingRowCollector(
                options.thresholds, text_limit=options.text_limit, redact=options.redact
            ),
            ConversationCollector(options.thresholds),
        )

    return Recorder(
        run_id=state.run_id,
        store=store,
        report_parts=report_parts,
        metric_names=metric_names,
        thresholds=options.thresholds,
        # Saved outputs are on disk already; a Python or HTTP system's answers are stored.
        keep_outputs=not getattr(sut, "outputs_on_disk", False),
        on_done=on_done,
    )


def _drive(
    runner: Runner, executions: Iterable[Execution], store: RunStore | None, state: RunState
) -> None:
    """Run every execution; the stored run's status says how it ended."""
    status = "interrupted"
    try:
        runner.run(executions)
        status = "halted" if runner.stopped_early else "finished"
    finally:
        if store is not None:
            store.set_status(state.run_id, status)
    if runner.stopped_early:
        state.halted = True


def _run_info(
    state: RunState,
    sut: SystemUnderTest,
    options: RunOptions,
    repetitions: int,
    started: float,
) -> RunInfo:
    from assay.report.model import RunInfo  # loaded with the report's other models (_recorder)

    finished = time.time()
    return RunInfo(
        run_id=state.run_id,
        assay_version=_version(),
        started_at=_iso(started),
        finished_at=_iso(finished),
        duration_seconds=round(max(0.0, finished - started), 3),
        system_under_test=sut.describe(),
        repetitions=repetitions,
        halted=state.halted,
        halt_reason=state.halt_reason if state.halted else None,
        embedding_provider=options.extra_info.get("embedding_provider"),
        judge_model=options.extra_info.get("judge_model"),
    )


def _report(
    dataset: Dataset,
    recorder: Recorder,
    run: RunInfo,
    options: RunOptions,
    warnings: Sequence[str],
) -> Report:
    """The finished run's report, with its conversations and failing rows."""
    from assay.report.model import DatasetInfo  # loaded with the report's models (_recorder)

    recorder.builder.sort()
    report = recorder.builder.build(
        dataset=DatasetInfo(
            name=dataset.name,
            schema_version=dataset.schema_version,
            path=options.dataset_path,
            samples=len(dataset.samples),
        ),
        run=run,
        warnings=warnings,
    )
    report = report.model_copy(update={"conversations": recorder.conversations.build()})
    return _with_failing_rows(report, recorder.failing)


def _planned_count(dataset: Dataset, repetitions: int, skip: set[tuple[str, int]]) -> int:
    """How many executions the run will do (a resumed run: those not finished before)."""
    total = len(dataset.samples) * repetitions
    if skip:
        total -= sum(1 for s in dataset.samples for r in range(repetitions) if (s.id, r) in skip)
    return total


def _fold_stored(
    store: RunStore,
    run_id: str,
    dataset: Dataset,
    sut: SystemUnderTest,
    skip: set[tuple[str, int]],
    recorder: Recorder,
    options: RunOptions,
) -> None:
    """A resumed run: fold in what earlier attempts finished (and that is not being redone)."""
    builder, failing = recorder.builder, recorder.failing
    conversations = recorder.conversations
    positions = {s.id: i for i, s in enumerate(dataset.samples)}
    turns = {s.id: s for s in dataset.samples if conversation_of(s) is not None}
    unfinished: list[ExecutionResult] = []
    for result, tags, row_hash in store.iter_results(run_id):
        if (result.sample_id, result.repetition) in skip:
            builder.add(result, tags, row_hash, positions.get(result.sample_id, len(positions)))
            if result.sample_id in turns:
                conversations.add(result, turns[result.sample_id], positions[result.sample_id])
            if result.sample_id in positions and not result.passed(options.thresholds):
                unfinished.append(result)
    if not unfinished:
        return
    by_id = {s.id: s for s in dataset.samples}
    answers = _stored_answers(store, run_id, sut, unfinished)
    for result in unfinished:
        failing.position = positions[result.sample_id]
        answer = answers.get((result.sample_id, result.repetition))
        failing.add(result, by_id[result.sample_id], answer)


def _stored_answers(
    store: RunStore, run_id: str, sut: SystemUnderTest, results: list[ExecutionResult]
) -> dict[tuple[str, int], Output]:
    """The answers behind earlier attempts' failing rows: from the saved-outputs file, or
    from the store for a Python or HTTP system."""
    wanted = {(r.sample_id, r.repetition) for r in results}
    saved = getattr(sut, "outputs", None)
    if isinstance(saved, Mapping):
        return {key: saved[key[0]] for key in wanted if key[0] in saved}
    found: dict[tuple[str, int], Output] = {}
    for sample_id, repetition, raw in store.outputs(run_id):
        if (sample_id, repetition) in wanted:
            with contextlib.suppress(Exception):
                found[(sample_id, repetition)] = coerce_output(raw)
    return found


def _with_failing_rows(report: Report, failing: FailingRowCollector) -> Report:
    """The report plus its failing rows; with ``redact``, failure messages and rows lose texts."""
    from assay.report.failing import redacted_report  # loaded at the first result (_recorder)

    update: dict[str, Any] = {
        "failing_rows": failing.rows,
        "failing_rows_omitted": failing.omitted,
    }
    report = report.model_copy(update=update)
    return redacted_report(report) if failing.redact else report


def _executor(ray: RayOptions | None) -> Callable[[Runner, Sequence[Execution]], None] | None:
    """Where executions run: in this process (None) or on Ray workers."""
    if ray is None:
        return None
    from assay.engine.ray_executor import run_on_ray

    return lambda runner, executions: run_on_ray(runner, executions, ray)


def _resume(
    store: RunStore,
    run_id: str,
    dataset: Dataset,
    metric_names: list[str],
    repetitions: int,
    options: RunOptions,
) -> tuple[int, set[tuple[str, int]]]:
    """Check a stored run matches this one; its repetitions and the executions to skip."""
    record = store.get_run(run_id)
    if record.dataset_name != dataset.name:
        raise UsageError(
            f"run '{run_id}' is for dataset '{record.dataset_name}', not '{dataset.name}'"
        )
    stored_metrics = record.config.get("metrics", [])
    if stored_metrics != metric_names:
        raise UsageError(
            f"run '{run_id}' used metrics {stored_metrics}; "
            f"resume it with the same metrics (got {metric_names})"
        )
    repetitions = int(record.config.get("repetitions", repetitions))
    check_resume(
        store,
        run_id,
        dataset,
        stored_options=record.config.get(OPTIONS_KEY),
        options=options_hash(dataset, metric_names, options.thresholds),
        rescore_changed=options.resume_changed,
    )
    skip = store.done_keys(run_id, include_errored=not options.retry_errors)
    store.set_status(run_id, "running")
    return repetitions, skip


def _labels(dataset: Dataset) -> dict[str, Any]:
    """What a team's viewer filters runs by: the branch the run was made on (CI's variables,
    else the checkout's ``.git/HEAD``) and the tags its samples carry."""
    samples = dataset.samples
    seen = (  # a dataset left on disk saw its tags while checking it: no second read
        samples.tags
        if isinstance(samples, IndexedSamples)
        else {tag for sample in samples if "tags" in sample.metadata for tag in sample.tags}
    )
    tags = sorted(seen)[:MAX_LABELS]
    branch = current_branch()
    return {"sample_tags": tags, **({"branch": branch} if branch else {})}


def _files(sut: SystemUnderTest, dataset_path: str | None) -> dict[str, str]:
    """Absolute paths of the dataset and saved-outputs files (the store keeps no copy of
    either), so ``assay view`` can show a sample's input, expected and actual later."""
    files = {}
    if dataset_path is not None:
        files["dataset_file"] = str(Path(dataset_path).resolve())
    path = getattr(sut, "path", None)
    if getattr(sut, "outputs_on_disk", False) and isinstance(path, str):
        files["outputs_path"] = str(Path(path).resolve())
    return files


def _version() -> str:
    from assay import __version__

    return __version__
