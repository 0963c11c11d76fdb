"""``assay run`` (the main job), ``assay runs`` and ``assay report``."""

from __future__ import annotations

import random
import shlex
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from assay.console import EXIT_GATE_FAILED, EXIT_OK, fail, warn

if TYPE_CHECKING:
    from assay.rebuild import RowSource


def register(app: typer.Typer) -> None:
    app.command("run")(run)
    app.command("runs")(runs)
    app.command("report")(report)


_FORMATS = ("json", "md", "html", "junit")


def _write(text: str | Iterable[bytes], out: Path | None) -> None:
    if out is None:
        if isinstance(text, str):
            sys.stdout.write(text)
            sys.stdout.flush()
        else:
            sys.stdout.flush()
            for piece in text:
                sys.stdout.buffer.write(piece)
            sys.stdout.buffer.flush()
        return
    from assay.fileio import write_atomic

    write_atomic(out, text)


def render(
    report_obj: Any, fmt: str, comparison: Any = None, rows: RowSource | None = None
) -> str | Iterable[bytes]:
    """Render a report in one of the supported formats (JSON streamed as UTF-8 chunks).

    ``rows`` streams the rows from the run store when the report does not hold them.
    """
    if fmt == "json":
        from assay.report.json_stream import iter_json

        return iter_json(report_obj, rows(encoded=True) if rows is not None else None)
    if fmt == "md":
        from assay.report.markdown import render_markdown

        return render_markdown(report_obj)
    if fmt == "html":
        from assay.report.html import render_html

        return render_html(report_obj, comparison)
    if fmt == "junit":
        from assay.report.junit import render_junit

        return render_junit(report_obj)
    fail(f"--format must be one of {', '.join(_FORMATS)}; got {fmt!r}")


def _select(
    dataset: Any,
    *,
    limit: int | None,
    sample_n: int | None,
    seed: int,
    tags: list[str],
    ids: list[str],
) -> Any:
    """Dataset selection for fast loops: --id, --tag, --sample N --seed S, --limit N."""
    if not (ids or tags or limit is not None or sample_n is not None):
        return dataset  # nothing selected: a streamed dataset stays streamed
    samples = list(dataset.samples)
    if ids:
        known = {s.id for s in samples}
        unknown = [i for i in ids if i not in known]
        if unknown:
            fail(
                f"--id: no sample with id {', '.join(repr(i) for i in unknown)} in dataset "
                f"'{dataset.name}'"
            )
        wanted = set(ids)
        samples = [s for s in samples if s.id in wanted]
    if tags:
        wanted_tags = set(tags)
        samples = [s for s in samples if wanted_tags.intersection(s.tags)]
    if sample_n is not None:
        if sample_n < 1:
            fail("--sample must be at least 1")
        rng = random.Random(seed)
        picked = set(rng.sample(range(len(samples)), min(sample_n, len(samples))))
        samples = [s for i, s in enumerate(samples) if i in picked]
    if limit is not None:
        if limit < 1:
            fail("--limit must be at least 1")
        samples = samples[:limit]
    if not samples:
        fail("the selection (--id/--tag/--sample/--limit) leaves no sample to run")
    return dataset.model_copy(update={"samples": samples})


LANE_KEY = "assay.lane"
"""Where ``assay adversarial`` puts its LaneHooks in the click context's meta for ``run``."""


