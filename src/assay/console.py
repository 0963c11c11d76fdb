"""Exit codes and one-line diagnostics shared by every command (stderr only)."""

from __future__ import annotations

from typing import NoReturn

import typer

EXIT_OK = 0
EXIT_GATE_FAILED = 1
EXIT_USAGE = 2


def fail(message: str, code: int = EXIT_USAGE) -> NoReturn:
    """Print a one-line error to stderr and exit; never a traceback for a user mistake."""
    typer.echo(f"assay: error: {message}", err=True)
    raise typer.Exit(code)


def warn(message: str) -> None:
    typer.echo(f"assay: warning: {message}", err=True)
