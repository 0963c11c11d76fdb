"""``assay judge``: ``swap`` (two judges on one calibration set) and ``labels`` (the viewer's
label queue's labels, exported for ``assay agreement``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

judge_app = typer.Typer(
    help="Judges that prove themselves: two judges on one calibration set (swap), the label "
    "queue's labels for assay agreement (labels), few-shot alignment (align).",
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


@judge_app.command("swap")
def swap(
    calibration: Annotated[
        Path, typer.Option("--calibration", help="The labelled set both judges score.")
    ],
    before: Annotated[str, typer.Option("--from", help="The judge model in use.")],
    after: Annotated[str, typer.Option("--to", help="The judge model to change to.")],
    metric: Annotated[
        str, typer.Option("--metric", help="rubric | llm-as-judge (the set's labels).")
    ] = "rubric",
    fmt: Annotated[str, typer.Option("--format", "-f", help="text | json")] = "text",
    seed: Annotated[int, typer.Option("--seed", help="Seed of the bootstrap.")] = 0,
) -> None:
    """Score a calibration set with two judge models: each one's agreement with people and
    with each other, with intervals."""
    from assay.cli.calibration import _providers
    from assay.data.loading import load_dataset
    from assay.engine.calibration_run import calibrate
    from assay.errors import UsageError
    from assay.judges.swap import swap_lines

    if fmt not in ("text", "json"):
        raise UsageError(f"--format must be text or json; got {fmt!r}")
    if before == after:
        raise UsageError(f"--from and --to name the same judge ({before!r})")
    loaded = load_dataset(calibration)
    settings = _providers(loaded.providers, base_url=None, no_cache=False)
    result = calibrate(
        loaded,
        settings=settings,
        metric=metric,
        judge_models=[before, after],
        bootstrap=1000,
        seed=seed,
        source=str(calibration),
    )
    text = (
        result.to_json() + "\n"
        if fmt == "json"
        else "\n".join(swap_lines(result, before, after)) + "\n"
    )
    typer.echo(text, nl=False)


@judge_app.command("align")
def align(
    calibration: Annotated[
        Path, typer.Option("--calibration", help="Labelled set (human_score / human_pass).")
    ],
    model: Annotated[str, typer.Option("--model", help="The judge model to align.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Where the variant is written.")],
    examples: Annotated[int, typer.Option("--examples", help="Few-shot examples at most.")] = 4,
    held_out: Annotated[
        float, typer.Option("--held-out", help="Share of the labels kept for measuring.")
    ] = 0.5,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the split and the pick.")] = 0,
) -> None:
    """Propose few-shot examples from labelled disagreements as a versioned llm-as-judge
    prompt variant; agreement before and after on a held-out split."""
    import asyncio

    import yaml

    from assay.cli.calibration import _providers
    from assay.data.fileio import write_atomic
    from assay.data.loading import load_dataset
    from assay.judges.align import align as propose
    from assay.judges.align import alignment_lines
    from assay.providers import registry

    loaded = load_dataset(calibration)
    settings = _providers(loaded.providers, base_url=None, no_cache=False)

    async def run() -> Any:
        try:
            return await propose(
                loaded, model=model, n_examples=examples, held_out=held_out, seed=seed,
                source=str(calibration), settings=settings,
            )  # fmt: skip
        finally:
            await registry.aclose()

    found = asyncio.run(run())
    write_atomic(out, yaml.safe_dump(found.variant.model_dump(mode="json"), sort_keys=False))
    for line in alignment_lines(found, str(out)):
        typer.echo(line)