def run(
    ctx: typer.Context,
    dataset: Annotated[Path, typer.Argument(help="Golden dataset (.yml, .yaml, .json, .jsonl).")],
    outputs: Annotated[
        list[str] | None,
        typer.Option(
            "--outputs",
            envvar="ASSAY_OUTPUTS",
            help="Score a saved-outputs file; repeat as NAME=FILE to compare several systems.",
            rich_help_panel="Input",
        ),
    ] = None,
    sut: Annotated[
        list[str] | None,
        typer.Option(
            "--sut",
            envvar="ASSAY_SUT",
            help="Python system under test, 'module:function'; repeat as NAME=module:function "
            "to compare several systems.",
            rich_help_panel="Input",
        ),
    ] = None,
    sut_url: Annotated[
        str | None,
        typer.Option(
            "--sut-url",
            envvar="ASSAY_SUT_URL",
            help="HTTP system under test: POST each sample's input as JSON.",
            rich_help_panel="Input",
        ),
    ] = None,
    sut_output_path: Annotated[
        str | None,
        typer.Option(
            "--sut-output-path",
            envvar="ASSAY_SUT_OUTPUT_PATH",
            help="JSON path of the answer in the --sut-url reply (default 'output').",
            rich_help_panel="Input",
        ),
    ] = None,
    sut_retrieved_path: Annotated[
        str | None,
        typer.Option(
            "--sut-retrieved-path",
            envvar="ASSAY_SUT_RETRIEVED_PATH",
            help="JSON path of the retrieved ids in the --sut-url reply.",
            rich_help_panel="Input",
        ),
    ] = None,
    sut_trajectory_path: Annotated[
        str | None,
        typer.Option(
            "--sut-trajectory-path",
            envvar="ASSAY_SUT_TRAJECTORY_PATH",
            help="JSON path of the agent's trajectory (tool calls) in the --sut-url reply.",
            rich_help_panel="Input",
        ),
    ] = None,
    sut_timeout: Annotated[
        float | None,
        typer.Option(
            "--sut-timeout",
            envvar="ASSAY_SUT_TIMEOUT",
            help="Seconds allowed per call to the system under test (default 60).",
            rich_help_panel="Input",
        ),
    ] = None,
    rpm: Annotated[
        float | None,
        typer.Option(
            "--rpm",
            envvar="ASSAY_RPM",
            help="At most this many calls per minute to the system under test.",
            rich_help_panel="Runner",
        ),
    ] = None,
    metric: Annotated[
        list[str] | None,
        typer.Option(
            "--metric",
            "-m",
            help="Metric alias or 'module:Class' (repeatable); replaces the dataset's metrics.",
            rich_help_panel="Metrics",
        ),
    ] = None,
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            "-f",
            envvar="ASSAY_FORMAT",
            help="json | md | html | junit",
            rich_help_panel="Report",
        ),
    ] = "md",
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            "-o",
            envvar="ASSAY_OUT",
            help="Write the report here instead of stdout.",
            rich_help_panel="Report",
        ),
    ] = None,
    also: Annotated[
        list[str] | None,
        typer.Option(
            "--also",
            help="Extra report files, FORMAT=PATH (repeatable), e.g. html=report.html.",
            rich_help_panel="Report",
        ),
    ] = None,
    min_macro_f1: Annotated[
        float | None,
        typer.Option(
            "--min-macro-f1",
            envvar="ASSAY_MIN_MACRO_F1",
            help="Fail (exit 1) below this macro-F1.",
            rich_help_panel="Gate",
        ),
    ] = None,
    min_pass_rate: Annotated[
        list[str] | None,
        typer.Option(
            "--min-pass-rate",
            help="METRIC=X: fail below this pass-rate (repeatable).",
            rich_help_panel="Gate",
        ),
    ] = None,
    min_mean: Annotated[
        list[str] | None,
        typer.Option(
            "--min-mean",
            help="METRIC=X: fail below this mean (repeatable).",
            rich_help_panel="Gate",
        ),
    ] = None,
    min_coverage: Annotated[
        list[str] | None,
        typer.Option(
            "--min-coverage",
            help="METRIC=X: fail below this share of scored samples.",
            rich_help_panel="Gate",
        ),
    ] = None,
    max_failures: Annotated[
        int | None,
        typer.Option(
            "--max-failures",
            envvar="ASSAY_MAX_FAILURES",
            help="Allow up to N errors (system under test or metric could not answer or score; "
            "default 0).",
            rich_help_panel="Gate",
        ),
    ] = None,
    compare: Annotated[
        str | None,
        typer.Option(
            "--compare",
            envvar="ASSAY_COMPARE",
            help="baseline | latest | PATH to a report JSON.",
            rich_help_panel="Gate",
        ),
    ] = None,
    max_regressions: Annotated[
        int | None,
        typer.Option(
            "--max-regressions",
            envvar="ASSAY_MAX_REGRESSIONS",
            help="Regressions beyond noise allowed (default 0).",
            rich_help_panel="Gate",
        ),
    ] = None,
    max_flips: Annotated[
        int | None,
        typer.Option(
            "--max-flips",
            envvar="ASSAY_MAX_FLIPS",
            help="Rows allowed to go from pass to fail against the baseline (default 0).",
            rich_help_panel="Gate",
        ),
    ] = None,
    max_drop: Annotated[
        list[str] | None,
        typer.Option(
            "--max-drop",
            help="Largest drop against the baseline: macro_f1=0.02 or "
            "METRIC[:mean|p50|p95|pass_rate]=0.05 (repeatable).",
            rich_help_panel="Gate",
        ),
    ] = None,
    redact: Annotated[
        bool,
        typer.Option(
            "--redact",
            envvar="ASSAY_REDACT",
            help="Drop every text (input, expected, actual, messages); keep ids and numbers.",
            rich_help_panel="Report",
        ),
    ] = False,
    text_limit: Annotated[
        int,
        typer.Option(
            "--text-limit",
            envvar="ASSAY_TEXT_LIMIT",
            help="Characters of input/expected/actual shown per failing row (0: no limit).",
            rich_help_panel="Report",
        ),
    ] = 200,
    repetitions: Annotated[
        int | None,
        typer.Option(
            "--repetitions",
            envvar="ASSAY_REPETITIONS",
            help="Run each sample N times.",
            rich_help_panel="Runner",
        ),
    ] = None,
    concurrency: Annotated[
        int,
        typer.Option(
            "--concurrency",
            "-j",
            envvar="ASSAY_CONCURRENCY",
            help="Concurrent calls to the system under test.",
            rich_help_panel="Runner",
        ),
    ] = 8,
    budget_usd: Annotated[
        float | None,
        typer.Option(
            "--budget-usd",
            envvar="ASSAY_BUDGET_USD",
            help="Stop before priced spend exceeds this.",
            rich_help_panel="Runner",
        ),
    ] = None,
    limit: Annotated[
        int | None,
        typer.Option("--limit", help="Only the first N samples.", rich_help_panel="Input"),
    ] = None,
    sample_n: Annotated[
        int | None,
        typer.Option("--sample", help="A random N samples (see --seed).", rich_help_panel="Input"),
    ] = None,
    seed: Annotated[
        int, typer.Option("--seed", help="Seed for --sample.", rich_help_panel="Input")
    ] = 0,
    tag: Annotated[
        list[str] | None,
        typer.Option(
            "--tag", help="Only samples with this tag (repeatable).", rich_help_panel="Input"
        ),
    ] = None,
    sample_id: Annotated[
        list[str] | None,
        typer.Option("--id", help="Only this sample id (repeatable).", rich_help_panel="Input"),
    ] = None,
    resume: Annotated[
        str | None,
        typer.Option(
            "--resume",
            envvar="ASSAY_RESUME",
            help="Continue run RUN_ID (or 'latest') without redoing finished work.",
            rich_help_panel="Runner",
        ),
    ] = None,
    retry_errors: Annotated[
        bool,
        typer.Option(
            "--retry-errors",
            help="With --resume: redo only executions that failed.",
            rich_help_panel="Runner",
        ),
    ] = False,
    run_id: Annotated[
        str | None,
        typer.Option(
            "--run-id",
            envvar="ASSAY_RUN_ID",
            help="Name the run (default: timestamp).",
            rich_help_panel="Runner",
        ),
    ] = None,
    executor: Annotated[
        str | None,
        typer.Option(
            "--executor",
            envvar="ASSAY_EXECUTOR",
            help="local (default) or ray: score batches on Ray workers (assay[ray]).",
            rich_help_panel="Runner",
        ),
    ] = None,
    ray_address: Annotated[
        str | None,
        typer.Option(
            "--ray-address",
            envvar="RAY_ADDRESS",
            help="With --executor ray: the cluster to join (default: a local Ray).",
            rich_help_panel="Runner",
        ),
    ] = None,
    store_path: Annotated[
        Path | None,
        typer.Option(
            "--store",
            envvar="ASSAY_STORE",
            help="Run store file (default: runs.db in the project's .assay/).",
            rich_help_panel="Runner",
        ),
    ] = None,
    no_store: Annotated[
        bool,
        typer.Option(
            "--no-store",
            envvar="ASSAY_NO_STORE",
            help="Keep nothing on disk (no resume).",
            rich_help_panel="Runner",
        ),
    ] = False,
    judge_model: Annotated[
        str | None,
        typer.Option(
            "--judge-model",
            envvar="ASSAY_JUDGE_MODEL",
            help="Chat model for judge metrics.",
            rich_help_panel="Providers",
        ),
    ] = None,
    embedding_model: Annotated[
        str | None,
        typer.Option(
            "--embedding-model",
            envvar="ASSAY_EMBEDDING_MODEL",
            help="Embedding model.",
            rich_help_panel="Providers",
        ),
    ] = None,
    embedding_provider: Annotated[
        str | None,
        typer.Option(
            "--embedding-provider",
            envvar="ASSAY_EMBEDDING_PROVIDER",
            help="openai | local | hashing",
            rich_help_panel="Providers",
        ),
    ] = None,
    base_url: Annotated[
        str | None,
        typer.Option(
            "--base-url",
            envvar="ASSAY_BASE_URL",
            help="OpenAI-compatible endpoint (default $OPENAI_BASE_URL).",
            rich_help_panel="Providers",
        ),
    ] = None,
    provider_concurrency: Annotated[
        int | None,
        typer.Option(
            "--provider-concurrency",
            envvar="ASSAY_PROVIDER_CONCURRENCY",
            help="Concurrent provider calls.",
            rich_help_panel="Providers",
        ),
    ] = None,
    no_cache: Annotated[
        bool,
        typer.Option(
            "--no-cache", help="Do not use the provider cache.", rich_help_panel="Providers"
        ),
    ] = False,
    refresh_cache: Annotated[
        bool,
        typer.Option(
            "--refresh-cache",
            help="Call providers again and overwrite cached answers.",
            rich_help_panel="Providers",
        ),
    ] = False,
    cache_dir: Annotated[
        Path | None,
        typer.Option(
            "--cache-dir",
            envvar="ASSAY_CACHE_DIR",
            help="Provider cache directory.",
            rich_help_panel="Providers",
        ),
    ] = None,
    quiet: Annotated[
        bool,
        typer.Option(
            "--quiet",
            "-q",
            help="No progress (bar or lines) or summary on stderr.",
            rich_help_panel="Runner",
        ),
    ] = False,
    promote_failures: Annotated[
        Path | None,
        typer.Option(
            "--promote-failures",
            envvar="ASSAY_PROMOTE_FAILURES",
            help="Write every failed or errored sample here as a YAML golden dataset.",
            rich_help_panel="Report",
        ),
    ] = None,
) -> None:
    """Run a dataset through a system under test (or saved outputs), score it, report, gate."""
    flags = dict(locals())  # exactly this function's parameters: every flag, by name
    from assay.config import RunConfig

    config = RunConfig.from_flags(flags)
    for problem in _problems(config):
        fail(problem)
    execute(config, lane=ctx.meta.get(LANE_KEY))  # lane: set by `assay adversarial`


