"""`assay run` with several systems: parse ``NAME=VALUE`` flags, run each, report side by side."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import typer

from assay.cli.console import fail, printable
from assay.data.dataset import Dataset
from assay.data.fileio import exists
from assay.data.loading import load_outputs
from assay.data.outputs import check_outputs_cover
from assay.engine.evaluation import RunOptions, RunState, run_samples
from assay.engine.progress import Progress, progress_mode
from assay.engine.sut import PythonTarget, SavedOutputs, SystemUnderTest
from assay.metrics.base import Metric
from assay.providers.limiter import Limiter
from assay.store.runs import RunStore

if TYPE_CHECKING:  # systems.model and the gate load numpy: imported where a run needs them
    from assay.compare.gate import GateResult
    from assay.report.comparison_model import Comparison
    from assay.report.model import Report
    from assay.systems.model import SystemsReport

Kind = Literal["outputs", "sut"]


@dataclass(frozen=True)
class SystemSpec:
    """One ``--sut``/``--outputs`` value: an optional name and a target."""

    name: str | None
    kind: Kind
    value: str


def _split(value: str, kind: Kind) -> SystemSpec:
    flag = f"--{kind}"
    name, sep, rest = value.partition("=")
    # '--outputs a=x.json' names a system; an existing file whose name holds '=' does not
    if not sep or (kind == "outputs" and exists(Path(value))):
        return SystemSpec(None, kind, value)
    if not rest:
        fail(f"{flag} {value!r}: nothing after '='; write {flag} NAME=VALUE")
    # only a named system needs the check (systems.model loads the comparison, with numpy)
    from assay.systems.model import check_name

    return SystemSpec(check_name(name, flag), kind, rest)


def parse_systems(outputs: Sequence[str], suts: Sequence[str]) -> list[SystemSpec]:
    """Every system given; several must all be named, and names must differ."""
    specs = [_split(v, "outputs") for v in outputs] + [_split(v, "sut") for v in suts]
    if len(specs) > 1:
        unnamed = [s.value for s in specs if s.name is None]
        if unnamed:
            fail(
                "give exactly one of --outputs FILE, --sut module:function or --sut-url URL; "
                f"several systems need names: --{specs[0].kind} NAME={unnamed[0]}"
            )
        names = [s.name for s in specs]
        if len(set(names)) != len(names):
            fail(f"system names must be unique; got {', '.join(str(n) for n in names)}")
    return specs


def check_combination(flags: dict[str, object], fmt: str, extra_formats: Sequence[str]) -> None:
    """Options that mean one run (resume, baseline, budget, JUnit) cannot take several systems."""
    for flag, value in flags.items():
        if value:
            fail(f"{flag} works with one system; it cannot be combined with several systems")
    for single, label in (("junit", "JUnit"), ("padosoft-json", "padosoft-json")):
        if single in (fmt, *extra_formats):
            fail(f"{label} output needs one system; use json, md or html with several systems")


def make_system(spec: SystemSpec, sample_ids: list[str], limiter: Limiter) -> SystemUnderTest:
    """The system of one ``--outputs``/``--sut`` value, its outputs checked against the ids."""
    if spec.kind == "outputs":
        saved = load_outputs(spec.value)
        check_outputs_cover(saved, sample_ids, path=spec.value)
        return SavedOutputs(saved, spec.value)
    system = PythonTarget(spec.value)
    system.limiter = limiter
    return system


@dataclass
class SystemsRun:
    """What each system's run shares: the dataset, metrics, store, options and the gate."""

    dataset: Dataset
    metrics: list[Metric]
    scopes: dict[str, frozenset[str]]
    store: RunStore | None
    options: Callable[[str], RunOptions]
    limiter: Callable[[], Limiter]
    gate: Callable[[Report, Comparison | None], GateResult]  # (report, vs the reference)
    reference: str | None = None


def _run_one(run: SystemsRun, spec: SystemSpec, quiet: bool) -> Report:
    assert spec.name is not None
    if not quiet:
        typer.echo(f"assay: running system '{spec.name}' ({spec.kind} {spec.value})", err=True)
    system = make_system(spec, [s.id for s in run.dataset.samples], run.limiter())
    options = run.options(spec.name)
    state = RunState()
    progress = Progress(progress_mode(quiet=quiet), thresholds=options.thresholds)
    state.on_results = progress.advance
    with progress.session(lambda: state.total):
        report = run_samples(
            run.dataset,
            sut=system,
            metrics=run.metrics,
            options=options,
            store=run.store,
            scopes=run.scopes,
            state=state,
        )
    return report


def _gated(run: SystemsRun, report: Report, reference: Report | None) -> Report:
    """The report with its gate's verdict, judged against the reference system when there is one
    (flips, drops and regressions then apply), recorded in the store."""
    from assay.compare.comparison import compare_reports

    comparison = None if reference is None else compare_reports(report, reference)
    verdict = run.gate(report, comparison).model_dump(mode="json")
    if run.store is not None:
        run.store.record_gate(report.run.run_id, verdict)
    return report.model_copy(update={"gate": verdict})


def _passed(report: Report) -> bool:
    """Whether the gate passed the report (``_run_one`` puts its verdict in every report)."""
    return bool(report.gate is not None and report.gate["passed"])


def render(systems: SystemsReport, fmt: str) -> str:
    """The side-by-side report in ``fmt`` (json, md or html)."""
    from assay.systems import render as renderers  # its model loads numpy: after the runs

    if fmt == "json":
        return str(systems.model_dump_json(indent=2)) + "\n"
    if fmt == "md":
        return renderers.render_markdown(systems)
    return renderers.render_html(systems)


def run_systems(
    run: SystemsRun,
    specs: Sequence[SystemSpec],
    *,
    outputs: Sequence[tuple[str, Path | None]],
    write: Callable[[str, Path | None], None],
    quiet: bool,
) -> None:
    """Run every system, write the side-by-side report(s), exit 1 when any gate failed."""
    from assay.systems.model import build  # numpy (the comparison): after the runs

    ran = [(str(spec.name), _run_one(run, spec, quiet)) for spec in specs]
    reference = next((report for name, report in ran if name == run.reference), None)
    named = [
        (name, _gated(run, report, None if name == run.reference else reference))
        for name, report in ran
    ]
    systems = build(named)
    for fmt, path in outputs:
        write(render(systems, fmt), path)
    failed = [name for name, report in named if not _passed(report) or report.run.halted]
    if not quiet:
        from assay.report.numbers import fmt as number  # preloaded while the runs go

        for name, report in named:
            s = report.summary
            for failure in (report.gate or {}).get("failures", []):
                typer.echo(printable(f"assay: {name}: gate: {failure['message']}"), err=True)
            typer.echo(
                f"assay: {name}: pass rate {number(s.pass_rate)}, macro-F1 {number(s.macro_f1)}, "
                f"{s.failed_rows} failed, {s.errored_rows} errored, "
                f"gate {'passed' if _passed(report) else 'FAILED'}, run {report.run.run_id}",
                err=True,
            )
    sys.stdout.flush()
    raise typer.Exit(1 if failed else 0)
