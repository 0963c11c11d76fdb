"""JSONL files read a block at a time: lines with their byte offsets, and one line by offset.

Large datasets and saved-outputs files are read through here so a run holds an index (8 bytes a
line), not the parsed file. A JSONL line ends at ``\\n``, ``\\r\\n`` or a lone ``\\r``
(:data:`JSONL_BREAK`, which the whole-file reader splits on). Blocks are split on ``\\n`` only;
a file with a lone ``\\r`` is :class:`UnusualLineBreaks`, and its caller reads it whole the
ordinary way, so both readings always agree on what a line is. U+2028, U+2029 and U+0085 are
not breaks: JSON allows them unescaped inside strings.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from assay.errors import UnusualLineBreaks

BLOCK = 1 << 20
SMALL_BLOCK = 4096
BOM = b"\xef\xbb\xbf"
JSONL_BREAK = re.compile("\r\n|\r|\n")
"""Where a JSONL line ends (U+2028 and the other breaks of ``str.splitlines`` are text)."""


def first_offset(path: Path) -> int:
    """Where the first line starts: after a UTF-8 byte-order mark, if the file has one."""
    with path.open("rb") as handle:
        return len(BOM) if handle.read(len(BOM)) == BOM else 0


def iter_lines(path: Path, start: int = 0) -> Iterator[tuple[int, str]]:
    """``(offset, line)`` for every line from byte ``start``, decoded as UTF-8 (strict).

    The blocks of a line not yet ended are kept apart and joined once, when it ends: adding
    each block to the rest before looking for a break made a 100 MB line quadratic (17.6 s).
    """
    offset = start
    with path.open("rb") as handle:
        handle.seek(start)
        rest: list[bytes] = []  # the unended line's blocks
        while block := handle.read(BLOCK):
            cut = block.rfind(b"\n") + 1
            if not cut:
                rest.append(block)
                continue
            body = b"".join([*rest, block[:cut]]) if rest else block[:cut]
            rest = [block[cut:]]
            yield from _split(body, offset)
            offset += len(body)
        if any(rest):
            yield from _split(b"".join([*rest, b"\n"]), offset)


def iter_entries(path: Path, start: int = 0) -> Iterator[tuple[int, int, str]]:
    """``(line number, offset, line)`` of every line that is not blank, from byte ``start``."""
    for number, (offset, line) in enumerate(iter_lines(path, start), start=1):
        if line.strip():
            yield number, offset, line


def has_other_breaks(body: bytes) -> bool:
    """Whether ``body`` ends a line other than with ``\n`` or ``\r\n`` (with a lone ``\r``).

    A lone ``\r`` shows as more carriage returns than ``\r\n`` pairs.
    """
    return b"\r" in body and body.count(b"\r") != body.count(b"\r\n")


def _split(body: bytes, offset: int) -> Iterator[tuple[int, str]]:
    if has_other_breaks(body):
        raise UnusualLineBreaks
    if body.isascii():  # one decode for the block: a character is a byte
        for text in body.decode("ascii").split("\n")[:-1]:
            yield offset, text
            offset += len(text) + 1
        return
    for line in body.split(b"\n")[:-1]:
        yield offset, line.decode("utf-8")
        offset += len(line) + 1


class LineReader:
    """One line at a time by offset, from a cached block. Reads in file order grow the block
    (to 1 MB: the disk is touched once per thousands of lines); a jump elsewhere starts over
    with a small one, so lookups in any order read about one line each."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._start = 0
        self._block = b""
        self._size = SMALL_BLOCK

    def line_at(self, offset: int) -> str:
        """The line starting at byte ``offset`` (without its line break)."""
        return self.line_and_next(offset)[0]

    def line_and_next(self, offset: int) -> tuple[str, int]:
        """The line starting at byte ``offset`` (without its line break), and the offset just
        past its line break: where the next line starts."""
        relative = offset - self._start
        end = self._block.find(b"\n", relative) if 0 <= relative < len(self._block) else -1
        if end < 0:
            self._read(offset)
            relative = 0
            end = self._block.find(b"\n")
            if end < 0:
                end = len(self._block)
        return self._block[relative:end].decode("utf-8"), offset + end - relative + 1

    def _read(self, offset: int) -> None:
        """Load a block from ``offset`` that holds at least one whole line."""
        in_order = self._block and self._start <= offset <= self._start + len(self._block)
        size = min(2 * self._size, BLOCK) if in_order else SMALL_BLOCK
        with self.path.open("rb") as handle:
            while True:
                handle.seek(offset)
                block = handle.read(size)
                if b"\n" in block or len(block) < size:
                    break
                size *= 2
        self._start, self._block, self._size = offset, block, size