@dataclass
class Plan:
    """What a run needs once its flags are checked and its dataset is loaded."""

    config: Any
    lane: Any
    loaded: Any
    systems: list[Any]
    chosen: Any
    metrics: list[Any]
    scopes: Any
    thresholds: dict[str, float]
    providers: Any
    info: dict[str, str | None]
    selected: Any = None
    system: Any = None
    extra_reports: list[tuple[str, Path]] = field(default_factory=list)


def _problems(config: Any) -> list[str]:
    """Flag errors found before any file is read (each one exits 2)."""
    from assay.systems.cli import parse_systems

    problems: list[str] = config.problems()
    given = parse_systems(config.outputs, config.sut)
    if len(given) > 1 and config.sut_url is not None:
        problems.append(
            "--sut-url works with one system; it cannot be combined with several systems"
        )
    if len(given) + (config.sut_url is not None) != 1 and len(given) <= 1:
        problems.append(
            "give exactly one of --outputs FILE, --sut module:function or --sut-url URL"
        )
    return problems


def execute(config: Any, *, lane: Any = None) -> None:
    """One ``assay run`` from its configuration: plan, evaluate, report, gate (never returns)."""
    from assay.providers import settings as provider_settings

    plan = _plan(config, lane)
    with provider_settings.scope(plan.providers):
        _preflight(plan)
        store = None if config.no_store else _open_store(config.store_path)
        if len(plan.systems) > 1:
            _run_systems(plan, store)  # exits with the gate's code
            return
        _run_one(plan, store)


