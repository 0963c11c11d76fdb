"""``assay store``: a run store as a whole (``assay store copy SRC DST``)."""

from __future__ import annotations

from typing import Annotated

import typer

store_app = typer.Typer(
    help="Move a run store's history between SQLite and PostgreSQL.",
    no_args_is_help=True,
)


def register(app: typer.Typer) -> None:
    app.add_typer(store_app, name="store")


@store_app.command("copy")
def copy(
    source: Annotated[str, typer.Argument(help="The store to copy: a file or postgresql:// URL.")],
    destination: Annotated[
        str, typer.Argument(help="The store to copy into (made if new): a file or URL.")
    ],
) -> None:
    """Copy every run, its rows and verdicts, and every named baseline from SOURCE into
    DESTINATION; reports rendered from the copy are byte for byte the original's."""
    from assay.store.copy import copy_store
    from assay.store.location import existing_store, store_location

    copied = copy_store(existing_store(source), store_location(destination))
    rows = copied.rows
    typer.echo(
        f"copied {copied.runs} run(s): {rows['executions']} execution rows, "
        f"{rows['chunks']} chunks, {rows['gates']} gate verdicts, "
        f"{rows['compliance']} compliance summaries, {rows['baselines']} named baselines, "
        f"{rows['documents']} documents"
    )
