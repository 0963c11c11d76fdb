"""Executing one ``assay run``: the plan, the run store, evaluation and its interruption.

:func:`execute` takes a checked :class:`~assay.engine.config.RunConfig` to the exit code: one system
is evaluated here and finished by :func:`assay.cli.run_report.finish_run`; several systems go to
:func:`assay.cli.systems.run_systems`.
"""

from __future__ import annotations

import contextlib
import gc
import shlex
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import typer

from assay.adversarial.lane import LaneHooks, with_compliance
from assay.api import preflight
from assay.cli.console import fail, printable, warn
from assay.cli.run_dry import dry_run
from assay.cli.run_plan import Plan, build_plan, system_limiter
from assay.cli.run_report import finish_run, gate_rules, gate_verdict, preload, write_out
from assay.cli.systems import SystemSpec, SystemsRun, check_combination, run_systems
from assay.data.dataset import Dataset
from assay.data.results import ExecutionResult, Thresholds
from assay.engine.budget import BudgetGuard
from assay.engine.config import RunConfig
from assay.engine.evaluation import RunOptions, RunState, run_samples
from assay.engine.progress import Progress, progress_mode
from assay.metrics.base import Metric
from assay.providers.urls import public_url
from assay.store.project import find_config, read_toml
from assay.store.runs import RunStore

if TYPE_CHECKING:
    from assay.compare.gate import GateResult
    from assay.compare.gate_rules import GateRules
    from assay.engine.ray_executor import RayOptions
    from assay.providers.limiter import Limiter
    from assay.report.comparison_model import Comparison
    from assay.report.model import Report, Row


def execute(config: RunConfig, *, lane: LaneHooks | None = None) -> None:
    """One ``assay run`` from its configuration: plan, run_samples, report, gate (never returns)."""
    plan = build_plan(config, lane)
    rules = _preflight(plan)
    if config.dry_run:
        dry_run(plan, _evaluate_without_store)  # exits 0
    store = None if config.no_store else RunStore(config.store_path)
    if len(plan.systems) > 1:
        _run_systems(plan, rules, store)  # exits with the gate's code
        return
    _run_one(plan, rules, store)


def _evaluate_without_store(plan: Plan) -> Report:
    """The run's report with nothing stored and no progress display (for ``--dry-run``)."""
    state = RunState()
    progress = Progress(progress_mode(quiet=True), thresholds=plan.thresholds)
    return _evaluate(plan, None, state, progress, _options(plan), keep_rows=False)


def _preflight(plan: Plan) -> GateRules:
    """Configuration errors before any work (exit 2); scope warnings on stderr; the gate's
    rules."""
    # The gate's rules (assay.toml [gate], the dataset's gate: block, flags), read before any
    # work so a bad one exits 2 at once; several systems leave the baseline's rules out.
    several = len(plan.systems) > 1
    flags = plan.config.gate_flags(with_baseline_rules=not several or _reference(plan) is not None)
    rules = gate_rules(plan.selected.gate, flags)
    for message in preflight(plan.chosen, plan.selected, plan.providers):
        warn(message)
    if plan.chosen.calibrations:  # a run with no calibrated judge loads none of this
        from assay.judges.in_run import calibration_paths

        plan.calibrations = calibration_paths(plan.chosen.calibrations, Path(plan.config.dataset))
    return rules


def _run_one(plan: Plan, rules: GateRules, store: RunStore | None) -> None:
    """One system: run_samples, then budget, comparison, gate, reports and the exit code."""
    config = plan.config
    resume_id = _resume_id(config, store, plan.selected.name)
    state, budget, progress = _watch(config, plan.thresholds, _preload_formats(plan))
    options = _options(
        plan,
        run_id=resume_id or config.run_id,
        resume=resume_id is not None,
        retry_errors=config.retry_errors,
        ray=_ray_options(config.executor, config.ray_address),
    )
    # Rows stay in the store (flat memory: every format and the comparison stream them).
    keep_rows = store is None
    report_obj = _evaluate(plan, store, state, progress, options, keep_rows)
    report_obj = _with_compliance(
        report_obj,
        plan.selected,
        store,
        keep_rows,
        plan.metrics,
        config.promote_failures,
        str(config.dataset),
    )
    if budget is not None:
        report_obj = report_obj.model_copy(update={"budget": budget.block(state.done)})
    report_obj = _with_judges(plan, report_obj, store)
    plan.let_go()  # what follows needs only the report: a large dataset and its outputs go first
    try:
        finish_run(
            report_obj,
            rules,
            config=config,
            store=store if not keep_rows else None,
            gate_store=store,
            metric_names=[m.name for m in plan.metrics],
            extra_reports=plan.extra_reports,
            lane=plan.lane,
        )
    finally:
        if store is not None:
            store.close()


