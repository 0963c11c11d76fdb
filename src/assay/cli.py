"""The ``assay`` command line.

Exit codes (one table, see docs/gating.md): 0 clean; 1 the gate failed (errored rows,
thresholds, regressions, budget halt); 2 usage or input error. Machine-readable output goes to
stdout or ``--out``; progress and diagnostics go to stderr.
"""

from __future__ import annotations

import atexit
import gc
import sys

import typer

from assay.commands import CommandTree
from assay.console import EXIT_GATE_FAILED, EXIT_OK, EXIT_USAGE, fail, warn
from assay.errors import AssayError

app = typer.Typer(
    cls=CommandTree,  # each command loads on first use (assay.commands)
    name="assay",
    help="Evaluate LLM and RAG systems against golden datasets, and gate merges on the result.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _show_version(value: bool) -> None:
    if value:
        from assay import __version__

        typer.echo(f"assay {__version__}")
        raise typer.Exit(EXIT_OK)


@app.callback()
def _root(
    version: bool = typer.Option(
        False,
        "--version",
        help="Print assay's version and exit.",
        callback=_show_version,
        is_eager=True,
    ),
) -> None:
    """Evaluate LLM and RAG systems against golden datasets, and gate merges on the result."""


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point: turn assay errors into exit code 2 with one line."""
    # At exit nothing is left to collect that matters: the interpreter's final collections
    # over every object of numpy, pydantic and the run took ~0.1-0.2 s after the last line.
    atexit.unregister(gc.freeze)  # once, however often main runs in one process
    atexit.register(gc.freeze)
    try:
        app(args=argv, standalone_mode=True)
    except AssayError as exc:
        typer.echo(f"assay: error: {exc}", err=True)
        sys.exit(EXIT_USAGE)
    except KeyboardInterrupt:
        typer.echo("assay: interrupted", err=True)
        sys.exit(130)


__all__ = ["EXIT_GATE_FAILED", "EXIT_OK", "EXIT_USAGE", "app", "fail", "main", "warn"]
