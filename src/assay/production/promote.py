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

from assay.dataset import DATASET_SCHEMA, canonical_json
from assay.documents import parse_document, read_text
from assay.errors import DatasetError, UsageError
from assay.fileio import is_file, write_atomic
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


def content_hash(record: TraceRecord) -> str:
    """SHA-256 of the question and the contexts: the same request promoted twice is one row."""
    value = {"input": record.input, "contexts": record.contexts}
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


def _row(record: TraceRecord, failed: list[str], digest: str, stamp: str) -> dict[str, Any]:
    provenance: dict[str, Any] = {
        "trace_id": record.trace_id,
        "content_hash": digest,
        "failed_metrics": sorted(failed),
        "flagged": not failed,
        "promoted_at": stamp,
        "answer": record.output,
        "contexts": record.contexts,
    }
    if record.session is not None:
        provenance["session"] = record.session
    return {
        "id": f"prod-{digest[:12]}",
        "input": {"question": record.input},
        "expected_output": None,
        "metadata": {"tags": [TAG], "assay": {"production": provenance}},
    }


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
    for trace_id, failed in _failures(store, options).items():
        record = store.record(trace_id)
        if record is None:
            if trace_id in options.trace_ids:
                raise UsageError(f"trace {trace_id} is not in the trace store")
            continue
        if record.input is None:
            continue  # nothing to ask a system under test
        digest = content_hash(record)
        if digest in seen:
            continue
        seen.add(digest)
        samples.append(_row(record, failed, digest, stamp))
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
