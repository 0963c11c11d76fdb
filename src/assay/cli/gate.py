"""Commands ``assay baseline set|show`` and ``assay compare A B``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from assay.cli.console import printable, warn
from assay.data.fileio import is_file
from assay.report.comparison_model import no_regression_line

if TYPE_CHECKING:
    from assay.compare.streamed_report import StreamedReport
    from assay.report.comparison_model import Comparison, MetricComparison
    from assay.report.model import Report

baseline_app = typer.Typer(
    help="Pin and inspect the baseline report a run is compared against.", no_args_is_help=True
)


def register(app: typer.Typer) -> None:
    app.add_typer(baseline_app, name="baseline")
    app.command("compare")(compare)


@baseline_app.command("set")
def baseline_set(
    report: Annotated[
        str, typer.Argument(help="A report JSON file, or a run id from the run store.")
    ],
    store: Annotated[
        Path | None,
        typer.Option("--store", envvar="ASSAY_STORE", help="Run store file (for a run id)."),
    ] = None,
) -> None:
    """Pin REPORT as the baseline of its dataset (copied under .assay/baselines/)."""
    from assay.compare.baseline import report_from_argument, set_baseline

    loaded, source = report_from_argument(report, store_path=store)
    path, pointer = set_baseline(loaded, source=source)
    if loaded.summary.errored_rows:
        typer.echo(
            f"assay: warning: the baseline has {loaded.summary.errored_rows} errored rows "
            "(not scored)",
            err=True,
        )
    line = (
        f"baseline for '{pointer.dataset}' set to run {pointer.summary.run_id} "
        f"(macro-F1 {_fmt(pointer.summary.macro_f1)}): {path}"
    )
    typer.echo(printable(line))


@baseline_app.command("show")
def baseline_show(
    dataset: Annotated[
        str | None, typer.Option("--dataset", "-d", help="Only this dataset.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the pointer JSON.")] = False,
) -> None:
    """Show the pinned baselines (all datasets, or one)."""
    import json

    from assay.compare.baseline import list_pointers, read_pointer
    from assay.errors import UsageError

    if dataset is not None:
        found = read_pointer(dataset)
        if found is None:
            raise UsageError(
                f"no baseline is set for dataset '{dataset}' (use 'assay baseline set REPORT')"
            )
        pointers = [found]
    else:
        pointers = list_pointers()
        if not pointers:
            typer.echo("no baseline is set (use 'assay baseline set REPORT')")
            return
    if as_json:
        payload = [pointer.model_dump(mode="json") for _, pointer in pointers]
        typer.echo(json.dumps(payload[0] if dataset is not None else payload, indent=2))
        return
    for path, pointer in pointers:
        typer.echo(printable(pointer.describe(path)))  # no raw NUL or ESC from a report


CurrentArg = Annotated[str, typer.Argument(help="The new report (JSON file or run id).")]
ReferenceArg = Annotated[
    str, typer.Argument(help="The reference: a JSON file, a run id, 'baseline' or 'latest'.")
]
CompareFormatOpt = Annotated[
    str, typer.Option("--format", "-f", envvar="ASSAY_COMPARE_FORMAT", help="text | json")
]
CompareOutOpt = Annotated[
    Path | None, typer.Option("--out", "-o", help="Write here instead of stdout.")
]
AlphaOpt = Annotated[
    float,
    typer.Option("--alpha", envvar="ASSAY_ALPHA", help="Significance level of the paired tests."),
]
BootstrapSeedOpt = Annotated[int, typer.Option("--seed", help="Seed of the bootstrap.")]
MaxRegressionsOpt = Annotated[
    int | None,
    typer.Option(
        "--max-regressions",
        envvar="ASSAY_MAX_REGRESSIONS",
        help="Exit 1 when more regressions than this.",
    ),
]
MaxFlipsOpt = Annotated[
    int | None,
    typer.Option(
        "--max-flips",
        envvar="ASSAY_MAX_FLIPS",
        help="Exit 1 when more rows than this went from pass to fail.",
    ),
]
CompareStoreOpt = Annotated[
    Path | None,
    typer.Option("--store", envvar="ASSAY_STORE", help="Run store file (for run ids)."),
]
AllowJudgeChangeOpt = Annotated[
    bool,
    typer.Option(
        "--allow-judge-change",
        envvar="ASSAY_ALLOW_JUDGE_CHANGE",
        help="Count the flips and regressions of a metric whose judge differs between the two "
        "reports against the system.",
    ),
]
ShowAllOpt = Annotated[
    bool,
    typer.Option(
        "--all",
        envvar="ASSAY_COMPARE_ALL",
        help="Also list rows that do not apply (no sample of the cohort has the metric).",
    ),
]


def compare(
    current: CurrentArg,
    reference: ReferenceArg,
    fmt: CompareFormatOpt = "text",
    out: CompareOutOpt = None,
    alpha: AlphaOpt = 0.05,
    seed: BootstrapSeedOpt = 0,
    max_regressions: MaxRegressionsOpt = None,
    max_flips: MaxFlipsOpt = None,
    store: CompareStoreOpt = None,
    show_all: ShowAllOpt = False,
    allow_judge_change: AllowJudgeChangeOpt = False,
) -> None:
    """Compare two reports sample by sample: regressions and flips first, then the deltas.

    CURRENT may also be a saved-outputs file: it is scored with the reference report's dataset
    and metrics first (``assay compare new.json report.json``).
    """
    from assay.compare.comparison import compare_reports, dataset_warnings
    from assay.compare.judge_change import judge_change_warnings

    def judge_warnings(found: Comparison) -> list[str]:
        return judge_change_warnings(found.judge_changes, found.judge_change_allowed)

    _check_compare_flags(fmt, max_regressions, max_flips)
    current_side, reference_side = _both_reports(current, reference, store)
    result = compare_reports(
        current_side.report,
        reference_side.report,
        alpha=alpha,
        seed=seed,
        current_rows=current_side.rows(),
        reference_rows=reference_side.rows(),
        allow_judge_change=allow_judge_change,
    )
    for message in dataset_warnings(result) + judge_warnings(
        result
    ):  # on stderr, whatever the format
        warn(f"compare: {message}")
    _write_comparison(result, fmt, out, show_all)
    _exit_on_limits(result, max_regressions, max_flips)


def _write_comparison(result: Comparison, fmt: str, out: Path | None, show_all: bool) -> None:
    """The comparison as JSON or text, to ``out`` or stdout."""
    if fmt == "json":
        text = result.model_dump_json(indent=2) + "\n"
    else:  # ids, tags and names are the reports' text: escaped, so none rewrites the terminal
        rendered = render_comparison_text(result, show_all=show_all)
        text = "\n".join(map(printable, rendered.split("\n")))
    if out is None:
        typer.echo(text, nl=False)
    else:
        from assay.data.fileio import write_atomic

        write_atomic(out, text)


def _check_compare_flags(fmt: str, max_regressions: int | None, max_flips: int | None) -> None:
    """``--format`` and the limits, checked before any report is read."""
    from assay.errors import UsageError

    if fmt not in ("text", "json"):
        raise UsageError(f"--format must be text or json; got {fmt!r}")
    for flag, limit in (("--max-regressions", max_regressions), ("--max-flips", max_flips)):
        if limit is not None and limit < 0:
            raise UsageError(f"{flag} must be >= 0; got {limit}")


def _exit_on_limits(result: Comparison, max_regressions: int | None, max_flips: int | None) -> None:
    """Exit 1 (one line on stderr each) past --max-regressions or --max-flips."""
    failed = False
    if max_regressions is not None and result.regression_count > max_regressions:
        typer.echo(
            f"assay: {result.regression_count} regressions beyond noise "
            f"(allowed: {max_regressions})",
            err=True,
        )
        failed = True
    skip = result.unattributed()  # a judge's change is not the system's flip
    flipped = sum(1 for f in result.flips if f.direction == "pass-to-fail" and f.metric not in skip)
    if max_flips is not None and flipped > max_flips:
        typer.echo(
            f"assay: {flipped} row(s) went from pass to fail (allowed: {max_flips})", err=True
        )
        failed = True
    if failed:
        raise typer.Exit(1)


def _both_reports(
    current: str, reference: str, store: Path | None
) -> tuple[StreamedReport, StreamedReport]:
    """The two reports of ``assay compare``, rows streamed; CURRENT may be a saved-outputs file
    to score."""
    from assay.compare.baseline import streamed_from_argument
    from assay.compare.streamed_report import StreamedReport

    if _is_outputs_file(current):
        if reference in ("baseline", "latest"):
            from assay.errors import UsageError

            raise UsageError(
                "compare: scoring a saved-outputs file needs a reference report file or run "
                f"id, not '{reference}'"
            )
        reference_side, _ = streamed_from_argument(reference, store_path=store)
        base = Path(reference).parent if is_file(Path(reference)) else Path.cwd()
        scored = _score_outputs(Path(current), reference_side.report, base)
        return StreamedReport.whole(scored), reference_side
    current_side, _ = streamed_from_argument(current, store_path=store)
    if reference in ("baseline", "latest"):
        return current_side, _named_reference(reference, current_side.report, store)
    return current_side, streamed_from_argument(reference, store_path=store)[0]


def _named_reference(name: str, current: Report, store: Path | None) -> StreamedReport:
    """'baseline' or 'latest' for the current report's dataset."""
    from assay.compare.baseline import resolve_reference
    from assay.errors import UsageError

    found = resolve_reference(name, current, store_path=store)
    if found is not None:
        return found
    dataset = current.dataset.name
    if name == "baseline":
        raise UsageError(f"no baseline is set for dataset '{dataset}'")
    raise UsageError(f"no other finished run of dataset '{dataset}' in the run store")