def _open_store(path: Path | None) -> Any:
    from assay.store import RunStore

    return RunStore(path)


def _plan(config: Any, lane: Any) -> Plan:
    """Load the dataset, resolve its metrics and provider settings, build the system."""
    from assay.api import metric_plan
    from assay.dataset import load_dataset
    from assay.metrics.base import provider_use
    from assay.providers.settings import build as build_providers
    from assay.systems.cli import parse_systems

    extra_reports = _parse_also(config.also)
    loaded = lane.dataset if lane is not None else load_dataset(config.dataset)
    if lane is None and not config.metric and not loaded.metrics:
        fail(
            f"{config.dataset}: no metrics: declare 'metrics:' in the dataset or pass --metric NAME"
        )
    providers = build_providers(cli=config.provider_flags(), dataset=loaded.providers)
    chosen = metric_plan(loaded, lane.metric_specs if lane is not None else config.metric or None)
    metrics, scopes = chosen.metrics, chosen.scopes
    plan = Plan(
        config=config,
        lane=lane,
        loaded=loaded,
        systems=parse_systems(config.outputs, config.sut),
        chosen=chosen,
        metrics=metrics,
        scopes=scopes,
        thresholds=chosen.thresholds,
        providers=providers,
        info=provider_use(metrics, providers),
        extra_reports=extra_reports,
    )
    plan.system = _system(plan)
    plan.selected = _select(
        loaded,
        limit=config.limit,
        sample_n=config.sample_n,
        seed=config.seed,
        tags=config.tag,
        ids=config.sample_id,
    )
    return plan


