"""A one-entry, per-thread memo keyed on object identity, for parses that metrics share."""

from __future__ import annotations

import threading
from typing import Generic, TypeVar

_T = TypeVar("_T")


class LastParsed(threading.local, Generic[_T]):
    """The last parse per thread: the metrics of one execution (or one batch) share one parse.

    Keyed on object identity, so it can never return a parse of a different value; it holds
    no metric state (metrics stay stateless and shareable). ``value`` is None until the first
    parse, and ``source`` is then None too, which no caller's input is.
    """

    def __init__(self) -> None:
        self.source: object = None
        self.value: _T | None = None

    def remember(self, source: object, value: _T) -> _T:
        self.source, self.value = source, value
        return value
