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
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import typer

from assay.cli.console import fail, printable, warn
from assay.cli.run_dry import dry_run
from assay.cli.run_plan import Plan, build_plan, system_limiter
from assay.cli.run_report import finish_run, gate_rules, gate_verdict, preload, write_out
from assay.providers.urls import public_url


def execute(config: Any, *, lane: Any = None) -> None:
    """One ``assay run`` from its configuration: plan, run_samples, report, gate (never returns)."""
    from assay.providers import settings as provider_settings

    plan = build_plan(config, lane)
    with provider_settings.scope(plan.providers):
        _preflight(plan)
        if config.dry_run:
            dry_run(plan, _evaluate_without_store)  # exits 0
        store = None if config.no_store else _open_store(config.store_path)
        if len(plan.systems) > 1:
            _run_systems(plan, store)  # exits with the gate's code
            return
        _run_one(plan, store)


def _evaluate_without_store(plan: Plan) -> Any:
    """The run's report with nothing stored and no progress display (for ``--dry-run``)."""
    from assay.engine.evaluation import RunState
    from assay.engine.progress import Progress, progress_mode

    state = RunState()
    progress = Progress(progress_mode(quiet=True), thresholds=plan.thresholds)
    return _evaluate(plan, None, state, progress, _options(plan), keep_rows=False)


def _open_store(path: Path | None) -> Any:
    from assay.store.runs import RunStore

    return RunStore(path)


def _preflight(plan: Plan) -> None:
    """Configuration errors before any work (exit 2); scope warnings on stderr."""
    from assay.api import preflight

    # The gate's rules (assay.toml [gate], the dataset's gate: block, flags), read before any
    # work so a bad one exits 2 at once; several systems leave the baseline's rules out.
    flags = plan.config.gate_flags(with_baseline_rules=len(plan.systems) == 1)
    plan.rules = gate_rules(plan.loaded.gate, flags)
    for message in preflight(plan.chosen, plan.selected):
        warn(message)
    if plan.chosen.calibrations:  # a run with no calibrated judge loads none of this
        from assay.judges.in_run import calibration_paths

        plan.calibrations = calibration_paths(plan.chosen.calibrations, Path(plan.config.dataset))