def _system(plan: Plan) -> Any:
    """The one system under test (None when several systems run; each is built later)."""
    from assay.outputs import check_outputs_cover, load_outputs
    from assay.sut import PythonTarget, SavedOutputs

    config = plan.config
    if len(plan.systems) > 1:
        return None
    only = plan.systems[0] if plan.systems else None
    if only is not None and only.kind == "outputs":
        from assay.outputs_stream import same_ids

        saved = load_outputs(Path(only.value))
        if not same_ids(saved, plan.loaded.samples):
            ids = [s.id for s in plan.loaded.samples]
            check_outputs_cover(saved, ids, path=str(only.value))
        return SavedOutputs(saved, str(only.value))
    limiter = _limiter(config.concurrency, config.rpm)
    if only is not None:
        system = PythonTarget(only.value)
        system.limiter = limiter
        return system
    from assay.http_sut import HttpTarget

    return HttpTarget.from_environment(
        str(config.sut_url),
        output_path=config.sut_output_path,
        retrieved_path=config.sut_retrieved_path,
        trajectory_path=config.sut_trajectory_path,
        timeout_s=config.sut_timeout,
        limiter=limiter,
    )


def _options(plan: Plan, **update: Any) -> Any:
    """The evaluation options of this run (``update``: per-system or resume fields)."""
    from assay.evaluation import RunOptions

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
        limiter=lambda: _limiter(config.concurrency, config.rpm),
        gate=lambda report: _gate(
            report, plan.loaded.gate, None, config.gate_flags(with_baseline_rules=False)
        ),
        formats=[(config.fmt, config.out), *plan.extra_reports],
        quiet=config.quiet,
    )


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


