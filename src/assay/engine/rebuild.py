"""Reports rebuilt from the run store: ``assay report RUN_ID`` and the end of every stored run."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Protocol

from assay.data.results import ExecutionResult, row_document
from assay.report.aggregate import ReportBuilder, make_row
from assay.report.compliance_model import Compliance
from assay.report.failing import FailingRowCollector, redacted_report, redacted_row
from assay.report.judge_model import JudgeCalibration
from assay.report.model import (
    DatasetInfo,
    Report,
    Row,
    RunInfo,
    SystemUnderTestInfo,
)
from assay.store.runs import RunStore
from assay.store.schema import (
    DAMAGE,
    ROW_PREFIX,
    RunRecord,
    damage,
    damaged,
    decode_json,
    encode_json,
    stored_execution,
    stored_tags,
)

_ROW_JSON = Row.__pydantic_serializer__


def rows_from_store(store: RunStore, run_id: str, metric_names: list[str]) -> Iterator[Row]:
    """A stored run's report rows, in dataset order, one at a time (nothing held in memory)."""
    thresholds = dict(store.run_config(run_id).get("thresholds", {}))
    for result, tags, row_hash in store.iter_results(run_id):
        yield make_row(result, tags, row_hash, metric_names, thresholds)


def row_json_from_store(store: RunStore, run_id: str, metric_names: list[str]) -> Iterator[bytes]:
    """A stored run's report rows as JSON, in dataset order: the stored bytes where the store
    kept the row itself, else the row rebuilt from the stored result (one with usage), encoded
    as the store encodes rows (the same bytes as the model's, tests/core/test_row_json.py;
    without a model per row: a judge run's 1,000 rows took ~5 ms more through ``Row``)."""
    chunked = store.chunked_rows(run_id)
    if chunked is not None:
        yield from chunked
        return
    thresholds = dict(store.run_config(run_id).get("thresholds", {}))
    for sample_id, repetition, tags, row_hash, stored in store.iter_stored(run_id):
        raw = stored.encode("utf-8") if isinstance(stored, str) else stored
        if raw.startswith(ROW_PREFIX):
            yield raw
            continue
        try:  # (a try block costs nothing in 3.11 until it catches; damaged() would)
            result = ExecutionResult.from_json(sample_id, repetition, decode_json(raw))
            tag_list = stored_tags(decode_json(tags))
        except DAMAGE as exc:
            what = stored_execution(sample_id, repetition)
            raise damage(store.path, run_id, what, exc) from None
        yield encode_json(row_document(result, tag_list, row_hash, metric_names, thresholds))


class RowSource(Protocol):
    """A stored run's rows on demand: as models, or (``encoded``) as JSON bytes."""

    def __call__(self, encoded: bool = False) -> Iterable[Row | bytes]: ...


def stored_rows(
    store: RunStore, run_id: str, metric_names: list[str], *, redact: bool = False
) -> RowSource:
    """The rows of a stored run, read from the store each time they are asked for.

    With ``redact`` each row is rebuilt without its texts (:func:`redacted_row`) and encoded
    again, never streamed as stored: the store keeps the texts that resume reads.
    """

    def rows(encoded: bool = False) -> Iterable[Row | bytes]:
        if redact:
            models = map(redacted_row, rows_from_store(store, run_id, metric_names))
            return map(_ROW_JSON.to_json, models) if encoded else models
        source = row_json_from_store if encoded else rows_from_store
        return source(store, run_id, metric_names)

    return rows


def builder_from_store(
    store: RunStore,
    run_id: str,
    *,
    keep_rows: bool = True,
    failing: FailingRowCollector | None = None,
) -> ReportBuilder:
    """Fold every stored execution of a run, in dataset order, into a fresh builder (and into
    ``failing``, when given, in the same pass)."""
    config = store.run_config(run_id)
    scopes = {name: frozenset(tags) for name, tags in config.get("scopes", {}).items()}
    builder = ReportBuilder(
        list(config.get("metrics", [])),
        scopes,
        keep_rows=keep_rows,
        thresholds=dict(config.get("thresholds", {})),
        per_sample=int(config.get("repetitions", 1)) > 1,  # 1M samples' tallies: ~200 MB
    )
    for position, (result, tags, row_hash) in enumerate(store.iter_results(run_id)):
        builder.add(result, tags, row_hash)
        if failing is not None:
            failing.position = position  # iter_results reads executions in dataset order
            failing.add_stored(result, tags)
    return builder


def report_from_store(store: RunStore, run_id: str, *, keep_rows: bool = True) -> Report:
    """The report of a stored run, without the dataset and without rerunning anything.

    With ``keep_rows=False`` the report's ``rows`` are empty; stream them with rows_from_store.
    """
    record = store.get_run(run_id)
    thresholds = dict(record.config.get("thresholds", {}))
    failing = FailingRowCollector(thresholds, redact=bool(record.config.get("redact")))
    builder = builder_from_store(store, run_id, keep_rows=keep_rows, failing=failing)
    warnings = (
        []
        if record.status == "finished"
        else [f"run status is '{record.status}': the report covers finished work only"]
    )
    with damaged(store.path, run_id, "the stored run record (runs)"):
        dataset, run = _run_infos(record, builder.sample_count)
    report = builder.build(dataset=dataset, run=run, warnings=warnings).model_copy(
        update={
            "failing_rows": failing.rows,  # what failed and why; the texts stay in the dataset
            "failing_rows_omitted": failing.omitted,
            "gate": store.gate(run_id),
        }
    )
    if record.config.get("redact"):  # a run made with --redact is reported redacted again
        report = redacted_report(report)
    report = _with_judges(store, run_id, report)
    compliance = store.compliance(run_id)
    if compliance is None:
        return report
    with damaged(store.path, run_id, "the stored compliance summary (compliance.summary)"):
        adversarial = Compliance.model_validate(compliance)
    return report.model_copy(update={"adversarial": adversarial})


def _with_judges(store: RunStore, run_id: str, report: Report) -> Report:
    """The report with the judge blocks the run recorded (none: as it is)."""
    blocks = store.judges(run_id)
    if blocks is None:
        return report
    with damaged(store.path, run_id, "the stored judge blocks (judges.blocks)"):
        judges = [JudgeCalibration.model_validate(block) for block in blocks]
    return report.model_copy(update={"judges": judges})


def _run_infos(record: RunRecord, sample_count: int) -> tuple[DatasetInfo, RunInfo]:
    """The report's dataset and run sections from a stored run's record."""
    from datetime import datetime

    from assay import __version__

    started = datetime.fromisoformat(record.created_at)
    finished = datetime.fromisoformat(record.updated_at)
    info = record.config
    dataset = DatasetInfo(
        name=record.dataset_name,
        schema_version=str(info.get("dataset_schema_version", "assay.dataset.v1")),
        path=record.dataset_path,
        samples=int(info.get("dataset_samples", sample_count)),
    )
    run = RunInfo(
        run_id=record.run_id,
        assay_version=__version__,
        started_at=record.created_at,
        finished_at=record.updated_at,
        duration_seconds=round(max(0.0, (finished - started).total_seconds()), 3),
        system_under_test=SystemUnderTestInfo.model_validate(
            info.get("system_under_test", {"kind": "none"})
        ),
        repetitions=int(info.get("repetitions", 1)),
        halted=record.status == "halted",
        embedding_provider=info.get("embedding_provider"),
        judge_model=info.get("judge_model"),
    )
    return dataset, run
