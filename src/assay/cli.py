"""The ``assay`` command line.

Exit codes (one table, see docs/cli.md): 0 clean; 1 the gate failed (captured failures,
thresholds, regressions, budget halt); 2 usage or input error. Machine-readable output goes to
stdout or ``--out``; progress and diagnostics go to stderr.
"""

from __future__ import annotations

import sys
from typing import NoReturn

import typer

from assay.errors import AssayError

EXIT_OK = 0
EXIT_GATE_FAILED = 1
EXIT_USAGE = 2

app = typer.Typer(
    name="assay",
    help="Evaluate LLM and RAG systems against golden datasets, and gate merges on the result.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def fail(message: str, code: int = EXIT_USAGE) -> NoReturn:
    """Print a one-line error to stderr and exit; never a traceback for a user mistake."""
    typer.echo(f"assay: error: {message}", err=True)
    raise typer.Exit(code)


def warn(message: str) -> None:
    typer.echo(f"assay: warning: {message}", err=True)


# --- sub-command registration ------------------------------------------------------------
# Each feature package exposes its commands from its own ``cli`` module; they are mounted here.
from assay import commands  # noqa: E402  (run, validate, metrics, runs, report)

commands.register(app)
# --- end of sub-command registration ------------------------------------------------------


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point: turn assay errors into exit code 2 with one line."""
    try:
        app(args=argv, standalone_mode=True)
    except AssayError as exc:
        typer.echo(f"assay: error: {exc}", err=True)
        sys.exit(EXIT_USAGE)
    except KeyboardInterrupt:
        typer.echo("assay: interrupted", err=True)
        sys.exit(130)


if __name__ == "__main__":  # pragma: no cover
    main()