def _watch(config: Any, thresholds: Any) -> tuple[Any, Any, Any]:
    """Run state with the budget guard and the progress display hooked to each result."""
    from assay.evaluation import RunState
    from assay.progress import Progress, progress_mode

    state = RunState()
    budget = None
    if config.budget_usd is not None:
        from assay.budget import BudgetGuard

        budget = BudgetGuard(config.budget_usd, state)
    progress = Progress(progress_mode(quiet=config.quiet), thresholds=thresholds)
    previous = state.on_result

    def on_result(result: Any) -> None:
        if budget is not None:
            budget.observe(result)
        progress.advance(result)
        if previous is not None:
            previous(result)

    state.on_result = on_result
    return state, budget, progress


def _run_one(plan: Plan, store: Any) -> None:
    """One system: evaluate, then budget, comparison, gate, reports and the exit code."""
    config = plan.config
    resume_id = _resume_id(config, store, plan.loaded.name)
    state, budget, progress = _watch(config, plan.thresholds)
    options = _options(
        plan,
        run_id=resume_id or config.run_id,
        resume=resume_id is not None,
        retry_errors=config.retry_errors,
        ray=_ray_options(config.executor, config.ray_address),
    )
    # Rows stay in the store (flat memory) unless a view needs them in memory.
    keep_rows = (
        store is None
        or config.compare is not None
        or any(f in ("html", "junit") for f in [config.fmt, *(f for f, _ in plan.extra_reports)])
    )
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
    # What follows needs only the report: let a large dataset and its outputs go first.
    gate_block = plan.loaded.gate
    plan.loaded = plan.selected = plan.system = None
    try:
        _finish_run(
            report_obj,
            gate_block,
            store=store if not keep_rows else None,
            gate_store=store,
            metric_names=[m.name for m in plan.metrics],
            budget=budget,
            done=state.done,
            compare=config.compare,
            store_path=config.store_path,
            gate_cli=config.gate_flags(),
            fmt=config.fmt,
            out=config.out,
            extra_reports=plan.extra_reports,
            quiet=config.quiet,
            lane=plan.lane,
        )
    finally:
        if store is not None:
            store.close()