def _is_outputs_file(target: str) -> bool:
    """A saved-outputs file (JSONL, or a JSON/YAML document that is not an assay report)."""
    from assay.data.bounded import loads_json

    path = Path(target)
    if not is_file(path):
        return False
    if path.suffix.lower() in (".jsonl", ".yml", ".yaml"):
        return True
    try:
        document = loads_json(path.read_bytes(), ValueError)
    except (ValueError, OSError):  # not read here: the report reader says why
        return False
    if isinstance(document, list):
        return True
    return (
        isinstance(document, dict)
        and "outputs" in document
        and document.get("schema_version") not in ("assay.report.v1", "assay.report.v2")
    )


def _score_outputs(path: Path, reference: Report, base: Path) -> Report:
    """Score saved outputs with the reference report's dataset and metrics (no store)."""
    from assay.api import evaluate
    from assay.errors import UsageError

    if not reference.dataset.path:
        raise UsageError(
            f"compare: {path} is a saved-outputs file, but the reference report names no "
            "dataset path to score it with; run `assay run DATASET --outputs FILE -f json` first"
        )
    dataset = Path(reference.dataset.path)
    if not is_file(dataset) and not dataset.is_absolute() and is_file(base / dataset):
        dataset = base / dataset
    if not is_file(dataset):
        raise UsageError(f"compare: the reference's dataset {dataset} is not a file here")
    names = [aggregate.name for aggregate in reference.metrics]
    return evaluate(dataset, outputs=path, metrics=names or None)


