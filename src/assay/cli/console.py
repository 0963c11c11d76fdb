"""Exit codes and one-line diagnostics shared by every command (stderr only)."""

from __future__ import annotations

from typing import NoReturn

import typer

from assay.data.terminal import printable as printable  # re-exported: one escape everywhere

EXIT_OK = 0
EXIT_GATE_FAILED = 1
EXIT_USAGE = 2


def error_line(message: str) -> str:
    """The line that reports ``message``: ``assay: error: ...`` with every unprintable
    character escaped as ``repr`` writes it (``\\x00``, ``\\n``), so a user's string quoted in
    the message (a metric name with a NUL or a line break) cannot split or hide the line."""
    return f"assay: error: {printable(message)}"


def fail(message: str, code: int = EXIT_USAGE) -> NoReturn:
    """Print a one-line error to stderr and exit; never a traceback for a user mistake."""
    typer.echo(error_line(message), err=True)
    raise typer.Exit(code)


def warn(message: str) -> None:
    typer.echo(f"assay: warning: {printable(message)}", err=True)
