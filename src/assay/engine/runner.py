"""The run engine: answer every (sample, repetition), score it with every metric, hand it on.

Saved outputs scored by offline metrics take a plain synchronous loop (no event loop per
sample) that scores a chunk of executions at a time: each metric scores the chunk's rows in one
``score_batch`` call when it offers one (see :mod:`assay.metrics.batch`), else row by row.
Anything that calls out — a Python or HTTP system under test, provider-backed metrics — runs on
asyncio: calls to the system under test go through an adaptive limiter
(:mod:`assay.providers.limiter`),
provider calls through their endpoint's limiter of the same kind, and executions stream (a new
one starts as soon as one ends). When a metric can batch its provider calls (``prefetch``),
executions go in windows instead, scoring one window while answering the next. There the
metrics that await score each answer as it arrives, and the others score the answers that came
in together as one batch (:mod:`assay.engine.answered`). Each finished execution is handed to
``on_result`` at once, so the store commits it as it finishes. A failure of the system under
test or of a metric is recorded for that execution only; the run goes on.
"""

from __future__ import annotations

import contextlib
import gc
import inspect
import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, TypeGuard

from assay.data.dataset import Sample
from assay.data.executions import Execution, ResultChunk
from assay.data.outputs import Output
from assay.data.results import ExecutionResult
from assay.engine.answered import Answered, score_answered
from assay.engine.conversation import Conversations
from assay.engine.finished import FinishedTasks
from assay.engine.scoring import is_async_metric, score_async, score_chunk
from assay.engine.sut import AnswersNow, SystemUnderTest
from assay.errors import AssayError
from assay.metrics.base import Metric, Prefetcher, prefetches, prepares
from assay.metrics.registry import applies
from assay.providers.limiter import Limiter, RetryPolicy, call_limited

if TYPE_CHECKING:  # imported by the async path: a saved-outputs run never loads asyncio (~55 ms)
    import asyncio

ResultHandler = Callable[[ExecutionResult, Output | None], None]
ChunkHandler = Callable[["ResultChunk"], None]
FREEZE_EVERY = 10_000
SCORE_CHUNK = 2048  # executions scored together on the synchronous path (one column per metric)


def _listed(executions: Iterable[Execution]) -> Sequence[Execution]:
    return executions if isinstance(executions, Sequence) else list(executions)


def never_stop(*_: object) -> bool:
    """The default halt condition: none. Only without one are executions scored in chunks."""
    return False


def _accepts_argument(function: Callable[..., bool]) -> TypeGuard[Callable[[int], bool]]:
    """Whether ``should_stop`` takes the number of executions in flight."""
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return False
    try:
        signature.bind(0)
    except TypeError:
        return False
    return True