def _with_judges(plan: Plan, report_obj: Report, store: RunStore | None) -> Report:
    """The judge blocks (calibration measured once per run), one stderr line per judge."""
    if not plan.info.get("judge_model"):  # no metric calls a judge: no judge block
        return report_obj
    from assay.judges.in_run import judge_lines, with_judges  # judge runs only

    report_obj = with_judges(
        report_obj,
        plan.metrics,
        plan.calibrations,
        plan.thresholds,
        plan.providers,
        store=store,
        concurrency=plan.config.concurrency,
    )
    if not plan.config.quiet:
        for line in judge_lines(report_obj.judges):
            typer.echo(printable(f"assay: {line}"), err=True)
    return report_obj


def _resume_id(config: RunConfig, store: RunStore | None, dataset_name: str) -> str | None:
    """The run to continue (``--resume RUN_ID`` or ``latest``), or None."""
    if config.resume is None:
        return None
    if store is None:
        fail("--resume needs the run store (do not combine it with --no-store)")
    resume_id: str = (
        store.latest_run_id(dataset_name) if config.resume == "latest" else config.resume
    )
    if not store.has_run(resume_id):
        typer.echo(f"assay: run '{resume_id}' had not started; starting it now", err=True)
    return resume_id


def _preload_formats(plan: Plan) -> list[str] | None:
    """The report formats whose modules load while the run is under way, or None.

    Only a run that waits on replies (a metric that calls a judge or an embedding provider, or
    a live system under test) has idle time to load them in; saved outputs scored locally
    keep the CPU busy, and would only hold those modules in memory for longer.
    """
    waits = bool(plan.info) or not getattr(plan.system, "outputs_on_disk", False)
    return [plan.config.fmt, *(f for f, _ in plan.extra_reports)] if waits else None


@contextlib.contextmanager
def _collecting() -> Iterator[None]:
    """The cycle collector on, which ``assay run``'s start-up ran without (cli.main).

    What start-up made is frozen first: enabled as it is, the first allocation would set off a
    collection walking all of it. The runner unfreezes it when the run ends (as it does what
    it froze itself); here it is unfrozen too, in case the run ended before it began.
    """
    gc.freeze()
    gc.enable()
    try:
        yield
    finally:
        gc.unfreeze()


def _watch(
    config: RunConfig, thresholds: Thresholds, formats: list[str] | None
) -> tuple[RunState, BudgetGuard | None, Progress]:
    """Run state with the budget guard and the progress display hooked to each result; the
    first result starts loading what the reports in ``formats`` need (run_report.preload)."""
    state = RunState()
    budget = None
    if config.budget_usd is not None:
        budget = BudgetGuard(config.budget_usd, state)
    progress = Progress(progress_mode(quiet=config.quiet), thresholds=thresholds)
    to_preload = [formats] if formats is not None else []

    def on_results(results: Sequence[ExecutionResult]) -> None:
        if to_preload:  # the first result: the run is under way, load what its end needs
            preload(to_preload.pop())
        if budget is not None:
            for result in results:
                budget.observe(result)
        progress.advance(results)

    state.on_results = on_results
    return state, budget, progress


