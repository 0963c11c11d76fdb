"""Reports rebuilt from the run store: ``assay report RUN_ID`` and the end of every stored run."""

from __future__ import annotations

from collections.abc import Iterator

from assay.report.aggregate import ReportBuilder, make_row
from assay.report.model import (
    Compliance,
    DatasetInfo,
    Report,
    Row,
    RunInfo,
    SystemUnderTestInfo,
)
from assay.store import RunStore


def rows_from_store(store: RunStore, run_id: str, metric_names: list[str]) -> Iterator[Row]:
    """A stored run's report rows, in dataset order, one at a time (nothing held in memory)."""
    thresholds = dict(store.get_run(run_id).config.get("thresholds", {}))
    for result, tags, row_hash in store.iter_results(run_id):
        yield make_row(result, tags, row_hash, metric_names, thresholds)


def builder_from_store(store: RunStore, run_id: str, *, keep_rows: bool = True) -> ReportBuilder:
    """Fold every stored execution of a run, in dataset order, into a fresh builder."""
    config = store.get_run(run_id).config
    scopes = {name: frozenset(tags) for name, tags in config.get("scopes", {}).items()}
    builder = ReportBuilder(
        list(config.get("metrics", [])),
        scopes,
        keep_rows=keep_rows,
        thresholds=dict(config.get("thresholds", {})),
        per_sample=int(config.get("repetitions", 1)) > 1,  # 1M samples' tallies: ~200 MB
    )
    for result, tags, row_hash in store.iter_results(run_id):
        builder.add(result, tags, row_hash)
    return builder


def report_from_store(store: RunStore, run_id: str, *, keep_rows: bool = True) -> Report:
    """The report of a stored run, without the dataset and without rerunning anything.

    With ``keep_rows=False`` the report's ``rows`` are empty; stream them with rows_from_store.
    """
    from datetime import datetime

    from assay import __version__

    record = store.get_run(run_id)
    builder = builder_from_store(store, run_id, keep_rows=keep_rows)
    started = datetime.fromisoformat(record.created_at)
    finished = datetime.fromisoformat(record.updated_at)
    warnings = (
        []
        if record.status == "finished"
        else [f"run status is '{record.status}': the report covers finished work only"]
    )
    info = record.config
    report = builder.build(
        dataset=DatasetInfo(
            name=record.dataset_name,
            schema_version=str(info.get("dataset_schema_version", "assay.dataset.v1")),
            path=record.dataset_path,
            samples=int(info.get("dataset_samples", builder.sample_count)),
        ),
        run=RunInfo(
            run_id=run_id,
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
        ),
        warnings=warnings,
    )
    compliance = store.compliance(run_id)
    if compliance is None:
        return report
    return report.model_copy(update={"adversarial": Compliance.model_validate(compliance)})
