"""``assay import SOURCE FILE -o OUT``: another tool's file as an assay dataset or labels file.

The converted document is checked with assay's own loaders before it is written; what could
not be carried over is listed on stderr (the first ``NOTES_SHOWN`` lines, then a count).
Exit codes: 0 written, 2 a usage or input error (one line naming file, item and field).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from assay.importers.common import Imported

NOTES_SHOWN = 20


def register(app: typer.Typer) -> None:
    app.command("import")(import_file)


def import_file(
    source: Annotated[
        str, typer.Argument(help="autorubric | padosoft-calibration | promptfoo | deepeval")
    ],
    path: Annotated[Path, typer.Argument(help="The tool's file (autorubric: or experiment dir).")],
    out: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="Write here (.yml / .yaml / .json); default stdout."),
    ] = None,
    dataset: Annotated[
        Path | None,
        typer.Option(
            "--dataset", help="autorubric results only: the RubricDataset they were run on."
        ),
    ] = None,
    outputs: Annotated[
        Path | None,
        typer.Option("--outputs", help="deepeval only: write the goldens' actual outputs here."),
    ] = None,
) -> None:
    """Convert another tool's file (autorubric, padosoft calibration cases, promptfoo, DeepEval)
    into an assay dataset or labels file, listing what could not be mapped."""
    from assay.importers import convert
    from assay.importers.writing import check, render, write

    imported = convert(source, path, dataset=dataset)
    check(imported, str(path))
    notes = [*imported.unmapped, *_saved_outputs(imported, outputs)]
    if out is None:
        sys.stdout.write(render(imported.document, None))
    else:
        write(imported.document, out)
    count = len(imported.document.get("samples") or imported.document.get("items") or [])
    noun = "samples" if imported.kind == "dataset" else "labelled items"
    typer.echo(f"imported {count} {noun} from {source} ({imported.kind})", err=True)
    _show_notes(notes)


def _saved_outputs(imported: Imported, outputs: Path | None) -> list[str]:
    """Write the answers the file carried to ``outputs``; a note when they are left out."""
    from assay.importers.writing import write

    saved = (imported.extra or {}).get("outputs")
    if saved is None:
        return []
    if outputs is None:
        return [f"{len(saved['outputs'])} goldens carry actual_output: --outputs FILE keeps them"]
    write(saved, outputs)
    typer.echo(f"wrote {outputs}: {len(saved['outputs'])} saved outputs", err=True)
    return []


def _show_notes(notes: list[str]) -> None:
    """What was not mapped, on stderr: the first NOTES_SHOWN lines and how many more."""
    if not notes:
        return
    typer.echo(f"not mapped ({len(notes)}):", err=True)
    for note in notes[:NOTES_SHOWN]:
        typer.echo(f"  {note}", err=True)
    if len(notes) > NOTES_SHOWN:
        typer.echo(f"  ... and {len(notes) - NOTES_SHOWN} more", err=True)
