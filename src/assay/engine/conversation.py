"""Multi-turn conversations with a live system under test: each turn sees the turns before it.

A conversation sample is expanded into one sample per turn
(:func:`assay.data.dataset.expand_turns`).
When a Python or HTTP system under test answers turn ``n``, its input carries ``history``: the
user messages and the system's own replies of turns ``1 .. n-1`` of the same repetition, as
``[{"role": "user", "content": ...}, {"role": "assistant", "content": ...}, ...]``. Turns of
one conversation are therefore answered in order; different conversations run concurrently.
A turn whose earlier turn failed is not asked: it is recorded as a failure of the system
under test naming the earlier turn.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from assay.data.dataset import HISTORY_KEY, MESSAGE_KEY, Sample, conversation_of
from assay.data.outputs import Output
from assay.errors import SystemUnderTestError

if TYPE_CHECKING:  # imported in _reply(): a run that never awaits does not load asyncio
    import asyncio

Key = tuple[str, int, int]  # conversation id, turn number, repetition


class Conversations:
    """The replies of earlier turns, handed to the turns that follow (one object per run)."""

    def __init__(self, executions: Iterable[tuple[Sample, int]]) -> None:
        self._messages: dict[tuple[str, int], str] = {}
        self._planned: set[Key] = set()
        for sample, repetition in executions:
            turn = conversation_of(sample)
            if turn is not None:
                self._messages[turn] = str(sample.input.get(MESSAGE_KEY, ""))
                self._planned.add((*turn, repetition))
        self._replies: dict[Key, asyncio.Future[str | None]] = {}

    def __bool__(self) -> bool:
        return bool(self._planned)

    def _reply(self, key: Key) -> asyncio.Future[str | None]:
        future = self._replies.get(key)
        if future is None:
            import asyncio

            future = self._replies[key] = asyncio.get_running_loop().create_future()
        return future

    async def with_history(self, sample: Sample, repetition: int) -> Sample:
        """The turn sample with ``input.history`` filled from the earlier turns' replies."""
        turn = conversation_of(sample)
        if turn is None:
            return sample
        conversation, number = turn
        history: list[dict[str, str]] = []
        for earlier in range(1, number):
            key = (conversation, earlier, repetition)
            if key not in self._planned:
                raise SystemUnderTestError(
                    f"turn {number} of conversation '{conversation}' needs the reply to turn "
                    f"{earlier}, which this run does not answer (resumed?); rerun the whole "
                    "conversation"
                )
            reply = await self._reply(key)
            if reply is None:
                raise SystemUnderTestError(
                    f"turn {earlier} of conversation '{conversation}' failed, so turn {number} "
                    "was not asked"
                )
            history.append({"role": "user", "content": self._messages[(conversation, earlier)]})
            history.append({"role": "assistant", "content": reply})
        return sample.model_copy(update={"input": {**sample.input, HISTORY_KEY: history}})

    def record(self, sample: Sample, repetition: int, answer: Output | str | Any) -> None:
        """Hand a turn's reply (None when it failed) to the turns waiting for it."""
        turn = conversation_of(sample)
        if turn is None:
            return
        future = self._reply((*turn, repetition))
        if not future.done():
            future.set_result(answer.text if isinstance(answer, Output) else None)
