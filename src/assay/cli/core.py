"""Core commands: ``assay validate`` and ``assay metrics`` (``assay run`` lives in run_cli)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from assay.cli.console import printable

if TYPE_CHECKING:
    from assay.data.dataset import Sample


def register(app: typer.Typer) -> None:
    app.command("validate")(validate)
    app.command("metrics")(metrics)


def validate(
    dataset: Annotated[Path, typer.Argument(help="Dataset file (.yml, .yaml, .json, .jsonl).")],
) -> None:
    """Check a dataset against the schema and report every problem (up to 20) precisely."""
    from assay.api import metric_plan
    from assay.compare.gate_rules import rules_from_mapping
    from assay.data.dataset_errors import declared_block, declared_metrics
    from assay.data.loading import load_dataset
    from assay.errors import InputError
    from assay.providers.settings import ProviderSettings, build

    try:
        loaded = load_dataset(dataset)
    except InputError as exc:
        if not exc.more:
            raise
        for line in (str(exc), *exc.more):  # every problem at once, not one per try
            typer.echo(f"assay: error: {line}", err=True)
        raise typer.Exit(2) from None
    if loaded.metrics:  # checked as `assay run` checks them: options, thresholds, tag scopes
        with declared_metrics(dataset):
            metric_plan(loaded, None, ProviderSettings())  # built, never called: no settings read
    with declared_block(dataset, "gate"):
        rules_from_mapping(loaded.gate, "gate")
    with declared_block(dataset, "providers"):
        build(dataset=_without_key_variable(loaded.providers), env={})
    tags = sorted({tag for sample in loaded.samples for tag in sample.tags})
    counts = f"{len(loaded.samples)} samples, {len(loaded.metrics)} default metrics"
    _note_unfilled(loaded.samples)
    typer.echo(
        f"{printable(str(dataset))}: ok ({counts}, {len(tags)} tags, "
        f"schema {loaded.schema_version})"
    )


def _without_key_variable(block: dict[str, Any] | None) -> dict[str, Any] | None:
    """The ``providers:`` block with its ``api_key_env`` name checked and left out: whether the
    variable is set is the run's business, not the file's."""
    if isinstance(block, dict) and "api_key_env" in block:
        from assay.providers.key_scope import key_variable

        key_variable(block["api_key_env"])
        return {key: value for key, value in block.items() if key != "api_key_env"}
    return block


def _note_unfilled(samples: list[Sample]) -> None:
    """Rows promoted from production still waiting for a person's expected output (stderr)."""
    waiting = [
        s.id
        for s in samples
        if s.expected_output is None
        and isinstance(s.metadata.get("assay"), dict)
        and "production" in s.metadata["assay"]
    ]
    if waiting:
        shown = ", ".join(printable(i) for i in waiting[:20])
        more = f" and {len(waiting) - 20} more" if len(waiting) > 20 else ""
        typer.echo(
            f"note: {len(waiting)} promoted row(s) still need an expected_output: {shown}{more}",
            err=True,
        )


def metrics() -> None:
    """List every metric assay can resolve, one line each."""
    from assay.metrics.registry import catalogue

    rows = catalogue()
    width = max(len(name) for name, _ in rows)
    for name, description in rows:
        typer.echo(f"{name.ljust(width)}  {description}")
