"""``assay adversarial`` (the red-team lane) and ``assay brief`` (a failure brief).

``assay adversarial`` takes every option of ``assay run`` (system under test, concurrency,
cache, store, resume, reports, gates) by sharing its signature, minus the dataset argument, plus
the lane's own options; it then runs through ``assay run``'s code path with
:class:`~assay.adversarial.lane.LaneHooks` in the click context.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Annotated, Any

import typer

from assay.cli import run as run_cli
from assay.cli.console import fail


def register(app: typer.Typer) -> None:
    app.command("adversarial")(_adversarial_command())
    app.command("brief")(brief)


CategoryOpt = Annotated[
    list[str] | None,
    typer.Option("--category", "-c", help="Only this category (repeatable; default all ten)."),
]
LaneDatasetOpt = Annotated[
    Path | None,
    typer.Option(
        "--dataset",
        envvar="ASSAY_ADVERSARIAL_DATASET",
        help="Your own red-team dataset (samples with metadata.adversarial); default: seeds.",
    ),
]
LaneMetricOpt = Annotated[
    list[str] | None,
    typer.Option("--metric", "-m", help="Add a metric to the lane's defaults (repeatable)."),
]
SkipMetricOpt = Annotated[
    list[str] | None,
    typer.Option("--skip-metric", help="Drop one of the lane's default metrics (repeatable)."),
]
HistoryOpt = Annotated[
    Path | None,
    typer.Option(
        "--history",
        envvar="ASSAY_ADVERSARIAL_HISTORY",
        help="Manifest of lane runs (default: adversarial-runs.json in the project's .assay/).",
    ),
]
HistoryRetainOpt = Annotated[
    int, typer.Option("--history-retain", help="Lane runs kept in the manifest (newest first).")
]
NoHistoryOpt = Annotated[
    bool, typer.Option("--no-history", help="Neither read nor write the lane history.")
]
FailOnOpt = Annotated[
    str,
    typer.Option(
        "--fail-on",
        envvar="ASSAY_ADVERSARIAL_FAIL_ON",
        help="Exit 1 when an attack of this severity or worse succeeded: "
        "low | medium | high | critical | none.",
    ),
]
LaneMaxDropOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--max-drop",
        help="Drift gate against the lane's baseline run: TARGET=DROP with TARGET macro_f1 "
        "or METRIC[:mean|p50|p95|pass_rate] and DROP a fraction in [0, 1] (repeatable; "
        "macro_f1=0.05 by default).",
    ),
]


def lane_options(
    category: CategoryOpt = None,
    dataset: LaneDatasetOpt = None,
    metric: LaneMetricOpt = None,
    skip_metric: SkipMetricOpt = None,
    history: HistoryOpt = None,
    history_retain: HistoryRetainOpt = 10,
    no_history: NoHistoryOpt = False,
    fail_on: FailOnOpt = "critical",
    max_drop: LaneMaxDropOpt = None,
) -> None:
    """Only a carrier of the lane's option declarations (see _adversarial_command)."""


_LANE = inspect.signature(lane_options, eval_str=True).parameters
_RUN = inspect.signature(run_cli.run, eval_str=True).parameters


def _adversarial_command() -> Any:
    """A command with ``assay run``'s options (minus DATASET and --metric) plus the lane's."""
    own = ("ctx", "dataset", "metric", *_LANE)  # a lane option shadows a run option's name
    shared = [p for name, p in _RUN.items() if name not in own]
    params = [_RUN["ctx"], *_LANE.values(), *shared]

    def adversarial(**flags: object) -> None:
        _run_lane(flags)

    # typeshed's function type has no __signature__, though inspect and typer read it
    adversarial.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    adversarial.__doc__ = (
        "Run the red-team lane (ten categories of seed attacks, or your own) against a system "
        "under test or saved outputs; compliance summary, drift gate, promoted failures."
    )
    return adversarial


def _run_lane(flags: dict[str, Any]) -> None:
    from assay.adversarial.categories import SEVERITIES, select
    from assay.adversarial.history import history_for
    from assay.adversarial.lane import LaneHooks, lane_metrics
    from assay.adversarial.seeds import SEEDS_SOURCE, lane_dataset

    ctx: typer.Context = flags.pop("ctx")
    lane = {name: flags.pop(name) for name in _LANE}
    categories = select(lane["category"] or [])
    dataset = lane_dataset(lane["dataset"], categories)
    specs = lane_metrics(
        dataset,
        add=lane["metric"] or [],
        skip=lane["skip_metric"] or [],
        judge=bool(flags.get("judge_model")),
    )
    if not specs:
        fail("the lane has no metric left (check --skip-metric)")
    history = None
    if not lane["no_history"]:
        history = history_for(
            lane["history"], retain=lane["history_retain"], max_drop=lane["max_drop"] or []
        )
    if lane["fail_on"] not in (*SEVERITIES, "none"):
        fail(f"--fail-on must be one of {', '.join(SEVERITIES)}, none; got {lane['fail_on']!r}")
    ctx.meta[run_cli.LANE_KEY] = LaneHooks(
        dataset=dataset,
        metric_specs=specs,
        history=history,
        fail_on=None if lane["fail_on"] == "none" else lane["fail_on"],
    )
    source = Path(lane["dataset"]) if lane["dataset"] is not None else Path(SEEDS_SOURCE)
    run_cli.run(ctx, dataset=source, metric=None, **flags)


def brief(
    report: Annotated[Path, typer.Argument(help="A JSON report (assay run --format json).")],
    fmt: Annotated[str, typer.Option("--format", "-f", help="md | json")] = "md",
    budget: Annotated[
        int, typer.Option("--budget", help="At most this many characters of brief.")
    ] = 24000,
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Write here instead of stdout.")
    ] = None,
) -> None:
    """A compact failure brief of a report, for a person or an agent fixing the regression."""
    from assay.adversarial.brief import MIN_BUDGET, build_brief, load_report, render_brief

    if fmt not in ("md", "json"):
        fail(f"--format must be md or json; got {fmt!r}")
    if budget < MIN_BUDGET:
        fail(f"--budget must be at least {MIN_BUDGET} characters; got {budget}")
    text = render_brief(build_brief(load_report(report), budget=budget), fmt, budget=budget)
    if out is None:
        typer.echo(text, nl=False)
    else:
        from assay.data.fileio import write_atomic

        write_atomic(out, text)
