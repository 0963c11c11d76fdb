"""One path for every span that enters the store, from a file (``assay ingest``) or the
collector: sample by trace id, map to a part, redact, then write. Nothing is written before
the redactor has run over it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from assay.data.documents import read_capped
from assay.errors import TraceError
from assay.production.mapping import TraceMapping, span_part
from assay.production.otlp import RawSpan, file_requests, spans_of
from assay.production.redact import Redactor
from assay.production.sampling import keep
from assay.production.store import StoredSpan, TraceStore

WRITE_BATCH = 5000
"""Spans written per transaction when a file is ingested."""


@dataclass
class IntakeCounts:
    """What an ingest or a collector has seen and kept so far."""

    spans: int = 0
    kept: int = 0
    traces: set[str] = field(default_factory=set)
    redactions: dict[str, int] = field(default_factory=dict)

    def add(self, seen: int, kept: Sequence[StoredSpan]) -> None:
        self.spans += seen
        self.kept += len(kept)
        for span in kept:
            self.traces.add(span.trace_id)
            for kind, n in span.part.redacted.items():
                self.redactions[kind] = self.redactions.get(kind, 0) + n


@dataclass(frozen=True)
class Intake:
    """How spans are admitted: the sampling rate, the attribute mapping, the redactor."""

    redactor: Redactor
    mapping: TraceMapping
    sample_rate: float = 1.0

    def prepare(self, spans: Iterable[RawSpan]) -> list[StoredSpan]:
        """The sampled spans, mapped and redacted (a span with no trace id is dropped)."""
        kept = []
        for span in spans:
            if not span.trace_id or not keep(span.trace_id, self.sample_rate):
                continue
            part = self.redactor.part(span_part(span, self.mapping))
            kept.append(StoredSpan(span.trace_id, span.span_id, span.start_ns, part))
        return kept

    def admit(self, spans: Sequence[RawSpan], store: TraceStore, counts: IntakeCounts) -> None:
        kept = self.prepare(spans)
        if kept:
            store.write(kept)
        counts.add(len(spans), kept)


def ingest_files(paths: Sequence[Path], intake: Intake, store: TraceStore) -> IntakeCounts:
    """Every OTLP export file in ``paths`` into ``store``; a bad file stops with its name."""
    counts = IntakeCounts()
    for path in paths:
        data = read_capped(path, TraceError)
        pending: list[RawSpan] = []
        for request in file_requests(data, str(path)):
            pending.extend(spans_of(request))
            if len(pending) >= WRITE_BATCH:
                intake.admit(pending, store, counts)
                pending = []
        intake.admit(pending, store, counts)
    return counts
