"""The one escape for text that reaches a terminal: control characters written as ``repr`` does.

A user's string (a sample id, an input, the system's answer, a dataset name) may hold ESC, BEL,
BS, C1 controls (U+0080-U+009F, U+009B is a one-character CSI), line and paragraph separators or
bidi overrides. Written raw, they retitle the terminal, move the cursor or hide text. Every
line assay writes for a person goes through :func:`printable` (one line) or
:func:`printable_lines` (a document: its own line breaks kept).
"""

from __future__ import annotations

import re

_OTHERS = (
    r"\x7f-\x9f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"  # DEL, C1, separators, bidi
)
_ANY = re.compile(rf"[\x00-\x1f{_OTHERS}]")
_BUT_LINE_BREAKS = re.compile(rf"[\x00-\x09\x0b-\x1f{_OTHERS}]")  # LF kept


def _escaped(found: re.Match[str]) -> str:
    return repr(found.group())[1:-1]


def printable(text: str) -> str:
    """``text`` as one printable line: every control character escaped (``\\x1b``, ``\\n``)."""
    return _ANY.sub(_escaped, text)


def printable_lines(text: str) -> str:
    """``text`` with its line breaks (LF) kept and every other control character escaped."""
    return _BUT_LINE_BREAKS.sub(_escaped, text)
