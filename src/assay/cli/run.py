"""``assay run`` (the main job), ``assay runs`` and ``assay report``.

``run`` only turns its flags into a :class:`~assay.engine.config.RunConfig` and hands it to
:func:`assay.cli.run_execution.execute`; its options are declared in :mod:`assay.cli.run_options`.
"""

# No ``from __future__ import annotations``: typer reads ``run``'s 45 annotations twice as it
# builds the command, and strings would be compiled and evaluated each time (~2 ms).
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from assay.cli import run_options as opt
from assay.cli.console import fail, printable

if TYPE_CHECKING:
    from assay.store.runs import RunStore
    from assay.store.schema import RunRecord


def register(app: typer.Typer) -> None:
    app.command("run")(run)
    app.command("runs")(runs)
    app.command("report")(report)


LANE_KEY = "assay.lane"
"""Where ``assay adversarial`` puts its LaneHooks in the click context's meta for ``run``."""


def run(
    ctx: typer.Context,
    dataset: opt.DatasetArg,
    outputs: opt.OutputsOpt = None,
    sut: opt.SutOpt = None,
    sut_url: opt.SutUrlOpt = None,
    sut_output_path: opt.SutOutputPathOpt = None,
    sut_retrieved_path: opt.SutRetrievedPathOpt = None,
    sut_trajectory_path: opt.SutTrajectoryPathOpt = None,
    sut_timeout: opt.SutTimeoutOpt = None,
    rpm: opt.RpmOpt = None,
    metric: opt.MetricOpt = None,
    fmt: opt.FormatOpt = "md",
    out: opt.OutOpt = None,
    also: opt.AlsoOpt = None,
    min_macro_f1: opt.MinMacroF1Opt = None,
    min_pass_rate: opt.MinPassRateOpt = None,
    min_mean: opt.MinMeanOpt = None,
    min_coverage: opt.MinCoverageOpt = None,
    max_failures: opt.MaxFailuresOpt = None,
    compare: opt.CompareOpt = None,
    max_regressions: opt.MaxRegressionsOpt = None,
    max_flips: opt.MaxFlipsOpt = None,
    max_drop: opt.MaxDropOpt = None,
    reference: opt.ReferenceOpt = None,
    allow_judge_change: opt.AllowJudgeChangeOpt = False,
    redact: opt.RedactOpt = False,
    text_limit: opt.TextLimitOpt = 200,
    repetitions: opt.RepetitionsOpt = None,
    concurrency: opt.ConcurrencyOpt = 8,
    budget_usd: opt.BudgetUsdOpt = None,
    limit: opt.LimitOpt = None,
    sample_n: opt.SampleOpt = None,
    seed: opt.SeedOpt = 0,
    tag: opt.TagOpt = None,
    sample_id: opt.IdOpt = None,
    resume: opt.ResumeOpt = None,
    resume_changed: opt.ResumeChangedOpt = False,
    retry_errors: opt.RetryErrorsOpt = False,
    run_id: opt.RunIdOpt = None,
    executor: opt.ExecutorOpt = None,
    ray_address: opt.RayAddressOpt = None,
    store_path: opt.StoreOpt = None,
    no_store: opt.NoStoreOpt = False,
    dry_run: opt.DryRunOpt = False,
    judge_model: opt.JudgeModelOpt = None,
    embedding_model: opt.EmbeddingModelOpt = None,
    embedding_provider: opt.EmbeddingProviderOpt = None,
    reranker: opt.RerankerOpt = None,
    base_url: opt.BaseUrlOpt = None,
    allow_dataset_endpoints: opt.AllowDatasetEndpointsOpt = False,
    provider_concurrency: opt.ProviderConcurrencyOpt = None,
    no_cache: opt.NoCacheOpt = False,
    refresh_cache: opt.RefreshCacheOpt = False,
    cache_dir: opt.CacheDirOpt = None,
    quiet: opt.QuietOpt = False,
    promote_failures: opt.PromoteFailuresOpt = None,
) -> None:
    """Run a dataset through a system under test (or saved outputs), score it, report, gate."""
    # Loaded when the command runs, not when typer builds it: `assay run --help` skips pydantic.
    from assay.cli.run_execution import execute
    from assay.cli.run_plan import checked_config
    from assay.engine.config import RunConfig

    # Each flag by name into its field; a repeatable flag never given is None here, [] there.
    config = RunConfig(
        dataset=dataset,
        outputs=outputs or [],
        sut=sut or [],
        sut_url=sut_url,
        sut_output_path=sut_output_path,
        sut_retrieved_path=sut_retrieved_path,
        sut_trajectory_path=sut_trajectory_path,
        sut_timeout=sut_timeout,
        rpm=rpm,
        metric=metric or [],
        fmt=fmt,
        out=out,
        also=also or [],
        min_macro_f1=min_macro_f1,
        min_pass_rate=min_pass_rate or [],
        min_mean=min_mean or [],
        min_coverage=min_coverage or [],
        max_failures=max_failures,
        compare=compare,
        max_regressions=max_regressions,
        max_flips=max_flips,
        max_drop=max_drop or [],
        reference=reference,
        redact=redact,
        text_limit=text_limit,
        repetitions=repetitions,
        concurrency=concurrency,
        budget_usd=budget_usd,
        limit=limit,
        sample_n=sample_n,
        seed=seed,
        tag=tag or [],
        sample_id=sample_id or [],
        resume=resume,
        resume_changed=resume_changed,
        retry_errors=retry_errors,
        run_id=run_id,
        executor=executor,
        ray_address=ray_address,
        store_path=store_path,
        no_store=no_store,
        judge_model=judge_model,
        embedding_model=embedding_model,
        embedding_provider=embedding_provider,
        base_url=base_url,
        allow_dataset_endpoints=allow_dataset_endpoints,
        provider_concurrency=provider_concurrency,
        no_cache=no_cache,
        refresh_cache=refresh_cache,
        cache_dir=cache_dir,
        quiet=quiet,
        promote_failures=promote_failures,
        dry_run=dry_run,
        allow_judge_change=allow_judge_change,
        reranker=reranker,
    )
    execute(checked_config(config), lane=ctx.meta.get(LANE_KEY))  # lane: from `assay adversarial`


