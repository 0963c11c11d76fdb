"""Where each finished execution goes during a run: the store, the report, the failing rows.

A :class:`Recorder` receives results from the runner one at a time (a system under test that
answers concurrently) or a chunk at a time (saved outputs: a
:class:`~assay.engine.runner.ResultChunk`
with each metric's scores as a column). Either way every execution is committed to the run
store with its report row already encoded, folded into the report's aggregates, and kept in
the failing rows when it did not pass; nothing per sample is held once it is recorded (but
for the results that arrive while the report's modules load, see :class:`Recorder`).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

from assay.data.dataset import CONVERSATION_KEY, Sample, tags_of
from assay.data.executions import ChunkResults, Execution, ResultChunk, failing_entries
from assay.data.outputs import Output
from assay.data.results import (
    ExecutionResult,
    Thresholds,
    row_document,
    row_documents,
    threshold_for,
)
from assay.engine.resume_check import content_hash
from assay.store.runs import RunStore
from assay.store.schema import StoredExecution, encode_json, encode_scored_columns

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from assay.report.aggregate import ReportBuilder
    from assay.report.conversations import ConversationCollector
    from assay.report.failing import FailingRowCollector


class ReportParts(NamedTuple):
    """What the report is built from as results arrive."""

    builder: ReportBuilder
    failing: FailingRowCollector
    conversations: ConversationCollector


class _Held(NamedTuple):
    """A result recorded in the store whose report parts are still loading."""

    result: ExecutionResult
    sample: Sample
    output: Output | None
    tags: list[str]
    row_hash: str
    position: int


@dataclass
class Recorder:
    """Takes every finished execution of one run; see the module docstring."""

    run_id: str
    store: RunStore | None
    # Made at their first use: the report's modules load once the run is under way, so a
    # judge run's first request does not wait for them.
    report_parts: Callable[[], ReportParts]
    metric_names: list[str]
    thresholds: Thresholds
    keep_outputs: bool  # a Python or HTTP system's answers are kept; saved outputs stay on disk
    on_done: Callable[[Sequence[ExecutionResult]], None]  # progress: counts, hooks
    # Executions planned and not finished yet, by (sample id, repetition).
    waiting: dict[tuple[str, int], Execution] = field(default_factory=dict)
    # The first result one at a time starts making the report's parts in a thread (their
    # modules load there: _make_parts); meanwhile results are held, then folded into the report
    # in the order they came, while the event loop goes on reading replies and sending requests.
    _loader: threading.Thread | None = field(default=None, init=False)
    _made: ReportParts | None = field(default=None, init=False)
    _held: list[_Held] = field(default_factory=list, init=False)

    def _parts(self) -> ReportParts:
        """The report's parts, with every held result folded in."""
        if self._made is None:
            if self._loader is not None:
                self._loader.join()
            if self._made is None:  # not made in the thread (see _make_parts): made here
                self._made = self.report_parts()
        parts = self._made
        held, self._held = self._held, []
        for item in held:
            parts.builder.add(item.result, item.tags, item.row_hash, item.position)
            parts.conversations.add(item.result, item.sample, item.position)
            parts.failing.position = item.position
            parts.failing.add(item.result, item.sample, item.output)
        return parts

    def _loading(self) -> bool:
        """Whether the report's parts are still being made (the first call starts the thread)."""
        if self._made is not None:
            return False
        if self._loader is None:
            self._loader = threading.Thread(target=self._make_parts, daemon=True)
            self._loader.start()
        return self._loader.is_alive()

    def _make_parts(self) -> None:
        """The loading thread: the report's parts, their modules imported on the way. A failure
        is left to :meth:`_parts`, which makes them again and meets it with its own error."""
        with contextlib.suppress(Exception):
            self._made = self.report_parts()

    @property
    def builder(self) -> ReportBuilder:
        """The report's aggregates."""
        return self._parts().builder

    @property
    def failing(self) -> FailingRowCollector:
        """The report's failing rows."""
        return self._parts().failing

    @property
    def conversations(self) -> ConversationCollector:
        """The report's conversations."""
        return self._parts().conversations

    def planned(
        self, executions: Iterable[Execution], *, by_chunk: bool = False
    ) -> Iterator[Execution]:
        """``executions`` as the runner takes them, each remembered until its result is back
        (``by_chunk``: the runner hands them back in chunks, which carry their executions)."""
        if by_chunk:
            yield from executions
            return
        for execution in executions:
            self.waiting[(execution.sample.id, execution.repetition)] = execution
            yield execution

    def on_result(self, result: ExecutionResult, output: Output | None) -> None:
        """One finished execution (the concurrent paths)."""
        execution = self.waiting.pop((result.sample_id, result.repetition))
        sample, position = execution.sample, execution.position
        tags, row_hash = sample.tags, sample.row_hash
        if self.store is not None:
            stored = self._stored(result, output, execution, tags, row_hash)
            self.store.note_contents(self.run_id, [sample.id], [content_hash(sample)])
            self.store.record_many(self.run_id, [stored])  # may commit: the hash goes with it
        self._held.append(_Held(result, sample, output, tags, row_hash, position))
        if not self._loading():
            self._parts()
        self.on_done([result])

    def on_chunk(self, chunk: ResultChunk) -> None:
        """A chunk of finished executions, each metric's scores as a column (saved outputs)."""
        executions = chunk.executions
        samples = [execution.sample for execution in executions]
        tags = tags_of(samples)
        hashes = [sample.row_hash for sample in samples]
        outputs = [a if isinstance(a, Output) else None for a in chunk.answers]
        waiting = self.waiting
        for execution in executions if waiting else ():  # remembered: see planned
            del waiting[(execution.sample.id, execution.repetition)]
        if self.store is not None:
            contents = [content_hash(sample) for sample in samples]
            self.store.note_contents(self.run_id, [sample.id for sample in samples], contents)
            self._store_chunk(self.store, chunk, tags, hashes, outputs)  # commits them together
        passed = self.builder.add_chunk(chunk, tags, hashes)
        for index, sample in enumerate(samples):
            if CONVERSATION_KEY in sample.metadata:  # a turn (see conversation_of)
                self.conversations.add(chunk.result_at(index), sample, executions[index].position)
        self._add_failing(chunk, samples, outputs, passed)
        self.on_done(ChunkResults(chunk))

    def _add_failing(
        self,
        chunk: ResultChunk,
        samples: list[Sample],
        outputs: list[Output | None],
        passed: npt.NDArray[np.bool_],
    ) -> None:
        """The chunk's rows that did not pass to the failing rows: listed while they sort among
        the first ones, else only counted."""
        failing, executions = self.failing, chunk.executions
        entries: list[int] | None = None
        for index in (~passed).nonzero()[0].tolist():
            execution = executions[index]
            if failing.lists(execution.position, execution.repetition):
                failing.position = execution.position
                failing.add(chunk.result_at(index), samples[index], outputs[index])
                continue
            if entries is None:
                entries = failing_entries(chunk, self.thresholds).tolist()
            failing.count(entries[index])

    def _store_chunk(
        self,
        store: RunStore,
        chunk: ResultChunk,
        tags: list[list[str]],
        hashes: list[str],
        outputs: list[Output | None],
    ) -> None:
        """A chunk into the store, each execution with its report row encoded."""
        executions = chunk.executions
        if not chunk.clean:
            store.record_many(
                self.run_id,
                [
                    self._stored(result, output, execution, labels, row_hash)
                    for result, output, execution, labels, row_hash in zip(
                        chunk.results, outputs, executions, tags, hashes
                    )
                ],
            )
            return
        ids = [execution.sample.id for execution in executions]
        repetitions = [execution.repetition for execution in executions]
        store.record_clean(
            self.run_id,
            ids,
            repetitions,
            positions=[execution.position for execution in executions],
            tags=tags,
            row_hashes=hashes,
            rows=self._rows(chunk, ids, repetitions, tags, hashes),
            outputs=[o.to_json() if o is not None else None for o in outputs]
            if self.keep_outputs
            else [None] * len(outputs),
        )

    def _rows(
        self,
        chunk: ResultChunk,
        ids: list[str],
        repetitions: list[int],
        tags: list[list[str]],
        hashes: list[str],
    ) -> list[bytes]:
        """The report rows of a clean chunk, encoded: from its columns when every metric scored
        every row plainly (plain JSON, finite: encode_plain_rows), else from each result."""
        full = chunk.full_columns()
        by_name = dict(full) if full is not None else {}
        if full is None or any(name not in by_name for name in self.metric_names):
            rows = row_documents(chunk.results, tags, hashes, self.metric_names, self.thresholds)
            return list(map(encode_json, rows))
        columns = [
            (
                name,
                threshold_for(self.thresholds, name),
                by_name[name].values,
                by_name[name].details,
            )
            for name in self.metric_names
        ]
        return encode_scored_columns(ids, repetitions, tags, hashes, columns)

    def _stored(
        self,
        result: ExecutionResult,
        output: Output | None,
        execution: Execution,
        tags: list[str],
        row_hash: str,
    ) -> StoredExecution:
        """What the store keeps of one execution, its report row encoded once."""
        row = row_document(result, tags, row_hash, self.metric_names, self.thresholds)
        return StoredExecution(
            result=result,
            output=output.to_json() if output is not None and self.keep_outputs else None,
            position=execution.position,
            tags=tags,
            row_hash=row_hash,
            row=encode_json(row),
        )