def _with_compliance(
    report_obj: Report,
    dataset: Dataset,
    store: RunStore | None,
    keep_rows: bool,
    metrics: list[Metric],
    promote_to: Path | None,
    source: str,
) -> Report:
    """The adversarial compliance summary, and ``--promote-failures``, from the run's rows."""
    # Preloaded while the run goes (run_report.preload), not before its first request.
    from assay.engine.rebuild import rows_from_store

    names = [m.name for m in metrics]
    run_id = report_obj.run.run_id

    def rows() -> Iterable[Row]:
        if keep_rows or store is None:
            return report_obj.rows
        return rows_from_store(store, run_id, names)

    report_obj = with_compliance(report_obj, dataset, rows, promote_to=promote_to, source=source)
    if store is not None and report_obj.adversarial is not None:  # for `assay report RUN`
        store.record_compliance(run_id, report_obj.adversarial.model_dump(mode="json"))
    return report_obj


def _options(
    plan: Plan,
    *,
    run_id: str | None = None,
    resume: bool = False,
    retry_errors: bool = False,
    ray: RayOptions | None = None,
    extra_info: dict[str, str | None] | None = None,
) -> RunOptions:
    """The evaluation options of this run (the keywords: per-system or resume fields)."""
    config = plan.config
    return RunOptions(
        repetitions=config.repetitions,
        sut_concurrency=config.concurrency,
        run_id=run_id,
        resume=resume,
        resume_changed=config.resume_changed,
        retry_errors=retry_errors,
        dataset_path=str(config.dataset),
        extra_info=dict(plan.info) if extra_info is None else extra_info,
        ray=ray,
        thresholds=plan.thresholds,
        text_limit=config.text_limit,
        redact=config.redact,
    )


def _ray_options(executor: str | None, address: str | None) -> RayOptions | None:
    """Ray options when the run goes to Ray (flag, ``ASSAY_EXECUTOR`` or ``assay.toml``); a
    bad value names where it came from: the flag, or the file and its key."""
    config = find_config()
    table = read_toml(config) if config is not None else {}
    chosen = executor or table.get("executor") or "local"
    if chosen == "local":
        return None
    if chosen != "ray":
        where = "--executor" if executor else f"{config}: executor"
        fail(f"{where} must be local or ray; got {chosen!r}")
    from assay.engine.ray_executor import RayOptions  # a Ray run only: the others skip it

    ray_table = table.get("ray")
    # TOML values, each checked where it is used
    configured: dict[str, Any] = ray_table if isinstance(ray_table, dict) else {}
    return RayOptions(
        address=address or configured.get("address"),
        batch_size=_ray_count(configured, "batch_size", 256, f"{config} [ray]", least=1),
        max_retries=_ray_count(configured, "max_retries", 3, f"{config} [ray]", least=0),
    )


def _ray_count(table: dict[str, object], key: str, default: int, where: str, *, least: int) -> int:
    """An integer setting of ``assay.toml [ray]``, at least ``least``; one line naming the file
    and key otherwise (before: ``int("x")`` ended as an unexpected ValueError)."""
    value = table.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        fail(f"{where}.{key} must be an integer of at least {least}; got {value!r}")
    return value


def _evaluate(
    plan: Plan,
    store: RunStore | None,
    state: RunState,
    progress: Progress,
    options: RunOptions,
    keep_rows: bool,
) -> Report:
    """The one evaluate path; Ctrl-C keeps finished work and prints the resume command."""
    assert plan.system is not None, "the plan builds the one system of a single-system run"
    try:
        with _collecting(), progress.session(lambda: state.total):
            return run_samples(
                plan.selected,
                sut=plan.system,
                metrics=plan.metrics,
                options=options,
                store=store,
                state=state,
                scopes=plan.scopes,
                keep_rows=keep_rows,
            )
    except KeyboardInterrupt:
        if store is not None:
            store.close()
            command = _resume_command(state.run_id)
            typer.echo(
                f"assay: interrupted; finished work is kept. Resume with:\n  {command}", err=True
            )
        else:
            typer.echo("assay: interrupted (no run store, nothing kept)", err=True)
        raise typer.Exit(130) from None
    except BaseException:
        if store is not None:
            store.close()
        raise


_URL_FLAGS = ("--sut-url", "--base-url")


