"""A large JSON document read forward in blocks: one top-level member's items, with byte spans.

A JSON dataset (``{"name": ..., "samples": [...]}``) or saved-outputs file (``{"outputs": ...}``)
of a million entries takes gigabytes as Python values. :class:`ItemScan` walks the file once
with the stdlib's decoder, one value at a time, over a window of text that holds about one block
plus the value being read: the other top-level members are parsed whole, and each item of the
chosen member (an array's elements, or an object's members with their keys) comes out with the
bytes it occupies, so the caller can keep the offsets and read the item again later.

Anything it does not expect (a top level that is not an object, a key given twice in any
object, the member missing or neither array nor object, invalid JSON or UTF-8, a value nested
deeper than the whole-file reader allows, a string with a lone surrogate escape such as
``"\\ud800"``) raises :class:`~assay.errors.NotIndexable`; the caller then reads the file whole,
which reports the problem exactly as it always did.
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple

from assay.data.bounded import (
    MAX_DEPTH,
    has_surrogate_escape,
    json_depth_problem,
    lone_surrogate_problem,
    unique_members,
)
from assay.data.jsonl_lines import BLOCK, BOM, SMALL_BLOCK
from assay.errors import NotIndexable

_DECODER = json.JSONDecoder(object_pairs_hook=unique_members)  # RepeatedKey: a ValueError
_NOT_SPACE = re.compile(r"[^ \t\n\r]")


class Item(NamedTuple):
    """One item of the member: its key (an object's member) or None (an array's element), its
    value, and the byte offsets ``[start, end)`` of its text in the file: the value's, or for
    an object's member ``"key": value`` (see :func:`parse_item`)."""

    key: str | None
    value: Any
    start: int
    end: int


class _Window:
    """The file's text from some offset on, read a block at a time, with a read position."""

    def __init__(self, handle: BinaryIO, base: int) -> None:
        self._handle = handle
        self._decode = codecs.getincrementaldecoder("utf-8")().decode  # strict: bad UTF-8 raises
        self.text = ""
        self.pos = 0
        self.eof = False
        self._ascii = True
        self._surrogates = False  # a \\ud800-style escape seen: values are then checked
        self._mark = (0, base)  # (index in text, byte offset): where byte counting resumes

    def fill(self, want: int = BLOCK) -> bool:
        """Read at least ``want`` more bytes (a block at least); False once the file is done."""
        if self.eof:
            return False
        size = max(want, BLOCK)
        data = self._handle.read(size)
        self.eof = len(data) < size
        chunk = self._decode(data, final=self.eof)
        self._ascii = self._ascii and chunk.isascii()
        seam = max(0, len(self.text) - 5)  # an escape may straddle the blocks
        self.text += chunk
        self._surrogates = self._surrogates or has_surrogate_escape(self.text, seam)
        return bool(chunk) or not self.eof

    def byte_at(self, index: int) -> int:
        """The byte offset of ``text[index]``; indexes are asked for in increasing order."""
        at, offset = self._mark
        if self._ascii:
            offset += index - at
        else:
            offset += len(self.text[at:index].encode("utf-8"))
        self._mark = (index, offset)
        return offset

    def next_char(self) -> str:
        """The next character that is not JSON whitespace, left unread; "" at the end."""
        while True:
            found = _NOT_SPACE.search(self.text, self.pos)
            if found is not None:
                self.pos = found.start()
                return self.text[self.pos]
            self.pos = len(self.text)
            if not self.fill():
                return ""

    def expect(self, char: str) -> None:
        if self.next_char() != char:
            raise NotIndexable
        self.pos += 1

    def value(self, depth_left: int) -> Any:
        """The JSON value at the read position (after whitespace), which is moved past it."""
        self.next_char()
        while True:
            try:
                value, end = _DECODER.raw_decode(self.text, self.pos)
            except json.JSONDecodeError:
                if self.fill(len(self.text) - self.pos):  # it may run past the window
                    continue
                raise NotIndexable from None
            except (ValueError, RecursionError):  # a huge integer, a repeated key, too deep for C
                raise NotIndexable from None
            if end == len(self.text) and self.fill():
                continue  # a number at the window's edge may go on
            text, pos = self.text, self.pos
            brackets = text.count("[", pos, end) + text.count("{", pos, end)
            if brackets > depth_left and json_depth_problem(text[pos:end], depth_left):
                raise NotIndexable
            if self._surrogates and lone_surrogate_problem(text[pos:end], value):
                raise NotIndexable  # the whole-file reader names it, as for a small file
            self.pos = end
            return value

    def drop_read(self) -> None:
        """Forget the text before the read position once it is a block long."""
        if self.pos >= BLOCK:
            offset = self.byte_at(self.pos)
            self.text = self.text[self.pos :]
            self.pos = 0
            self._mark = (0, offset)


