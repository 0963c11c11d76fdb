"""``assay view``: serve the run store's pages on this machine until Ctrl-C."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from assay.cli.run_options import RedactOpt


def register(app: typer.Typer) -> None:
    app.command("view")(view)


def view(
    store_path: Annotated[
        Path | None, typer.Option("--store", envvar="ASSAY_STORE", help="Run store file.")
    ] = None,
    host: Annotated[
        str, typer.Option("--host", envvar="ASSAY_VIEW_HOST", help="Address to listen on.")
    ] = "127.0.0.1",
    port: Annotated[
        int, typer.Option("--port", envvar="ASSAY_VIEW_PORT", help="Port (0: any free one).")
    ] = 8765,
    redact: RedactOpt = False,
) -> None:
    """Browse runs, one run's samples, and two runs side by side in a local web page."""
    from assay.cli.console import fail
    from assay.store.schema import store_path as default_store
    from assay.view.data import ViewData
    from assay.view.server import ViewServer

    if not 0 <= port <= 65535:
        fail(f"--port must be between 0 and 65535; got {port}")
    data = ViewData(store_path or default_store(), redact=redact)
    try:
        server = ViewServer(data, host, port)
    except OSError as exc:
        data.close()
        fail(f"cannot listen on {host}:{port}: {exc.strerror or exc}")
    typer.echo(
        f"assay view: {server.url}  (read-only{', redacted' if redact else ''}, "
        f"{data.store.path}; Ctrl-C to stop)",
        err=True,
    )
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        data.close()
