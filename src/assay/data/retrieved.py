"""Retrieved documents: one :class:`Retrieved`, and :class:`RankedDocs`, an output's ranking.

``Output.retrieved`` is a :class:`RankedDocs`: a read-only sequence of ``Retrieved`` that holds
the ids (and texts, when any entry has one) as plain tuples of strings and builds each
``Retrieved`` when it is read. A plain tuple of strings is one object the garbage collector
stops tracking; a ``Retrieved`` per document, kept alive, is a million tracked objects for a
10,000-query run, and their tracking costs more than the ranking metrics themselves.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, overload


class Retrieved:
    """One retrieved document: its id and, when known, its text (``""`` when not).

    A plain slotted class rather than a frozen dataclass: construction cost matters in large
    retrieval runs. Treat instances as immutable.
    """

    __slots__ = ("id", "text")

    def __init__(self, id: str, text: str = "") -> None:
        self.id = id
        self.text = text

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Retrieved) and (self.id, self.text) == (other.id, other.text)

    def __hash__(self) -> int:
        return hash((self.id, self.text))

    def __repr__(self) -> str:
        return f"Retrieved(id={self.id!r}, text={self.text!r})"


class RankedDocs(Sequence[Retrieved]):
    """Retrieved documents best first, read-only: ``ids`` and ``texts`` (None when no entry has
    a text; else ``""`` where an entry has none), one ``Retrieved`` built per element read.

    Equal to another ``RankedDocs`` and to a tuple or list of equal ``Retrieved`` (its hash is
    that tuple's). Build one from entries with :meth:`of`.
    """

    __slots__ = ("ids", "texts")

    ids: tuple[str, ...]
    texts: tuple[str, ...] | None

    def __init__(self, ids: Iterable[str], texts: Iterable[str] | None = None) -> None:
        self.ids = ids if type(ids) is tuple else tuple(ids)
        if texts is not None:
            texts = texts if type(texts) is tuple else tuple(texts)
            if len(texts) != len(self.ids):
                raise ValueError("RankedDocs needs one text per id")
            if not any(texts):
                texts = None
        self.texts = texts

    @classmethod
    def of(cls, entries: Iterable[Retrieved]) -> RankedDocs:
        """The ranking of ``Retrieved`` entries, in their order (nothing is dropped)."""
        if type(entries) is tuple or type(entries) is list:  # the common case, before the
            items: Sequence[Retrieved] = entries  # ABC check below (a Python-level call)
        elif isinstance(entries, RankedDocs):
            return entries
        else:
            items = entries if isinstance(entries, (tuple, list)) else tuple(entries)
        try:  # comprehensions: faster than map(attrgetter) on slots
            ids = tuple([entry.id for entry in items if not entry.text])
            if len(ids) == len(items):  # no entry has a text: one pass, no texts tuple
                return cls(ids)
            ids = tuple([entry.id for entry in items])
            texts = [entry.text for entry in items]
        except AttributeError:
            raise TypeError(
                "retrieved must hold Retrieved entries (an id and a text each)"
            ) from None
        return cls(ids, texts)

    def __len__(self) -> int:
        return len(self.ids)

    @overload
    def __getitem__(self, index: int) -> Retrieved: ...

    @overload
    def __getitem__(self, index: slice) -> RankedDocs: ...

    def __getitem__(self, index: int | slice) -> Retrieved | RankedDocs:
        texts = self.texts
        if isinstance(index, slice):
            return RankedDocs(self.ids[index], None if texts is None else texts[index])
        return Retrieved(self.ids[index], "" if texts is None else texts[index])

    def __iter__(self) -> Iterator[Retrieved]:
        if self.texts is None:
            return map(Retrieved, self.ids)
        return map(Retrieved, self.ids, self.texts)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, RankedDocs):
            return self.ids == other.ids and self.texts == other.texts
        if isinstance(other, (tuple, list)):
            return len(other) == len(self.ids) and all(map(operator.eq, self, other))
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        if self.texts is None:
            return f"RankedDocs({self.ids!r})"
        return f"RankedDocs({self.ids!r}, texts={self.texts!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return RankedDocs, (self.ids, self.texts)
