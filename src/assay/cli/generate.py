"""``assay generate`` (a dataset from a corpus) and ``assay simulate`` (conversations with a
simulated user): option parsing and printing only; the work is in :mod:`assay.generate`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from assay.cli.console import EXIT_GATE_FAILED, printable, warn
from assay.cli.run_options import (
    BaseUrlOpt,
    CacheDirOpt,
    JudgeModelOpt,
    NoCacheOpt,
    NoStoreOpt,
    RefreshCacheOpt,
    StoreOpt,
)

if TYPE_CHECKING:
    from assay.providers.settings import ProviderSettings
    from assay.store.runs import RunStore


def register(app: typer.Typer) -> None:
    app.command("generate")(generate)
    app.command("simulate")(simulate_command)


def _option(*names: str, env: str, help: str) -> typer.models.OptionInfo:
    option: typer.models.OptionInfo = typer.Option(*names, envvar=env, help=help)
    return option


FromOpt = Annotated[
    Path,
    _option(
        "--from",
        env="ASSAY_GENERATE_FROM",
        help="Folder (or file) of .md, .txt, .html (.pdf: the pdf extra).",
    ),
]
CountOpt = Annotated[int, _option("-n", "--count", env="ASSAY_GENERATE_N", help="Samples to keep.")]
OutOpt = Annotated[
    Path, _option("-o", "--out", env="ASSAY_GENERATE_OUT", help="Dataset to write (.yml, .json).")
]
NameOpt = Annotated[
    str | None,
    _option("--name", env="ASSAY_GENERATE_NAME", help="Dataset name (default: folder name)."),
]
SeedOpt = Annotated[
    int, _option("--seed", env="ASSAY_GENERATE_SEED", help="Seed of task draws and requests.")
]
MixOpt = Annotated[
    list[str] | None,
    _option(
        "--mix",
        env="ASSAY_GENERATE_MIX",
        help="kind=weight, repeatable; kinds: single-fact, multi-hop, comparison, unanswerable "
        "(default 4:2:2:1).",
    ),
]
PersonaOpt = Annotated[
    list[str] | None,
    _option("--persona", env="ASSAY_GENERATE_PERSONA", help="Who asks (repeatable)."),
]
CheckOpt = Annotated[
    str,
    _option(
        "--check",
        env="ASSAY_GENERATE_CHECK",
        help="heuristic (offline, lexical) | judge: how 'answerable from its contexts' is checked.",
    ),
]
DuplicateOpt = Annotated[
    float,
    _option(
        "--duplicate-threshold",
        env="ASSAY_GENERATE_DUPLICATE_THRESHOLD",
        help="Token-sort similarity (0-100) at which a question is a near-duplicate.",
    ),
]
AttemptsOpt = Annotated[
    int | None,
    _option(
        "--max-attempts", env="ASSAY_GENERATE_MAX_ATTEMPTS", help="Tasks tried at most (3 x n)."
    ),
]
ModelOpt = Annotated[
    str | None,
    _option("--model", env="ASSAY_GENERATE_MODEL", help="Generator model (default: judge model)."),
]
BudgetOpt = Annotated[
    float | None,
    _option(
        "--budget",
        "--budget-usd",
        env="ASSAY_BUDGET_USD",
        help="Stop before spending more (USD); rerun resumes.",
    ),
]
ChunkOpt = Annotated[
    int, _option("--chunk-chars", env="ASSAY_GENERATE_CHUNK_CHARS", help="Longest chunk.")
]
SummaryOpt = Annotated[
    Path | None,
    _option("--summary", env="ASSAY_GENERATE_SUMMARY", help="Also write the summary as JSON."),
]


def generate(
    source: FromOpt,
    count: CountOpt = 20,
    out: OutOpt = Path("generated.yml"),
    name: NameOpt = None,
    seed: SeedOpt = 0,
    mix: MixOpt = None,
    persona: PersonaOpt = None,
    check: CheckOpt = "heuristic",
    duplicate_threshold: DuplicateOpt = 90.0,
    max_attempts: AttemptsOpt = None,
    model: ModelOpt = None,
    budget: BudgetOpt = None,
    chunk_chars: ChunkOpt = 1200,
    summary_path: SummaryOpt = None,
    judge_model: JudgeModelOpt = None,
    base_url: BaseUrlOpt = None,
    cache_dir: CacheDirOpt = None,
    no_cache: NoCacheOpt = False,
    refresh_cache: RefreshCacheOpt = False,
) -> None:
    """Write a dataset of questions from a folder of documents, each checked before it is kept."""
    from assay.generate.commands import GenerateRequest, run_generate

    request = GenerateRequest(
        source=source,
        count=count,
        out=out,
        name=name,
        seed=seed,
        mix=tuple(mix or ()),
        personas=tuple(persona or ()),
        check=check,
        duplicate_threshold=duplicate_threshold,
        max_attempts=max_attempts,
        model=model,
        budget=budget,
        chunk_chars=chunk_chars,
        summary_path=summary_path,
    )
    flags = _provider_flags(judge_model, base_url, cache_dir, no_cache, refresh_cache)
    outcome = run_generate(request, flags, echo=_err)
    _finish(outcome.halted, outcome.written)


def _finish(halted: str | None, written: bool) -> None:
    """Exit 1 when the budget stopped the command or nothing was written."""
    if halted is not None:
        warn(f"budget reached: {halted}; rerun the same command with a larger --budget")
        raise typer.Exit(EXIT_GATE_FAILED)
    if not written:
        raise typer.Exit(EXIT_GATE_FAILED)


def _err(line: str) -> None:
    typer.echo(f"assay: {printable(line)}", err=True)


def _provider_flags(
    judge_model: str | None,
    base_url: str | None,
    cache_dir: Path | None,
    no_cache: bool,
    refresh_cache: bool,
) -> dict[str, object]:
    return {
        "judge_model": judge_model,
        "base_url": base_url,
        "cache_dir": cache_dir,
        "no_cache": no_cache,
        "refresh_cache": refresh_cache,
    }


SutOpt = Annotated[
    str,
    _option("--sut", env="ASSAY_SUT", help="System under test: module:function or an http(s) URL."),
]
SimOutOpt = Annotated[
    Path,
    _option("-o", "--out", env="ASSAY_SIMULATE_OUT", help="Dataset of conversations to write."),
]
SimOutputsOpt = Annotated[
    Path | None,
    _option(
        "--outputs",
        env="ASSAY_SIMULATE_OUTPUTS",
        help="Saved replies to write (default: <out>.outputs.json).",
    ),
]
TurnsOpt = Annotated[
    int, _option("--max-turns", env="ASSAY_SIMULATE_MAX_TURNS", help="User messages at most.")
]
UserModelOpt = Annotated[
    str | None,
    _option("--user-model", env="ASSAY_SIMULATE_USER_MODEL", help="Simulated user's model."),
]
ConcurrencyOpt = Annotated[
    int,
    _option("--concurrency", env="ASSAY_SIMULATE_CONCURRENCY", help="Conversations at once."),
]
SutTimeoutOpt = Annotated[
    float, _option("--sut-timeout", env="ASSAY_SUT_TIMEOUT", help="Seconds per reply at most.")
]
TurnMetricOpt = Annotated[
    list[str] | None,
    _option(
        "--metric",
        env="ASSAY_SIMULATE_METRIC",
        help="Turn metric (repeatable; default answer-relevancy).",
    ),
]
ReportOpt = Annotated[
    Path | None,
    _option("--report", env="ASSAY_SIMULATE_REPORT", help="Also write the report as JSON."),
]


def simulate_command(
    dataset: Annotated[Path, typer.Argument(help="Samples with metadata.goal and .persona.")],
    sut: SutOpt,
    out: SimOutOpt = Path("simulated.yml"),
    outputs: SimOutputsOpt = None,
    max_turns: TurnsOpt = 8,
    user_model: UserModelOpt = None,
    budget: BudgetOpt = None,
    concurrency: ConcurrencyOpt = 4,
    sut_timeout: SutTimeoutOpt = 60.0,
    metric: TurnMetricOpt = None,
    report_path: ReportOpt = None,
    store_path: StoreOpt = None,
    no_store: NoStoreOpt = False,
    judge_model: JudgeModelOpt = None,
    base_url: BaseUrlOpt = None,
    cache_dir: CacheDirOpt = None,
    no_cache: NoCacheOpt = False,
    refresh_cache: RefreshCacheOpt = False,
) -> None:
    """Talk to a system under test as simulated users with goals; score the conversations."""
    from assay.generate.commands import check_writable
    from assay.generate.simulation_run import SimulateRequest, run_simulate
    from assay.providers.settings import build
    from assay.store.runs import RunStore

    request = SimulateRequest(
        dataset=dataset,
        sut=sut,
        out=out,
        outputs=outputs,
        max_turns=max_turns,
        user_model=user_model,
        budget=budget,
        concurrency=concurrency,
        sut_timeout=sut_timeout,
        **({"turn_metrics": tuple(metric)} if metric else {}),
    )
    if report_path is not None:
        check_writable(report_path, "--report")
    flags = _provider_flags(judge_model, base_url, cache_dir, no_cache, refresh_cache)
    settings = build(cli={k: v for k, v in flags.items() if v is not None})
    outcome = run_simulate(request, settings, echo=_err)
    if outcome.written and outcome.halted is None:
        runs = None if no_store else RunStore(store_path)
        _score(request.out, request.outputs_path, report_path, runs, settings)
    elif outcome.written:
        _err("not scored: the budget was reached (scoring asks the judge)")
    _err(outcome.spend_line)
    _finish(outcome.halted, outcome.written)


def _score(
    dataset: Path,
    outputs: Path,
    report_path: Path | None,
    runs: RunStore | None,
    settings: ProviderSettings,
) -> None:
    """Score the written transcripts as ``assay run DATASET --outputs OUTPUTS`` would, into
    the run store unless ``--no-store``."""
    from assay.api import evaluate
    from assay.data.fileio import write_atomic
    from assay.generate.scores import conversation_lines

    try:
        report = evaluate(dataset, outputs=outputs, store=runs, settings=settings)
    finally:
        if runs is not None:
            runs.close()
    for line in conversation_lines(report):
        _err(line)
    stored = f"; stored as run {report.run.run_id}" if runs is not None else ""
    _err(f"wrote {dataset} and {outputs}{stored}")
    _err(f"score again with: assay run {dataset} --outputs {outputs}")
    if report_path is not None:
        write_atomic(report_path, report.model_dump_json(indent=2) + "\n")