def _resume_command(run_id: str, argv: list[str] | None = None) -> str:
    """The command that resumes ``run_id``: this one without its run id, plus ``--resume``.

    URL flags lose their credentials and query string (never printed); a note says to give
    them again when any was left out.
    """
    cleaned: list[str] = []
    skip = False
    for arg in sys.argv[1:] if argv is None else argv:
        if skip:
            skip = False
            continue
        if arg in ("--resume", "--run-id"):
            skip = True
            continue
        if arg.startswith(("--resume=", "--run-id=")):
            continue
        cleaned.append(arg)
    shown, left_out = _public_urls(cleaned)
    command = "assay " + " ".join(shlex.quote(a) for a in shown)
    command += f" --resume {shlex.quote(run_id)}"
    if left_out:
        command += (
            f"\n  (credentials and query string of {', '.join(left_out)} are left out;"
            " add them again)"
        )
    return command


def _public_urls(args: list[str]) -> tuple[list[str], list[str]]:
    """``args`` with each URL flag's value shown without userinfo or query, and those flags."""
    shown: list[str] = []
    left_out: set[str] = set()
    flag = ""
    for arg in args:
        name, eq, value = arg.partition("=")
        if flag or (eq and name in _URL_FLAGS):
            public = _public_url(arg if flag else value)
            if public != (arg if flag else value):
                left_out.add(flag or name)
                arg = public if flag else f"{name}={public}"
        shown.append(arg)
        flag = arg if not flag and arg in _URL_FLAGS else ""
    return shown, sorted(left_out)


def _public_url(url: str) -> str:
    """``url`` as given when it holds no secret, else without userinfo, query and fragment."""
    try:
        parts = urlsplit(url)
        secret = parts.username is not None or parts.password is not None
        return public_url(url) if secret or parts.query or parts.fragment else url
    except ValueError:
        return "URL"


def _reference(plan: Plan, *, say: bool = False) -> str | None:
    """The system the others are gated against: --reference, or the first one given when a
    rule that needs one (--max-flips, --max-drop, --max-regressions) is set; else None."""
    config = plan.config
    given: str | None = config.reference
    if given is not None or not config.comparison_flags():
        return given
    first = str(plan.systems[0].name)
    if say and not config.quiet:
        warn(
            f"{', '.join(config.comparison_flags())}: the other systems are gated against "
            f"'{first}', the first given (--reference NAME picks another)"
        )
    return first


def _run_systems(plan: Plan, rules: GateRules, store: RunStore | None) -> None:
    """Several systems on the same samples (``--outputs``/``--sut`` NAME=...)."""
    config = plan.config
    _run_many(
        plan.systems,
        plan.selected,
        metrics=plan.metrics,
        scopes=plan.scopes,
        store=store,
        check={
            "--resume": config.resume,
            "--run-id": config.run_id,
            "--compare": config.compare,
            "--budget-usd": config.budget_usd,
            "assay adversarial": plan.lane is not None,
        },
        options=lambda name: _options(plan, extra_info={**plan.info, "system_name": name}),
        limiter=lambda: system_limiter(config.concurrency, config.rpm),
        gate=lambda report, comparison: gate_verdict(report, rules, comparison),
        reference=_reference(plan, say=True),
        formats=[(config.fmt, config.out), *plan.extra_reports],
        quiet=config.quiet,
    )


def _run_many(
    specs: list[SystemSpec],
    dataset: Dataset,
    *,
    check: dict[str, object],
    formats: list[tuple[str, Path | None]],
    quiet: bool,
    store: RunStore | None,
    metrics: list[Metric],
    scopes: dict[str, frozenset[str]],
    options: Callable[[str], RunOptions],
    limiter: Callable[[], Limiter],
    gate: Callable[[Report, Comparison | None], GateResult],
    reference: str | None = None,
) -> None:
    """Several systems on the same samples: one stored run each, one side-by-side report."""
    check_combination(check, formats[0][0], [f for f, _ in formats[1:]])
    shared = SystemsRun(dataset, metrics, scopes, store, options, limiter, gate, reference)
    try:
        with _collecting():
            run_systems(
                shared,
                specs,
                outputs=formats,
                write=write_out,
                quiet=quiet,
            )
    finally:
        if store is not None:
            store.close()