def runs(
    store_path: Annotated[
        str | None,
        typer.Option("--store", envvar="ASSAY_STORE", help="Run store: file or postgresql:// URL."),
    ] = None,
    limit: Annotated[int, typer.Option("--limit", help="How many runs to list.")] = 20,
) -> None:
    """List past runs, newest first."""
    from assay.cli.console import fail
    from assay.store.runs import RunStore

    if limit < 1:  # SQLite reads LIMIT -1 as "all" and LIMIT 0 as none ("no runs yet")
        fail(f"--limit must be at least 1; got {limit}")
    store = RunStore(store_path)
    try:
        records = store.list_runs(min(limit, 2**63 - 1))  # past SQLite's integer: OverflowError
        cells = [_run_cells(store, record) for record in records]
    finally:
        store.close()
    if not records:
        typer.echo("no runs yet", err=True)
        return
    for line in _runs_table(cells):
        typer.echo(line)


_RUNS_HEADER = (
    "RUN", "STATUS", "DATASET", "SYSTEM", "EXECUTIONS", "FAILED", "ERRORED", "PASS-RATE",
    "MACRO-F1", "VERDICT", "CREATED",
)  # fmt: skip
_SUMMARISED = 100_000  # larger runs are not re-aggregated for a listing: their numbers read '-'


def _run_cells(store: "RunStore", record: "RunRecord") -> tuple[str, ...]:
    """One run's row: what ran, its counts and numbers, and the gate's verdict."""
    from assay.engine.rebuild import report_from_store
    from assay.report.numbers import fmt

    target = record.config.get("system_under_test") or {}
    system = str(target.get("target") or target.get("kind") or "-")
    failed, rate, macro = "-", "-", "-"
    if record.executions <= _SUMMARISED:
        summary = report_from_store(store, record.run_id, keep_rows=False).summary
        failed, rate, macro = (
            str(summary.failed_rows),
            fmt(summary.pass_rate),
            fmt(summary.macro_f1),
        )
    gate = store.gate(record.run_id)
    verdict = "-" if gate is None else "passed" if gate.get("passed") else "FAILED"
    return (
        record.run_id, record.status, record.dataset_name, system, str(record.executions),
        failed, str(record.errored), rate, macro, verdict, record.created_at,
    )  # fmt: skip


def _runs_table(rows: list[tuple[str, ...]]) -> list[str]:
    """``assay runs`` as aligned columns under a header row (numbers right-aligned)."""
    # Run ids, statuses and dataset names are a user's text: escaped for the terminal.
    cells = [_RUNS_HEADER, *(tuple(printable(cell) for cell in row) for row in rows)]
    widths = [max(len(row[i]) for row in cells) for i in range(len(_RUNS_HEADER))]
    numeric = {4, 5, 6, 7, 8}
    return [
        "  ".join(
            c.rjust(w) if i in numeric else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths))
        ).rstrip()
        for row in cells
    ]


def report(
    run_id: Annotated[str, typer.Argument(help="A run id from 'assay runs', or 'latest'.")],
    fmt: Annotated[
        str,
        typer.Option("--format", "-f", help="json | md | html | junit | csv | padosoft-json"),
    ] = "md",
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Write here instead of stdout.")
    ] = None,
    store_path: Annotated[
        str | None,
        typer.Option("--store", envvar="ASSAY_STORE", help="Run store: file or postgresql:// URL."),
    ] = None,
) -> None:
    """Render a stored run again, without rerunning anything."""
    from assay.cli.run_report import FORMATS, render, write_out
    from assay.engine.rebuild import report_from_store, stored_rows
    from assay.store.runs import RunStore

    if fmt not in FORMATS:
        fail(f"--format must be one of {', '.join(FORMATS)}; got {fmt!r}")
    store = RunStore(store_path)
    try:
        resolved = store.latest_run_id() if run_id == "latest" else run_id
        # Every format streams the rows from the store or needs none, as `assay run` does.
        report_obj = report_from_store(store, resolved, keep_rows=False)
        names = [str(name) for name in store.run_config(resolved).get("metrics", [])]
        write_out(
            render(
                report_obj,
                fmt,
                None,
                stored_rows(store, resolved, names, redact=report_obj.redacted),
            ),
            out,
        )
    finally:
        store.close()


__all__ = ["LANE_KEY", "register", "run"]