def _run_one(plan: Plan, store: Any) -> None:
    """One system: run_samples, then budget, comparison, gate, reports and the exit code."""
    config = plan.config
    resume_id = _resume_id(config, store, plan.loaded.name)
    state, budget, progress = _watch(config, plan.thresholds, _preload_formats(plan))
    options = _options(
        plan,
        run_id=resume_id or config.run_id,
        resume=resume_id is not None,
        resume_changed=config.resume_changed,
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
    # What follows needs only the report: let a large dataset and its outputs go first.
    plan.loaded = plan.selected = plan.system = None
    try:
        finish_run(
            report_obj,
            plan.rules,
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


def _with_judges(plan: Plan, report_obj: Any, store: Any) -> Any:
    """The judge blocks (calibration measured once per run), one stderr line per judge."""
    if not plan.info.get("judge_model"):  # no metric calls a judge: no judge block
        return report_obj
    from assay.judges.in_run import judge_lines, with_judges

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


def _resume_id(config: Any, store: Any, dataset_name: str) -> str | None:
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


def _watch(config: Any, thresholds: Any, formats: list[str] | None) -> tuple[Any, Any, Any]:
    """Run state with the budget guard and the progress display hooked to each result; the
    first result starts loading what the reports in ``formats`` need (run_report.preload)."""
    from assay.engine.evaluation import RunState
    from assay.engine.progress import Progress, progress_mode

    state = RunState()
    budget = None
    if config.budget_usd is not None:
        from assay.engine.budget import BudgetGuard

        budget = BudgetGuard(config.budget_usd, state)
    progress = Progress(progress_mode(quiet=config.quiet), thresholds=thresholds)
    to_preload = [formats] if formats is not None else []

    def on_results(results: Sequence[Any]) -> None:
        if to_preload:  # the first result: the run is under way, load what its end needs
            preload(to_preload.pop())
        if budget is not None:
            for result in results:
                budget.observe(result)
        progress.advance(results)

    state.on_results = on_results
    return state, budget, progress


def _with_compliance(
    report_obj: Any,
    dataset: Any,
    store: Any,
    keep_rows: bool,
    metrics: list[Any],
    promote_to: Path | None,
    source: str,
) -> Any:
    """The adversarial compliance summary, and ``--promote-failures``, from the run's rows."""
    from assay.adversarial.lane import with_compliance
    from assay.engine.rebuild import rows_from_store

    names = [m.name for m in metrics]
    run_id = report_obj.run.run_id

    def rows() -> Iterable[Any]:
        return report_obj.rows if keep_rows else rows_from_store(store, run_id, names)

    report_obj = with_compliance(report_obj, dataset, rows, promote_to=promote_to, source=source)
    if store is not None and report_obj.adversarial is not None:  # for `assay report RUN`
        store.record_compliance(run_id, report_obj.adversarial.model_dump(mode="json"))
    return report_obj


def _options(plan: Plan, **update: Any) -> Any:
    """The evaluation options of this run (``update``: per-system or resume fields)."""
    from assay.engine.evaluation import RunOptions

    config = plan.config
    values: dict[str, Any] = {
        "repetitions": config.repetitions,
        "sut_concurrency": config.concurrency,
        "dataset_path": str(config.dataset),
        "extra_info": dict(plan.info),
        "thresholds": plan.thresholds,
        "text_limit": config.text_limit,
        "redact": config.redact,
    }
    values.update(update)
    return RunOptions(**values)


def _ray_options(executor: str | None, address: str | None) -> Any:
    """Ray options when the run goes to Ray (flag, ``ASSAY_EXECUTOR`` or ``assay.toml``); a
    bad value names where it came from: the flag, or the file and its key."""
    from assay.store.project import find_config, read_toml

    config = find_config()
    table = read_toml(config) if config is not None else {}
    chosen = executor or table.get("executor") or "local"
    if chosen == "local":
        return None
    if chosen != "ray":
        where = "--executor" if executor else f"{config}: executor"
        fail(f"{where} must be local or ray; got {chosen!r}")
    from assay.engine.ray_executor import RayOptions

    ray_table = table.get("ray")
    configured: dict[str, Any] = ray_table if isinstance(ray_table, dict) else {}
    return RayOptions(
        address=address or configured.get("address"),
        batch_size=_ray_count(configured, "batch_size", 256, f"{config} [ray]", least=1),
        max_retries=_ray_count(configured, "max_retries", 3, f"{config} [ray]", least=0),
    )


def _ray_count(table: dict[str, Any], key: str, default: int, where: str, *, least: int) -> int:
    """An integer setting of ``assay.toml [ray]``, at least ``least``; one line naming the file
    and key otherwise (before: ``int("x")`` ended as an unexpected ValueError)."""
    value = table.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        fail(f"{where}.{key} must be an integer of at least {least}; got {value!r}")
    return value


def _evaluate(
    plan: Plan, store: Any, state: Any, progress: Any, options: Any, keep_rows: bool
) -> Any:
    """The one evaluate path; Ctrl-C keeps finished work and prints the resume command."""
    from assay.engine.evaluation import run_samples

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


def _run_systems(plan: Plan, store: Any) -> None:
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
        gate=lambda report: gate_verdict(report, plan.rules, None),
        formats=[(config.fmt, config.out), *plan.extra_reports],
        quiet=config.quiet,
    )


def _run_many(
    specs: list[Any],
    dataset: Any,
    *,
    check: dict[str, Any],
    formats: list[tuple[str, Path | None]],
    quiet: bool,
    store: Any,
    **shared: Any,
) -> None:
    """Several systems on the same samples: one stored run each, one side-by-side report."""
    from assay.cli.systems import SystemsRun, check_combination, run_systems

    check_combination(check, formats[0][0], [f for f, _ in formats[1:]])
    try:
        with _collecting():
            run_systems(
                SystemsRun(dataset=dataset, store=store, **shared),
                specs,
                outputs=formats,
                write=write_out,
                quiet=quiet,
            )
    finally:
        if store is not None:
            store.close()
