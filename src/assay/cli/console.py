"""Exit codes and one-line diagnostics shared by every command (stderr only)."""

from __future__ import annotations

import re
from typing import NoReturn

import typer

EXIT_OK = 0
EXIT_GATE_FAILED = 1
EXIT_USAGE = 2

# Characters that would break a diagnostic's one printable line: C0 and C1 controls (NUL, line
# breaks, ESC...), DEL, the Unicode line and paragraph separators, and the bidi overrides.
_UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f-\x9f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def error_line(message: str) -> str:
    """The line that reports ``message``: ``assay: error: ...`` with every unprintable
    character escaped as ``repr`` writes it (``\\x00``, ``\\n``), so a user's string quoted in
    the message (a metric name with a NUL or a line break) cannot split or hide the line."""
    return f"assay: error: {printable(message)}"


def printable(text: str) -> str:
    """``text`` with the characters :data:`_UNPRINTABLE` matches escaped as ``repr`` does."""
    return _UNPRINTABLE.sub(lambda found: repr(found.group())[1:-1], text)


def fail(message: str, code: int = EXIT_USAGE) -> NoReturn:
    """Print a one-line error to stderr and exit; never a traceback for a user mistake."""
    typer.echo(error_line(message), err=True)
    raise typer.Exit(code)


def warn(message: str) -> None:
    typer.echo(f"assay: warning: {printable(message)}", err=True)