class Runner:
    """Drives one run. ``should_stop`` is polled between executions (budget halts).

    Calls to the system under test go through a :class:`~assay.providers.limiter.Limiter`: the one
    passed here, else the one the SUT carries as ``sut.limiter`` (``assay run`` attaches one
    built from ``--concurrency`` and ``--rpm``), else a fixed limit of ``sut_concurrency``. A SUT
    that raises :class:`~assay.errors.RateLimited` is retried after ``Retry-After``.
    """

    def __init__(
        self,
        metrics: Sequence[Metric],
        sut: SystemUnderTest,
        *,
        on_result: ResultHandler,
        sut_concurrency: int = 8,
        window: int = 256,
        should_stop: Callable[..., bool] = never_stop,
        scopes: Mapping[str, frozenset[str]] | None = None,
        limiter: Limiter | None = None,
        retries: RetryPolicy | None = None,
        prepare_with: Sequence[Sample] = (),
        executor: Callable[[Runner, Sequence[Execution]], None] | None = None,
        on_chunk: ChunkHandler | None = None,
    ) -> None:
        if sut_concurrency < 1:
            raise ValueError("sut_concurrency must be at least 1")
        self.metrics = list(metrics)
        self.sut = sut
        self.on_result = on_result
        self.sut_concurrency = sut_concurrency
        self.window = max(1, window)
        self.should_stop = should_stop
        self._stop: Callable[[int], bool] = (
            should_stop if _accepts_argument(should_stop) else lambda _in_flight: should_stop()
        )
        self.stopped_early = False
        self.scopes = dict(scopes or {})
        self.prepare_with = prepare_with  # not copied: it may be a streamed dataset
        self.limiter = limiter
        self.retries = retries
        self.executor = executor
        self.on_chunk = on_chunk  # saved outputs: results a chunk at a time, as columns
        self.conversations: Conversations | None = None

    def metrics_for(self, sample: Sample) -> list[Metric]:
        """The metrics that apply to a sample (tag-scoped metrics skip other samples)."""
        if not self.scopes:
            return self.metrics
        tags = sample.tags
        return [m for m in self.metrics if applies(self.scopes, m.name, tags)]

    @property
    def needs_event_loop(self) -> bool:
        return not getattr(self.sut, "synchronous", False) or any(
            is_async_metric(m) for m in self.metrics
        )

    @property
    def by_chunk(self) -> bool:
        """Whether every result goes to ``on_chunk`` (the synchronous path with a handler)."""
        return self.on_chunk is not None and self.executor is None and not self.needs_event_loop

    def run(self, executions: Iterable[Execution]) -> None:
        """Run every execution. The cycle collector is kept quiet meanwhile (see _deliver_with):
        what exists before the run is frozen, and gen-0 collections are made rarer; afterwards
        everything, the run's objects too, is unfrozen into the oldest generation.

        The synchronous path takes ``executions`` a chunk at a time (a generator stays lazy),
        and so does the concurrent path where it can (:meth:`_launches_as_planned`); the
        others list them first.
        """
        handler, chunk_handler = self.on_result, self.on_chunk
        self.on_result = self._deliver_with(handler)
        if chunk_handler is not None:
            self.on_chunk = self._chunks_with(chunk_handler)
        thresholds = gc.get_threshold()
        gc.freeze()
        gc.set_threshold(max(thresholds[0], 50_000), thresholds[1], thresholds[2])
        try:
            if self.executor is not None:
                self.executor(self, _listed(executions))
            elif self.needs_event_loop:
                import asyncio

                asyncio.run(self.run_async(executions))
            else:
                self._run_sync(executions)
        finally:
            self.on_result, self.on_chunk = handler, chunk_handler
            # What the run allocated since the last freeze (up to the raised threshold's worth)
            # joins the frozen objects first, so restoring the threshold does not set off a
            # collection that walks all of it at once (~5-10 ms at the end of a judge run);
            # unfrozen, everything lands in the oldest generation, as the run's survivors would.
            gc.freeze()
            gc.set_threshold(*thresholds)
            gc.unfreeze()

    def _deliver_with(self, handler: ResultHandler) -> ResultHandler:
        """``handler`` plus a periodic ``gc.freeze()``.

        What a run keeps per execution (the rows of the report) is long-lived and acyclic, yet
        every full collection would walk all of it again: a cost that grows with the run. Every
        ``FREEZE_EVERY`` executions the survivors move out of the collector's view; the run
        unfreezes them at the end. Reference counting still frees anything dropped meanwhile.
        """
        count = 0

        def deliver(result: ExecutionResult, output: Output | None) -> None:
            nonlocal count
            handler(result, output)
            count += 1
            if count % FREEZE_EVERY == 0 and gc.isenabled():
                gc.freeze()

        return deliver

    def _chunks_with(self, handler: ChunkHandler) -> ChunkHandler:
        """``handler`` plus the periodic ``gc.freeze()`` of :meth:`_deliver_with`."""
        count = 0

        def deliver(chunk: ResultChunk) -> None:
            nonlocal count
            handler(chunk)
            before, count = count, count + len(chunk.executions)
            if count // FREEZE_EVERY != before // FREEZE_EVERY and gc.isenabled():
                gc.freeze()

        return deliver

    # ----------------------------------------------------------------------- sync path

    def _run_sync(self, executions: Iterable[Execution]) -> None:
        """Answers come at once (saved outputs); metrics score a chunk at a time, as columns.

        With a halt condition the chunk is one execution, so the run stops exactly where the
        condition says (it may depend on the results delivered so far).
        """
        if not isinstance(self.sut, AnswersNow):
            raise TypeError(f"{type(self.sut).__name__} is synchronous but has no answers_now()")
        answers_now = self.sut.answers_now
        size = SCORE_CHUNK if self.should_stop is never_stop else 1
        pending = iter(executions)
        while chunk := list(itertools.islice(pending, size)):
            if self.should_stop():
                self.stopped_early = True
                return
            answers = answers_now([execution.sample for execution in chunk])
            self._deliver_chunk(score_chunk(self.metrics, self.scopes, chunk, answers))

    def _deliver_chunk(self, scored: ResultChunk) -> None:
        """A scored chunk to ``on_chunk`` when there is one, else each row to ``on_result``."""
        if self.on_chunk is not None:
            self.on_chunk(scored)
            return
        for answer, result in zip(scored.answers, scored.results):
            self.on_result(result, answer if isinstance(answer, Output) else None)

    # ----------------------------------------------------------------------- async path

    def sut_limiter(self) -> Limiter:
        """The limiter for calls to the system under test: given, carried by the SUT, or fixed."""
        if self.limiter is not None:
            return self.limiter
        carried = getattr(self.sut, "limiter", None)
        if isinstance(carried, Limiter):
            return carried
        return Limiter(self.sut_concurrency, adaptive=False)

    async def prepare(self) -> None:
        """Once per run: metrics that learn from the whole dataset (e.g. IDF weights) do it here.

        The samples are the dataset's, not just what is left to run, so a resumed run scores
        exactly as an uninterrupted one. A failed preparation surfaces as each sample's failure.
        With no samples given (a Ray worker scoring metrics the driver already prepared) this
        does nothing.
        """
        if not self.prepare_with:
            return
        for metric in self.metrics:
            if prepares(metric):
                with contextlib.suppress(AssayError):
                    await metric.prepare(self.prepare_with)

    async def run_async(self, executions: Iterable[Execution]) -> None:
        prefetchers = [m for m in self.metrics if prefetches(m)]
        if not self._launches_as_planned(prefetchers):
            executions = _listed(executions)
        await self.prepare()
        if not getattr(self.sut, "outputs_on_disk", False):
            self.conversations = Conversations((e.sample, e.repetition) for e in executions)
        limiter = self.sut_limiter()
        try:
            if prefetchers:
                await self._run_windows(_listed(executions), limiter, prefetchers)
            else:
                await self._run_stream(executions, limiter)
        finally:
            close = getattr(self.sut, "aclose", None)
            if close is not None:
                await close()

    def _launches_as_planned(self, prefetchers: list[Prefetcher]) -> bool:
        """Whether ``run_async`` takes executions as it launches them instead of listing them
        first: saved outputs, no prefetch windows, samples in memory (planning them cannot fail
        midway). A judge run's first request waited for all its executions to be planned."""
        on_disk = bool(getattr(self.sut, "outputs_on_disk", False))
        return on_disk and not prefetchers and isinstance(self.prepare_with, list)

    async def _run_stream(self, executions: Iterable[Execution], limiter: Limiter) -> None:
        """Each execution answers and scores on its own; a new one starts as soon as one ends.

        At most ``window`` executions (or twice the SUT limit, if larger) are in flight, so a
        slow sample never holds back the rest and memory stays bounded. Each one reports its
        own end (:class:`~assay.engine.finished.FinishedTasks`), so waiting for the next costs the
        same
        whatever the window.
        """
        import asyncio

        cap = max(self.window, 2 * limiter.max_concurrency)
        finished: FinishedTasks[Answered] = FinishedTasks()
        running: set[asyncio.Task[Answered]] = set()
        try:
            for execution in executions:
                if len(running) >= cap:
                    await self._settle(running, finished)
                # A budget that would be passed with this one launched waits for the work in
                # flight to report its cost, and halts only once nothing is in flight.
                while running and self._stop(len(running)):
                    await self._settle(running, finished)
                if self._stop(len(running)):
                    self.stopped_early = True
                    break
                task = asyncio.ensure_future(self._one(limiter, execution))
                running.add(task)
                task.add_done_callback(finished.add)
                if len(running) < cap:
                    # Filling the window: each new execution takes its first steps (a judge
                    # prompt, a request) before the next starts, and the replies of the first
                    # requests are read as they come instead of after the whole window started.
                    await asyncio.sleep(0)
            while running:
                await self._settle(running, finished)
        finally:
            for task in running:
                task.cancel()
            if running:
                await asyncio.gather(*running, return_exceptions=True)

    async def _settle(
        self, running: set[asyncio.Task[Answered]], finished: FinishedTasks[Answered]
    ) -> None:
        """Wait until executions in flight finish; deliver those that did, in the order they
        finished, and take them out of ``running``."""
        done = await finished.wait()
        running.difference_update(done)
        self._deliver_answered([task.result() for task in done])  # a broken store ends the run

    async def _one(self, limiter: Limiter, execution: Execution) -> Answered:
        return await self._score_async(execution, await self._answer(limiter, execution))

    async def _run_windows(
        self, executions: Sequence[Execution], limiter: Limiter, prefetchers: list[Prefetcher]
    ) -> None:
        """Windows of answers, so metrics can batch provider calls (``prefetch``) per window.

        Scoring of one window overlaps answering of the next.
        """
        import asyncio

        scoring: asyncio.Future[list[Answered]] | None = None
        try:
            for start in range(0, len(executions), self.window):
                if self._stop(0):
                    self.stopped_early = True
                    break
                window = executions[start : start + self.window]
                answers = await asyncio.gather(*(self._answer(limiter, e) for e in window))
                ready = [(e.sample, a) for e, a in zip(window, answers) if isinstance(a, Output)]
                for metric in prefetchers:
                    # A failed prefetch only loses the batching; each sample's own call reports the
                    # error.
                    with contextlib.suppress(Exception):
                        await metric.prefetch(ready)
                if scoring is not None:
                    self._deliver_answered(await scoring)
                scoring = asyncio.gather(
                    *(self._score_async(e, a) for e, a in zip(window, answers))
                )
            if scoring is not None:
                self._deliver_answered(await scoring)
        finally:
            if scoring is not None and not scoring.done():
                scoring.cancel()
                await asyncio.gather(scoring, return_exceptions=True)

    async def _answer(self, limiter: Limiter, execution: Execution) -> Output | str:
        answer = await self._ask_sut(limiter, execution)
        if self.conversations:
            self.conversations.record(execution.sample, execution.repetition, answer)
        return answer

    async def _ask_sut(self, limiter: Limiter, execution: Execution) -> Output | str:
        sample = execution.sample
        try:
            if self.conversations:  # waits for earlier turns outside the limiter's slots
                sample = await self.conversations.with_history(sample, execution.repetition)
            output, _ = await call_limited(
                limiter, lambda: self.sut.answer(sample), policy=self.retries
            )
            return output
        except AssayError as exc:
            return str(exc)
        except Exception as exc:
            return f"system under test failed: {type(exc).__name__}"

    async def _score_async(self, execution: Execution, answer: Output | str) -> Answered:
        """The answer with the scores of the metrics that await (providers, async ``score``)."""
        if isinstance(answer, str):
            return Answered(execution, answer, {})
        import asyncio

        sample = execution.sample
        metrics = [m for m in self.metrics_for(sample) if is_async_metric(m)]
        results = await asyncio.gather(*(score_async(m, sample, answer) for m in metrics))
        return Answered(execution, answer, {m.name: r for m, r in zip(metrics, results)})

    def _deliver_answered(self, answered: Sequence[Answered]) -> None:
        """Score the synchronous metrics over the answers that are in (``score_answered``),
        then hand each execution's result on."""
        score_answered(self.metrics, answered, applies=self._applies)
        for item in answered:
            names = [m.name for m in self.metrics_for(item.execution.sample)]
            output = item.answer if isinstance(item.answer, Output) else None
            self.on_result(item.result(names), output)

    def _applies(self, metric: Metric, sample: Sample) -> bool:
        return not self.scopes or applies(self.scopes, metric.name, sample.tags)
