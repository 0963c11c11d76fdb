"""The streamed async path: each execution is delivered once, in the order it finished, and
filling the window lets the first executions progress before the last ones start."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Iterator

from assay.data.dataset import Sample
from assay.data.executions import Execution
from assay.data.outputs import Output
from assay.data.results import ExecutionResult
from assay.engine.runner import Runner
from assay.report.model import SystemUnderTestInfo


class EventSut:
    """An async system under test that logs when each answer starts and ends; sample ``i``
    of ``n`` answers after ``delays[i]`` seconds (0: after one pass of the event loop)."""

    synchronous = False
    outputs_on_disk = True  # no conversations to track

    def __init__(self, delays: dict[str, float]) -> None:
        self.delays = delays
        self.events: list[tuple[str, str]] = []

    def describe(self) -> SystemUnderTestInfo:
        return SystemUnderTestInfo(kind="python", target="events")

    async def answer(self, sample: Sample) -> Output:
        self.events.append(("start", sample.id))
        await asyncio.sleep(self.delays[sample.id])
        self.events.append(("end", sample.id))
        return Output(f"answer {sample.id}")


def executions(count: int) -> list[Execution]:
    return [
        Execution(i, Sample(id=f"{i:03d}", input={"q": i}, expected_output="x"), 0)
        for i in range(count)
    ]


def run_stream(sut: EventSut, count: int, **options: int) -> list[str]:
    """The sample ids in the order the runner handed their results on."""
    delivered: list[str] = []

    def on_result(result: ExecutionResult, output: Output | None) -> None:
        delivered.append(result.sample_id)

    Runner([], sut, on_result=on_result, **options).run(executions(count))
    return delivered


def test_results_are_delivered_once_each_in_the_order_they_finished() -> None:
    count = 12
    # Later samples answer sooner: 011 first, 000 last.
    sut = EventSut({f"{i:03d}": 0.002 * (count - i) for i in range(count)})
    delivered = run_stream(sut, count, sut_concurrency=count)
    finished = [sample_id for kind, sample_id in sut.events if kind == "end"]
    assert delivered == finished
    assert sorted(delivered) == [f"{i:03d}" for i in range(count)]


def test_a_small_window_still_delivers_every_execution() -> None:
    count = 50
    sut = EventSut({f"{i:03d}": 0.001 * (i % 5) for i in range(count)})
    delivered = run_stream(sut, count, sut_concurrency=4, window=3)
    assert sorted(delivered) == [f"{i:03d}" for i in range(count)]


def test_filling_the_window_lets_the_first_answers_come_back_before_the_last_start() -> None:
    count = 100
    sut = EventSut(dict.fromkeys((f"{i:03d}" for i in range(count)), 0.0))
    run_stream(sut, count, sut_concurrency=count, window=count)
    assert sut.events.index(("end", "000")) < sut.events.index(("start", f"{count - 1:03d}"))


def test_a_run_leaves_nothing_frozen_and_the_collector_thresholds_as_they_were() -> None:
    thresholds = gc.get_threshold()
    run_stream(EventSut({f"{i:03d}": 0.0 for i in range(20)}), 20)
    assert gc.get_freeze_count() == 0
    assert gc.get_threshold() == thresholds


def _planned_and_started(sut: EventSut, count: int, *, in_memory: bool) -> list[tuple[str, str]]:
    """The runner's log of planning each execution and of answers starting, in order."""
    listed = executions(count)

    def planned() -> Iterator[Execution]:
        for execution in listed:
            sut.events.append(("planned", execution.sample.id))
            yield execution

    samples = [e.sample for e in listed] if in_memory else ()
    Runner([], sut, on_result=lambda *_: None, prepare_with=samples).run(planned())
    return [event for event in sut.events if event[0] in ("planned", "start")]


def test_saved_outputs_in_memory_start_answering_before_every_execution_is_planned() -> None:
    count = 20
    events = _planned_and_started(
        EventSut(dict.fromkeys(executions_ids(count), 0.0)), count, in_memory=True
    )
    assert events.index(("start", "000")) < events.index(("planned", f"{count - 1:03d}"))
    assert sorted(events) == sorted(
        [("planned", i) for i in executions_ids(count)]
        + [("start", i) for i in executions_ids(count)]
    )


def test_samples_not_in_memory_are_all_planned_before_the_first_answer() -> None:
    count = 20
    events = _planned_and_started(
        EventSut(dict.fromkeys(executions_ids(count), 0.0)), count, in_memory=False
    )
    assert events[:count] == [("planned", i) for i in executions_ids(count)]


def executions_ids(count: int) -> list[str]:
    return [f"{i:03d}" for i in range(count)]