def _fmt(value: float | None, digits: int = 4) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _signed(value: float | None) -> str:
    return "n/a" if value is None else f"{value:+.4f}"


def _p(value: float | None) -> str:
    return "n/a" if value is None else ("<0.001" if value < 0.001 else f"{value:.3f}")


def _line(item: MetricComparison) -> list[str]:
    def interval(stat: object) -> str:
        found = getattr(stat, "interval", None)
        return "n/a" if found is None else f"[{found.low:+.4f}, {found.high:+.4f}]"

    return [
        item.cohort_label or "overall",
        item.metric,
        str(item.paired),
        f"{_fmt(item.mean.reference)}->{_fmt(item.mean.current)}",
        _signed(item.mean.delta),
        interval(item.mean),
        _p(item.mean.p_adjusted),
        _fmt(item.mean.mdd),
        f"{_fmt(item.pass_rate.reference)}->{_fmt(item.pass_rate.current)}",
        _signed(item.pass_rate.delta),
        interval(item.pass_rate),
        _p(item.pass_rate.p_adjusted),
        _fmt(item.pass_rate.mdd),
        item.label(),
    ]


def _columns(rows: list[list[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in rows]


def render_comparison_text(c: Comparison, *, show_all: bool = False) -> str:
    """A terminal summary: header, then regressions and pass->fail flips, then the deltas.

    Delta rows with no paired sample (a tag-scoped metric in a cohort it does not apply to) are
    hidden unless ``show_all``.
    """
    lines = [
        f"compare {c.dataset}: run {c.current.run_id} vs reference {c.reference.run_id}",
        f"joined on {c.join_key}: {c.counts.compared} compared, {c.counts.added} added, "
        f"{c.counts.removed} removed; alpha {c.alpha:g} (Holm-adjusted), "
        f"{c.resamples} bootstrap resamples, seed {c.seed}",
        f"macro-F1 {_fmt(c.reference.macro_f1)} -> {_fmt(c.current.macro_f1)} "
        f"({_signed(c.macro_f1_delta)})",
        "",
        *_verdict_lines(c),
        "",
        *_table_lines(c, show_all),
    ]
    for label, refs in (("added", c.added), ("removed", c.removed)):
        if refs:
            shown = ", ".join(ref.sample_id for ref in refs[:20])
            lines.append(f"{label} ({len(refs)}): {shown}{' ...' if len(refs) > 20 else ''}")
    lines += [f"warning: {w}" for w in c.warnings]
    return "\n".join(lines) + "\n"


def _verdict_lines(c: Comparison) -> list[str]:
    """Regressions beyond noise, pass->fail flips (fail->pass after), new failures."""
    lines: list[str] = []
    if c.regressions:
        lines.append(f"REGRESSIONS beyond noise ({c.regression_count}):")
        lines += [f"  - {item.message}" for item in c.regressions]
    elif c.comparable:
        lines.append(no_regression_line(c.metrics, c.counts.pass_to_fail))
    lines.append(
        f"FLIPPED pass->fail: {c.counts.pass_to_fail}; fail->pass: {c.counts.fail_to_pass}"
    )
    flips = sorted(c.flips, key=lambda flip: flip.direction != "pass-to-fail")
    for flip in flips[:50]:
        lines.append(
            f"  {flip.direction:<12} {flip.sample_id} {flip.metric}: "
            f"{flip.before:.4f} -> {flip.after:.4f}"
        )
    if len(flips) > 50:
        lines.append(f"  ... and {len(flips) - 50} more (use --format json)")
    if c.new_failures:
        lines.append(f"new failures ({len(c.new_failures)}):")
        for item in c.new_failures[:50]:
            what = ", ".join(item.failed_metrics + [f"{name} (errored)" for name in item.errored])
            lines.append(f"  {item.sample_id}: {what}")
    return lines


def _table_lines(c: Comparison, show_all: bool) -> list[str]:
    """The per-metric and per-cohort delta table; rows that do not apply hidden by default."""
    head = ["scope", "metric", "n", "mean", "d-mean", "interval", "p-adj", "MDD"]
    head += ["pass-rate", "d-pass", "interval", "p-adj", "MDD", "verdict"]
    items = [*c.metrics, *c.cohorts]
    shown = [item for item in items if show_all or item.paired > 0]
    lines = _columns([head, *[_line(item) for item in shown]]) if shown else []
    hidden = len(items) - len(shown)
    if hidden:
        lines.append(f"({hidden} rows with no paired sample not shown; --all shows them)")
    return lines