def _evaluate(
    plan: Plan, store: Any, state: Any, progress: Any, options: Any, keep_rows: bool
) -> Any:
    """The one evaluate path; Ctrl-C keeps finished work and prints the resume command."""
    from assay.evaluation import evaluate

    try:
        with progress.session(lambda: state.total):
            return evaluate(
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


def _finish_run(
    report_obj: Any,
    gate_block: Any,
    *,
    store: Any,
    gate_store: Any,
    metric_names: list[str],
    budget: Any,
    done: int,
    compare: str | None,
    store_path: Path | None,
    gate_cli: dict[str, Any],
    fmt: str,
    out: Path | None,
    extra_reports: list[tuple[str, Path]],
    quiet: bool,
    lane: Any = None,
) -> None:
    """Budget, comparison, gate, rendering and the exit code of a finished run."""
    if budget is not None:
        report_obj = report_obj.model_copy(update={"budget": budget.block(done)})

    comparison = None
    if compare is not None:
        comparison = _compare(report_obj, compare, store_path=store_path)
    gate_result = _gate(report_obj, gate_block, comparison, gate_cli)
    update: dict[str, Any] = {"gate": gate_result.model_dump(mode="json")}
    if gate_store is not None:  # `assay view` shows each run's verdict
        gate_store.record_gate(report_obj.run.run_id, update["gate"])
    if comparison is not None:
        update["comparison"] = comparison.summary()
        # What the paired tests cannot see (too few samples, a drop under the MDD) is said on
        # stderr and kept in the report, so a green comparison is never mistaken for evidence.
        update["warnings"] = [*report_obj.warnings, *comparison.warnings]
        for message in comparison.warnings:
            warn(f"compare: {message}")
    report_obj = report_obj.model_copy(update=update)
    lane_failures: list[str] = []
    if lane is not None:
        report_obj, lane_failures = lane.gate(report_obj)

    rows: RowSource | None = None
    if store is not None:
        from assay.rebuild import stored_rows

        rows = stored_rows(store, report_obj.run.run_id, metric_names)

    _write(render(report_obj, fmt, comparison, rows), out)
    for extra_fmt, extra_path in extra_reports:
        _write(render(report_obj, extra_fmt, comparison, rows), extra_path)
    if not quiet:
        _print_summary(report_obj, gate_result)
    if lane is not None:
        notes = lane.finished(report_obj, gate_result.passed)
        for line in [*([] if quiet else notes), *lane_failures]:  # a failure always says why
            typer.echo(f"assay: adversarial: {line}", err=True)
    if report_obj.run.halted or lane_failures:
        raise typer.Exit(EXIT_GATE_FAILED)
    raise typer.Exit(EXIT_OK if gate_result.passed else EXIT_GATE_FAILED)


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
    from assay.rebuild import rows_from_store

    names = [m.name for m in metrics]
    run_id = report_obj.run.run_id

    def rows() -> Iterable[Any]:
        return report_obj.rows if keep_rows else rows_from_store(store, run_id, names)

    report_obj = with_compliance(report_obj, dataset, rows, promote_to=promote_to, source=source)
    if store is not None and report_obj.adversarial is not None:  # for `assay report RUN`
        store.record_compliance(run_id, report_obj.adversarial.model_dump(mode="json"))
    return report_obj


def _limiter(concurrency: int, rpm: float | None) -> Any:
    from assay.limiter import Limiter

    return Limiter(concurrency, rpm=rpm)


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
    from assay.systems.cli import SystemsRun, check_combination, run_systems

    check_combination(check, formats[0][0], [f for f, _ in formats[1:]])
    try:
        run_systems(
            SystemsRun(dataset=dataset, store=store, **shared),
            specs,
            outputs=formats,
            write=_write,
            quiet=quiet,
        )
    finally:
        if store is not None:
            store.close()


def _preflight(plan: Plan) -> None:
    """Configuration errors before any work (exit 2); scope warnings on stderr."""
    from assay.api import preflight

    for message in preflight(plan.chosen, plan.selected):
        warn(message)


def _parse_also(items: list[str]) -> list[tuple[str, Path]]:
    parsed = []
    for item in items:
        kind, sep, path = item.partition("=")
        if not sep or kind not in _FORMATS or not path:
            fail(
                f"--also must look like FORMAT=PATH with FORMAT in {', '.join(_FORMATS)}; got "
                f"{item!r}"
            )
        parsed.append((kind, Path(path)))
    return parsed


def _compare(report_obj: Any, target: str, *, store_path: Path | None) -> Any:
    from assay.baseline import resolve_reference
    from assay.comparison import compare_reports

    reference = resolve_reference(target, report_obj, store_path=store_path)
    if reference is None:
        warn(
            f"--compare {target}: no reference report found; comparison skipped (the gate is not "
            "affected)"
        )
        return None
    return compare_reports(report_obj, reference)


def _ray_options(executor: str | None, address: str | None) -> Any:
    """Ray options when the run goes to Ray (flag, ``ASSAY_EXECUTOR`` or ``assay.toml``)."""
    from assay.gate_rules import find_config, read_toml

    config = find_config()
    table = read_toml(config) if config is not None else {}
    chosen = executor or table.get("executor") or "local"
    if chosen == "local":
        return None
    if chosen != "ray":
        fail(f"--executor must be local or ray; got {chosen!r}")
    from assay.ray_executor import RayOptions

    ray_table = table.get("ray")
    configured: dict[str, Any] = ray_table if isinstance(ray_table, dict) else {}
    return RayOptions(
        address=address or configured.get("address"),
        batch_size=int(configured.get("batch_size", 256)),
        max_retries=int(configured.get("max_retries", 3)),
    )


def _gate(report_obj: Any, dataset_gate: Any, comparison: Any, cli: dict[str, Any]) -> Any:
    from assay.gate import evaluate as evaluate_gate
    from assay.gate_rules import load_rules

    config = Path("assay.toml")
    rules = load_rules(
        cli=cli, dataset_gate=dataset_gate, config_path=config if config.exists() else None
    )
    return evaluate_gate(report_obj, rules, comparison)


def _print_summary(report_obj: Any, gate_result: Any) -> None:
    from assay.report.markdown import fmt

    s = report_obj.summary
    typer.echo(
        f"assay: {report_obj.dataset.name}: {s.total_executions} executions, macro-F1 "
        f"{fmt(s.macro_f1)}, "
        f"{s.failed_rows or 0} failed, {s.errored_rows or 0} errored, run {report_obj.run.run_id}",
        err=True,
    )
    for failure in gate_result.failures:
        typer.echo(f"assay: gate: {failure.message}", err=True)
    typer.echo(f"assay: gate {'passed' if gate_result.passed else 'FAILED'}", err=True)


def _resume_command(run_id: str) -> str:
    args = [a for a in sys.argv[1:]]
    cleaned: list[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
            continue
        if arg in ("--resume", "--run-id"):
            skip = True
            continue
        if arg.startswith(("--resume=", "--run-id=")):
            continue
        cleaned.append(arg)
    return "assay " + " ".join(shlex.quote(a) for a in cleaned) + f" --resume {shlex.quote(run_id)}"


def runs(
    store_path: Annotated[
        Path | None, typer.Option("--store", envvar="ASSAY_STORE", help="Run store file.")
    ] = None,
    limit: Annotated[int, typer.Option("--limit", help="How many runs to list.")] = 20,
) -> None:
    """List past runs, newest first."""
    from assay.store import RunStore

    store = RunStore(store_path)
    try:
        records = store.list_runs(limit)
    finally:
        store.close()
    if not records:
        typer.echo("no runs yet", err=True)
        return
    for line in _runs_table(records):
        typer.echo(line)


_RUNS_HEADER = ("RUN", "STATUS", "DATASET", "EXECUTIONS", "ERRORED", "CREATED")


def _runs_table(records: list[Any]) -> list[str]:
    """``assay runs`` as aligned columns under a header row (numbers right-aligned)."""
    cells = [_RUNS_HEADER] + [
        (r.run_id, r.status, r.dataset_name, str(r.executions), str(r.errored), r.created_at)
        for r in records
    ]
    widths = [max(len(row[i]) for row in cells) for i in range(len(_RUNS_HEADER))]
    numeric = {3, 4}
    return [
        "  ".join(
            c.rjust(w) if i in numeric else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths))
        ).rstrip()
        for row in cells
    ]


def report(
    run_id: Annotated[str, typer.Argument(help="A run id from 'assay runs', or 'latest'.")],
    fmt: Annotated[str, typer.Option("--format", "-f", help="json | md | html | junit")] = "md",
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Write here instead of stdout.")
    ] = None,
    store_path: Annotated[
        Path | None, typer.Option("--store", envvar="ASSAY_STORE", help="Run store file.")
    ] = None,
) -> None:
    """Render a stored run again, without rerunning anything."""
    from assay.rebuild import report_from_store, stored_rows
    from assay.store import RunStore

    if fmt not in _FORMATS:
        fail(f"--format must be one of {', '.join(_FORMATS)}; got {fmt!r}")
    store = RunStore(store_path)
    try:
        resolved = store.latest_run_id() if run_id == "latest" else run_id
        streamable = fmt in ("json", "md")
        report_obj = report_from_store(store, resolved, keep_rows=not streamable)
        names = [m.name for m in report_obj.metrics]
        _write(
            render(
                report_obj,
                fmt,
                None,
                stored_rows(store, resolved, names) if streamable else None,
            ),
            out,
        )
    finally:
        store.close()


__all__ = ["register", "render"]
