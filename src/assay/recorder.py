"""Where each finished execution goes during a run: the store, the report, the failing rows.

A :class:`Recorder` receives results from the runner one at a time (a system under test that
answers concurrently) or a chunk at a time (saved outputs: a :class:`~assay.runner.ResultChunk`
with each metric's scores as a column). Either way every execution is committed to the run
store with its report row already encoded, folded into the report's aggregates, and kept in
the failing rows when it did not pass; nothing per sample is held once it is recorded.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from assay.dataset import CONVERSATION_KEY
from assay.executions import Execution, ResultChunk
from assay.outputs import Output
from assay.report.aggregate import ReportBuilder
from assay.report.conversations import ConversationCollector
from assay.report.failing import FailingRowCollector
from assay.results import ExecutionResult, Thresholds, row_document, row_documents
from assay.store import RunStore
from assay.store_schema import StoredExecution, encode_json


@dataclass
class Recorder:
    """Takes every finished execution of one run; see the module docstring."""

    run_id: str
    store: RunStore | None
    builder: ReportBuilder
    failing: FailingRowCollector
    conversations: ConversationCollector
    metric_names: list[str]
    thresholds: Thresholds
    keep_outputs: bool  # a Python or HTTP system's answers are kept; saved outputs stay on disk
    on_done: Callable[[Sequence[ExecutionResult]], None]  # progress: counts, hooks
    # Executions planned and not finished yet, by (sample id, repetition).
    waiting: dict[tuple[str, int], Execution] = field(default_factory=dict)

    def planned(self, executions: Iterable[Execution]) -> Iterator[Execution]:
        """``executions`` as the runner takes them, each remembered until its result is back."""
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
            self.store.record_many(self.run_id, [stored])
        self.builder.add(result, tags, row_hash, position)
        self.conversations.add(result, sample, position)
        self.failing.position = position
        self.failing.add(result, sample, output)
        self.on_done([result])

    def on_chunk(self, chunk: ResultChunk) -> None:
        """A chunk of finished executions, each metric's scores as a column (saved outputs)."""
        executions, results = chunk.executions, chunk.results
        samples = [execution.sample for execution in executions]
        tags = [sample.tags for sample in samples]
        hashes = [sample.row_hash for sample in samples]
        outputs = [a if isinstance(a, Output) else None for a in chunk.answers]
        for execution in executions:
            del self.waiting[(execution.sample.id, execution.repetition)]
        if self.store is not None:
            self._store_chunk(self.store, chunk, tags, hashes, outputs)
        passed = self.builder.add_chunk(chunk, tags, hashes).tolist()
        for index, sample in enumerate(samples):
            if CONVERSATION_KEY in sample.metadata:  # a turn (see conversation_of)
                self.conversations.add(results[index], sample, executions[index].position)
            if not passed[index]:
                self.failing.position = executions[index].position
                self.failing.add(results[index], sample, outputs[index])
        self.on_done(results)

    def _store_chunk(
        self,
        store: RunStore,
        chunk: ResultChunk,
        tags: list[list[str]],
        hashes: list[str],
        outputs: list[Output | None],
    ) -> None:
        """A chunk into the store, each execution with its report row encoded."""
        if not chunk.clean:
            store.record_many(
                self.run_id,
                [
                    self._stored(result, output, execution, labels, row_hash)
                    for result, output, execution, labels, row_hash in zip(
                        chunk.results, outputs, chunk.executions, tags, hashes
                    )
                ],
            )
            return
        rows = row_documents(chunk.results, tags, hashes, self.metric_names, self.thresholds)
        store.record_clean(
            self.run_id,
            chunk.results,
            positions=[execution.position for execution in chunk.executions],
            tags=tags,
            row_hashes=hashes,
            rows=list(map(encode_json, rows)),
            outputs=[o.to_json() if o is not None and self.keep_outputs else None for o in outputs],
        )

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
