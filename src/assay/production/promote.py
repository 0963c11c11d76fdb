"""``assay promote``: failing or flagged production traces become rows of a golden dataset.

A row keeps the trace's (already redacted) question, ``expected_output: null`` for a person to
fill in (``assay validate`` lists the rows still without one), the tag
``promoted-from-production`` and ``metadata.assay.production`` with the trace id, the failed
metrics and a content hash. Rows are deduplicated by that hash, also against the rows already in
the file, which are kept as they are (a person may have filled them in).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Final

import yaml

from assay.data.dataset import DATASET_SCHEMA, canonical_json
from assay.data.documents import parse_document, read_text
from assay.data.fileio import is_file, write_atomic
from assay.errors import DatasetError, UsageError
from assay.production.mapping import TraceRecord
from assay.production.store import TraceStore

TAG: Final = "promoted-from-production"


@dataclass(frozen=True)
class PromoteOptions:
    """Which traces: those failing ``metrics`` (all scored metrics when empty), plus
    ``trace_ids`` named by a person, within [since, until)."""

    metrics: Sequence[str] = ()
    trace_ids: Sequence[str] = ()
    since_ns: int = 0
    until_ns: int | None = None
    name: str = "production.failures"


def content_hash(records: Sequence[TraceRecord]) -> str:
    """SHA-256 of the questions and contexts of a trace (or a session's traces): the same
    request promoted twice is one row."""
    items = [{"input": r.input, "contexts": r.contexts} for r in records]
    value: Any = items[0] if len(items) == 1 else items  # a single trace: its own object
    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()


def _failures(store: TraceStore, options: PromoteOptions) -> dict[str, list[str]]:
    """Trace id -> the metrics it failed (scored below threshold), in the range."""
    failed: dict[str, list[str]] = {}
    for metric in options.metrics or store.metrics():
        for score in store.scores(metric, options.since_ns, options.until_ns):
            if score.value is not None and not score.passed:
                failed.setdefault(score.trace_id, []).append(metric)
    for trace_id in options.trace_ids:
        failed.setdefault(trace_id, [])
    return failed


def _provenance(
    records: Sequence[TraceRecord], failed: list[str], digest: str, stamp: str
) -> dict[str, Any]:
    last = records[-1]
    provenance: dict[str, Any] = {
        "trace_id": last.trace_id,
        "content_hash": digest,
        "failed_metrics": sorted(failed),
        "flagged": not failed,
        "promoted_at": stamp,
        "answer": last.output,
        "contexts": last.contexts,
    }
    if last.session is not None:
        provenance["session"] = last.session
    if len(records) > 1:
        provenance["trace_ids"] = [r.trace_id for r in records]
    return provenance


def _row(records: Sequence[TraceRecord], failed: list[str], stamp: str) -> dict[str, Any]:
    """One trace as a sample, or a session's traces (up to the failing one) as a conversation
    whose turns are the users' questions."""
    digest = content_hash(records)
    metadata = {"tags": [TAG], "assay": {"production": _provenance(records, failed, digest, stamp)}}
    row: dict[str, Any] = {"id": f"prod-{digest[:12]}"}
    if len(records) == 1:
        row["input"] = {"question": records[0].input}
        row["expected_output"] = None
    else:
        row["turns"] = [{"user": r.input, "expected_output": None} for r in records]
    row["metadata"] = metadata
    return row


def _session_records(store: TraceStore, record: TraceRecord) -> list[TraceRecord]:
    """The trace's session up to and including it (the trace alone when it has none)."""
    if record.session is None:
        return [record]
    chosen: list[TraceRecord] = []
    for trace_id in store.session_traces(record.session):
        earlier = record if trace_id == record.trace_id else store.record(trace_id)
        if earlier is not None and earlier.input:
            chosen.append(earlier)
        if trace_id == record.trace_id:
            break
    return chosen or [record]


def _existing(path: Path) -> list[dict[str, Any]]:
    """The samples already in the file (kept verbatim), or none when there is no file."""
    if not is_file(path):
        return []
    document = parse_document(read_text(path, DatasetError), path, DatasetError)
    samples = document.get("samples") if isinstance(document, Mapping) else None
    if not isinstance(samples, list):
        raise DatasetError("has no 'samples' list to add to", file=str(path), field="samples")
    return [s for s in samples if isinstance(s, dict)]


def _hash_of(sample: Mapping[str, Any]) -> str | None:
    metadata = sample.get("metadata")
    assay = metadata.get("assay") if isinstance(metadata, Mapping) else None
    production = assay.get("production") if isinstance(assay, Mapping) else None
    digest = production.get("content_hash") if isinstance(production, Mapping) else None
    return digest if isinstance(digest, str) else None


def promote(store: TraceStore, path: Path, options: PromoteOptions) -> tuple[int, int]:
    """Write the promoted rows to ``path`` (YAML); (rows added, rows in the file)."""
    samples = _existing(path)
    seen = {h for s in samples if (h := _hash_of(s)) is not None}
    stamp = datetime.now(timezone.utc).isoformat(timespec="seconds")
    added = 0
    for records, failed in _candidates(store, options):
        digest = content_hash(records)
        if digest in seen:
            continue
        seen.add(digest)
        samples.append(_row(records, failed, stamp))
        added += 1
    if not samples:
        return 0, 0
    document = {
        "schema_version": DATASET_SCHEMA,
        "name": options.name,
        "description": "Production traces that failed online scoring or were flagged by a person.",
        "samples": samples,
    }
    write_atomic(path, yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=100))
    return added, len(samples)


def _candidates(
    store: TraceStore, options: PromoteOptions
) -> list[tuple[list[TraceRecord], list[str]]]:
    """Each failing or flagged trace with its session's earlier traces; a session's failures
    become one conversation, up to its last failing trace."""
    by_session: dict[str, tuple[TraceRecord, list[str]]] = {}
    for trace_id, failed in _failures(store, options).items():
        record = store.record(trace_id)
        if record is None:
            if trace_id in options.trace_ids:
                raise UsageError(f"trace {trace_id} is not in the trace store")
            continue
        if not record.input:
            continue  # nothing to ask a system under test
        key = record.session if record.session is not None else f"trace:{trace_id}"
        known = by_session.get(key)
        if known is None or known[0].started_ns <= record.started_ns:
            merged = sorted({*failed, *(known[1] if known else [])})
            by_session[key] = (record, merged)
    return [(_session_records(store, r), f) for r, f in by_session.values()]
