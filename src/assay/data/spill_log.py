"""Per-line numbers of a large file (id hashes, byte offsets) kept in a temporary file, not in
memory, and the checks made on them with bounded memory: duplicate hashes, and whether two
files list the same ids in the same order.

A run over 10,000,000 samples would otherwise hold 16 bytes a line for the dataset and as many
for its saved outputs, and twice that while they are sorted. Here a log keeps one block in
memory; the duplicate check sorts one hash-partition of the hashes at a time; and saved outputs
written in the dataset's order (the usual case: one script writes both) are joined line by line,
with no index (:func:`same_order`). Files in another order still work, through a sorted index
built in memory when the first lookup out of order needs it.
"""

from __future__ import annotations

import contextlib
import tempfile
from array import array
from collections.abc import Iterator
from typing import IO, TYPE_CHECKING

if TYPE_CHECKING:  # numpy loads where first used
    import numpy as np
    import numpy.typing as npt

LOG_BLOCK = 1 << 16  # values held in memory before they are written out (512 KB)
READ_BLOCK = 1 << 12  # values read back around a random index (32 KB)
SORT_BUCKET = 1 << 20  # hashes the duplicate check sorts at a time (8 MB)


class SpillLog:
    """64-bit integers appended in order: in memory up to ``block`` values (default
    :data:`LOG_BLOCK`), then in a temporary file (deleted when the log is); read back in chunks
    or one by index."""

    def __init__(self, block: int | None = None) -> None:
        self._block = max(1, block or LOG_BLOCK)
        self._tail = array("q")
        self._file: IO[bytes] | None = None
        self._written = 0
        self._cached = (-1, array("q"))  # (first index, values) of the last block read

    def append(self, value: int) -> None:
        self._tail.append(value)
        if len(self._tail) >= self._block:
            self._flush()

    def _flush(self) -> None:
        if self._file is None:
            # Open as long as the log lives (closed, and so deleted, with it).
            self._file = tempfile.TemporaryFile(prefix="assay-index-")  # noqa: SIM115
        self._file.seek(0, 2)
        self._tail.tofile(self._file)
        self._written += len(self._tail)
        self._tail = array("q")

    def __len__(self) -> int:
        return self._written + len(self._tail)

    def __getitem__(self, index: int) -> int:
        """The value at ``index`` (from the end when negative, as a list's)."""
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        if index >= self._written:
            return self._tail[index - self._written]
        start, values = self._cached
        if not start <= index < start + len(values):
            start = index - index % READ_BLOCK
            values = self._read(start, min(READ_BLOCK, self._written - start))
            self._cached = (start, values)
        return values[index - start]

    def _read(self, start: int, count: int) -> array[int]:
        assert self._file is not None
        self._file.seek(start * 8)
        values = array("q")
        values.frombytes(self._file.read(count * 8))
        return values

    def chunks(self) -> Iterator[npt.NDArray[np.int64]]:
        """The values in order, a block at a time."""
        import numpy as np

        for start in range(0, self._written, self._block):
            count = min(self._block, self._written - start)
            yield np.frombuffer(self._read(start, count), dtype=np.int64)
        if self._tail:
            yield np.frombuffer(self._tail, dtype=np.int64).copy()

    def to_array(self) -> npt.NDArray[np.int64]:
        """Every value in one array (memory: 8 bytes each)."""
        import numpy as np

        return np.concatenate([np.empty(0, dtype=np.int64), *self.chunks()])


def same_order(first: SpillLog, second: SpillLog | npt.NDArray[np.int64]) -> bool:
    """Whether a log and another log (or an array) hold the same values in the same order."""
    import numpy as np

    if len(first) != len(second):
        return False
    theirs = second.chunks() if isinstance(second, SpillLog) else iter([second])
    mine_left = theirs_left = np.empty(0, dtype=np.int64)
    for mine in first.chunks():
        mine_left = np.concatenate([mine_left, mine])
        while mine_left.size:
            if not theirs_left.size:
                theirs_left = next(theirs)
            size = min(mine_left.size, theirs_left.size)
            if not np.array_equal(mine_left[:size], theirs_left[:size]):
                return False
            mine_left, theirs_left = mine_left[size:], theirs_left[size:]
    return True


def has_duplicates(hashes: SpillLog) -> bool:
    """Whether two of the 64-bit hashes are equal (a duplicate, or a collision)."""
    return duplicate_hash(hashes) is not None


def duplicate_hash(hashes: SpillLog, bucket: int = SORT_BUCKET) -> int | None:
    """A hash that occurs twice among ``hashes``; None when each occurs once.

    Up to ``bucket`` hashes are sorted at once; more are split by their top bits into
    temporary files of about half that many each, and each file is sorted and checked alone.
    """
    import numpy as np

    if len(hashes) <= bucket:
        return _repeated(hashes.to_array())
    bits = min(16, max(1, (2 * len(hashes) // bucket).bit_length()))
    with contextlib.ExitStack() as stack:
        buckets = [stack.enter_context(tempfile.TemporaryFile()) for _ in range(1 << bits)]
        for chunk in hashes.chunks():
            which = (chunk.view(np.uint64) >> np.uint64(64 - bits)).astype(np.intp)
            order = np.argsort(which, kind="stable")
            bounds = np.searchsorted(which[order], np.arange(len(buckets) + 1))
            for index, handle in enumerate(buckets):
                handle.write(chunk[order[bounds[index] : bounds[index + 1]]].tobytes())
        for handle in buckets:
            handle.seek(0)
            found = _repeated(np.frombuffer(handle.read(), dtype=np.int64))
            if found is not None:
                return found
    return None


def _repeated(values: npt.NDArray[np.int64]) -> int | None:
    """A value that occurs twice in ``values``; None if none does."""
    import numpy as np

    ordered = np.sort(values)
    twice = np.flatnonzero(ordered[1:] == ordered[:-1])
    return int(ordered[twice[0]]) if twice.size else None
