"""The ``assay`` command line.

Exit codes (one table, see docs/gating.md): 0 clean; 1 the gate failed (errored rows,
thresholds, regressions, budget halt); 2 usage or input error. Machine-readable output goes to
stdout or ``--out``; progress and diagnostics go to stderr.
"""

from __future__ import annotations

import atexit
import gc
import os
import sys
import threading
from collections.abc import MutableMapping
from typing import NoReturn

import typer

from assay.cli.commands import CommandTree
from assay.cli.console import EXIT_GATE_FAILED, EXIT_OK, EXIT_USAGE, error_line, fail, warn
from assay.errors import AssayError

app = typer.Typer(
    cls=CommandTree,  # each command loads on first use (assay.cli.commands)
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
    ctx: typer.Context,
    version: bool = typer.Option(
        False,
        "--version",
        help="Print assay's version and exit.",
        callback=_show_version,
        is_eager=True,
    ),
) -> None:
    """Evaluate LLM and RAG systems against golden datasets, and gate merges on the result."""
    if ctx.invoked_subcommand != RUN_COMMAND:
        gc.enable()  # paused by main; `assay run` starts it with its evaluation


RUN_COMMAND = "run"
"""The command whose start-up runs with the cycle collector paused (see :func:`main`)."""


def main(argv: list[str] | None = None) -> None:
    """The command line in this process: assay errors become exit code 2 with one line
    (``script_main``, the console script and ``python -m assay``, also exits quickly)."""
    # At exit nothing is left to collect that matters: the interpreter's final collections
    # over every object of numpy, pydantic and the run took ~0.1-0.2 s after the last line.
    atexit.unregister(gc.freeze)  # once, however often main runs in one process
    atexit.register(gc.freeze)
    # Start-up (typer, pydantic, assay's modules, the dataset) makes ~0.3 s of long-lived
    # objects and almost no garbage; ~90 collections walked them again, ~15-20 ms of an
    # `assay run`'s start. The collector is paused until the command starts (_root), or, for
    # `assay run`, until its evaluation does (run_execution), and restored here at the end.
    collecting = gc.isenabled()
    gc.disable()
    try:
        app(args=argv, standalone_mode=True)
    except AssayError as exc:
        typer.echo(error_line(str(exc)), err=True)
        sys.exit(EXIT_USAGE)
    except KeyboardInterrupt:
        typer.echo("assay: interrupted", err=True)
        sys.exit(130)
    except Exception as exc:  # a case no check foresaw: one line and exit 2, never a traceback
        typer.echo(error_line(_unexpected(exc)), err=True)
        sys.exit(EXIT_USAGE)
    finally:
        if collecting:
            gc.enable()
        else:
            gc.disable()


def _unexpected(exc: Exception) -> str:
    """One line for an error no check anticipated: its type and the start of its message.

    Exit 1 means the gate failed, so a crash must not end with it (a CI job would read it as a
    verdict); what reaches here is an input assay failed to check, reported as bad input.
    """
    message = " ".join(str(exc).split())[:300]
    return (
        f"unexpected {type(exc).__name__}{': ' + message if message else ''} "
        "(an input assay did not check; please report it with the command)"
    )


def script_main() -> NoReturn:
    """``python -m assay`` and the ``assay`` script: :func:`main`, then a quick exit.

    Tearing the interpreter down (every module and object of numpy, scipy, pydantic and the
    run, freed one by one) took ~15 ms after the last line, on every command. The exit handlers
    still run and the standard streams are flushed, in the interpreter's order, and the exit
    status is the same; only the teardown is skipped. Where it could matter (another
    non-daemon thread still running, a status that is not a number, a stream that cannot be
    flushed) the exit is the usual one.
    """
    let_idle_blas_threads_sleep(os.environ)
    try:
        main()
    except SystemExit as exc:
        _leave(exc.code)
    _leave(None)


BLAS_TIMEOUT_ENV = "OPENBLAS_THREAD_TIMEOUT"
"""How long (2**N cycles) an idle OpenBLAS worker polls for work before it sleeps."""


def let_idle_blas_threads_sleep(environ: MutableMapping[str, str]) -> None:
    """Have numpy's OpenBLAS workers sleep as soon as they are idle, unless the user chose.

    numpy's OpenBLAS starts a worker thread per core when numpy is imported, and each polls
    for work for 2**28 cycles (about 0.1 s) before it sleeps: CPU that every ``assay`` command
    importing numpy spent on nothing, about 0.1 s per core beyond the first (0.12 s on two
    cores). assay sorts and sums its arrays and multiplies none large enough to use the
    workers. The shortest wait OpenBLAS accepts, 2**4 cycles, lets them sleep at once;
    matrix products still use every thread (woken per call). Set before numpy loads, in the
    command's own process only: the Python API leaves its host process as it is.
    """
    environ.setdefault(BLAS_TIMEOUT_ENV, "4")


def _leave(code: object) -> NoReturn:
    """Exit with ``code`` as ``sys.exit`` would, without the interpreter's teardown."""
    main_thread = threading.main_thread()
    others = [t for t in threading.enumerate() if t is not main_thread and not t.daemon]
    status = 0 if code is None else code
    if others or not isinstance(status, int):
        raise SystemExit(code)  # the usual exit: it waits for the threads, prints a message
    atexit._run_exitfuncs()  # what the interpreter runs first on the way out (it clears them)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:  # the interpreter's own exit reports it, with its status (120)
        raise SystemExit(code) from None
    os._exit(status)


__all__ = [
    "EXIT_GATE_FAILED",
    "EXIT_OK",
    "EXIT_USAGE",
    "app",
    "fail",
    "main",
    "script_main",
    "warn",
]
