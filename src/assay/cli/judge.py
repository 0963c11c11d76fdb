"""``assay judge``: the viewer's label queue's labels, exported for ``assay agreement``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

judge_app = typer.Typer(
    help="Judges that prove themselves: export the label queue's labels (and annotator "
    "agreement) for assay agreement.",
    no_args_is_help=True,
)


def register(app: typer.Typer) -> None:
    app.add_typer(judge_app, name="judge")


@judge_app.command("labels")
def labels(
    run_id: Annotated[str, typer.Argument(help="The run whose rows were labelled.")],
    metric: Annotated[str, typer.Option("--metric", help="The judge metric labelled.")],
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Write the CSV here, not to stdout.")
    ] = None,
    human: Annotated[
        str | None,
        typer.Option("--human", help="The annotator taken as ground truth (default: the most)."),
    ] = None,
    store_path: Annotated[
        Path | None, typer.Option("--store", envvar="ASSAY_STORE", help="Run store file.")
    ] = None,
) -> None:
    """Export a run's labels as the long labels CSV that assay agreement reads."""
    from assay.cli.run_report import write_out
    from assay.engine.rebuild import report_from_store
    from assay.judges.label_queue import annotator_agreement, labels_csv
    from assay.store.labels import LABELS_FILE, LabelStore
    from assay.store.runs import RunStore

    store = RunStore(store_path, read_only=True)
    made = LabelStore(Path(store.path).parent / LABELS_FILE)
    try:
        report = report_from_store(store, run_id)
        found = made.labels(run_id, metric)
        text = labels_csv(report, metric, found, human)
    finally:
        store.close()
        made.close()
    write_out(text, out)
    for pair in annotator_agreement(found):
        kappa = "n/a" if pair.kappa is None else f"{pair.kappa:.3f}"
        typer.echo(
            f"assay: annotators {pair.first} and {pair.second}: Cohen's kappa {kappa} "
            f"on {pair.n} shared rows",
            err=True,
        )