class ItemScan:
    """One pass over a JSON document: :meth:`items` yields the items of ``member``; afterwards
    :attr:`header` holds the document's other top-level members and :attr:`kind` says whether
    the member was an ``"array"`` or an ``"object"``."""

    def __init__(self, path: Path, member: str) -> None:
        self.path = path
        self.member = member
        self.header: dict[str, Any] = {}
        self.kind: str | None = None

    def items(self) -> Iterator[Item]:
        """Every item of the member in file order; raises NotIndexable as the module says."""
        try:
            with self.path.open("rb") as handle:
                start = len(BOM) if handle.read(len(BOM)) == BOM else 0
                handle.seek(start)
                yield from self._document(_Window(handle, start))
        except (OSError, UnicodeDecodeError):
            raise NotIndexable from None
        if self.kind is None:
            raise NotIndexable

    def _document(self, window: _Window) -> Iterator[Item]:
        window.expect("{")
        if window.next_char() == "}":
            raise NotIndexable  # no member at all
        while True:
            if window.next_char() != '"':
                raise NotIndexable
            key = window.value(0)
            if key in self.header or (key == self.member and self.kind is not None):
                raise NotIndexable  # a key given twice: the whole-file reader keeps the last
            window.expect(":")
            if key == self.member:
                yield from self._member(window)
            else:
                self.header[key] = window.value(MAX_DEPTH - 1)
            if window.next_char() == ",":
                window.pos += 1
                continue
            window.expect("}")
            if window.next_char() != "":
                raise NotIndexable  # text after the document
            return

    def _member(self, window: _Window) -> Iterator[Item]:
        opening = window.next_char()
        if opening not in ("[", "{"):
            raise NotIndexable
        self.kind = "array" if opening == "[" else "object"
        closing = "]" if opening == "[" else "}"
        window.pos += 1
        if window.next_char() == closing:
            window.pos += 1
            return
        while True:
            key = None
            window.next_char()
            start = window.byte_at(window.pos)
            if closing == "}":
                if window.next_char() != '"':
                    raise NotIndexable
                key = window.value(0)
                window.expect(":")
            value = window.value(MAX_DEPTH - 2)
            yield Item(key, value, start, window.byte_at(window.pos))
            window.drop_read()
            if window.next_char() != ",":
                window.expect(closing)
                return
            window.pos += 1


def parse_item(text: str, *, keyed: bool) -> tuple[str | None, Any]:
    """An item's key and value from its text (an :class:`Item`'s span), parsed as the scan
    parsed it; ValueError (or RecursionError) if the text is not what it was."""
    if not keyed:
        return None, json.loads(text)
    member: dict[str, Any] = json.loads("{" + text + "}")
    if len(member) != 1:
        raise ValueError("not one member")
    [(key, value)] = member.items()
    return key, value


class SpanReader:
    """The text of a byte span of a file, from a cached block: spans read in file order come
    from blocks that grow to :data:`~assay.data.jsonl_lines.BLOCK`; a jump elsewhere starts a small
    block there, so reads in any order cost about the span each."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._start = 0
        self._block = b""
        self._size = SMALL_BLOCK

    def text(self, start: int, end: int) -> str:
        """Bytes ``[start, end)`` decoded as UTF-8 (UnicodeDecodeError if they are not)."""
        relative = start - self._start
        if relative < 0 or end - self._start > len(self._block):
            in_order = self._start <= start <= self._start + len(self._block)
            self._size = min(2 * self._size, BLOCK) if in_order else SMALL_BLOCK
            with self.path.open("rb") as handle:
                handle.seek(start)
                self._block = handle.read(max(self._size, end - start))
            self._start, relative = start, 0
        return self._block[relative : relative + end - start].decode("utf-8")
