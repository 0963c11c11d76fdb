"""The tasks of a stream that have finished and are not handed on yet, in finishing order: the
runner's streamed path waits on this instead of ``asyncio.wait`` over the whole window."""

from __future__ import annotations

from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:  # imported in wait(): a run that never awaits does not load asyncio
    import asyncio

T = TypeVar("T")


class FinishedTasks(Generic[T]):
    """The tasks of a stream that have finished and are not delivered yet, in finishing order.

    ``add`` is each task's done callback; ``wait`` returns the tasks finished so far, waiting
    for one when none has (one callback per task, where ``asyncio.wait`` on the whole window
    added and removed one on every task in flight at every wait).
    """

    __slots__ = ("_done", "_wake")

    def __init__(self) -> None:
        self._done: list[asyncio.Task[T]] = []
        self._wake: asyncio.Future[None] | None = None

    def add(self, task: asyncio.Task[T]) -> None:
        self._done.append(task)
        if self._wake is not None and not self._wake.done():
            self._wake.set_result(None)

    async def wait(self) -> list[asyncio.Task[T]]:
        if not self._done:
            import asyncio

            self._wake = asyncio.get_running_loop().create_future()
            try:
                await self._wake
            finally:
                self._wake = None
        done, self._done = self._done, []
        return done
