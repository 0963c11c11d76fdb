"""``assay run``'s command-line options, each declared once as an ``Annotated`` type.

:func:`assay.cli.run.run` names one parameter per option with its default;
:class:`assay.engine.config.RunConfig` holds the values by the same names. The ``panel`` of each
option
is the heading ``assay run --help`` lists it under (:mod:`assay.cli.help_panels`). Each option with
an ``env`` is also read from that environment variable.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, TypeAlias

import typer


def _option(*names: str, panel: str, help: str, env: str | None = None) -> Any:
    """One option of ``assay run``: its flag names, help panel, help text and variable."""
    return typer.Option(*names, envvar=env, help=help, rich_help_panel=panel)


DatasetArg: TypeAlias = Annotated[
    Path, typer.Argument(help="Golden dataset (.yml, .yaml, .json, .jsonl).")
]

# --- Input: the system under test and the samples ---------------------------------------
OutputsOpt: TypeAlias = Annotated[
    list[str] | None,
    _option(
        "--outputs",
        env="ASSAY_OUTPUTS",
        help="Score a saved-outputs file; repeat as NAME=FILE to compare several systems.",
        panel="Input",
    ),
]
SutOpt: TypeAlias = Annotated[
    list[str] | None,
    _option(
        "--sut",
        env="ASSAY_SUT",
        help="Python system under test, 'module:function'; repeat as NAME=module:function "
        "to compare several systems.",
        panel="Input",
    ),
]
SutUrlOpt: TypeAlias = Annotated[
    str | None,
    _option(
        "--sut-url",
        env="ASSAY_SUT_URL",
        help="HTTP system under test: POST each sample's input as JSON.",
        panel="Input",
    ),
]
SutOutputPathOpt: TypeAlias = Annotated[
    str | None,
    _option(
        "--sut-output-path",
        env="ASSAY_SUT_OUTPUT_PATH",
        help="JSON path of the answer in the --sut-url reply (default 'output').",
        panel="Input",
    ),
]
SutRetrievedPathOpt: TypeAlias = Annotated[
    str | None,
    _option(
        "--sut-retrieved-path",
        env="ASSAY_SUT_RETRIEVED_PATH",
        help="JSON path of the retrieved ids in the --sut-url reply.",
        panel="Input",
    ),
]
SutTrajectoryPathOpt: TypeAlias = Annotated[
    str | None,
    _option(
        "--sut-trajectory-path",
        env="ASSAY_SUT_TRAJECTORY_PATH",
        help="JSON path of the agent's trajectory (tool calls) in the --sut-url reply.",
        panel="Input",
    ),
]
SutTimeoutOpt: TypeAlias = Annotated[
    float | None,
    _option(
        "--sut-timeout",
        env="ASSAY_SUT_TIMEOUT",
        help=(
            "Seconds allowed per call to the system under test (default 60 for --sut-url, "
            "none for a Python --sut)."
        ),
        panel="Input",
    ),
]
LimitOpt: TypeAlias = Annotated[
    int | None, _option("--limit", help="Only the first N samples.", panel="Input")
]
SampleOpt: TypeAlias = Annotated[
    int | None, _option("--sample", help="A random N samples (see --seed).", panel="Input")
]
SeedOpt: TypeAlias = Annotated[int, _option("--seed", help="Seed for --sample.", panel="Input")]
TagOpt: TypeAlias = Annotated[
    list[str] | None,
    _option("--tag", help="Only samples with this tag (repeatable).", panel="Input"),
]
IdOpt: TypeAlias = Annotated[
    list[str] | None, _option("--id", help="Only this sample id (repeatable).", panel="Input")
]

# --- Metrics ----------------------------------------------------------------------------
MetricOpt: TypeAlias = Annotated[
    list[str] | None,
    _option(
        "--metric",
        "-m",
        help="Metric alias or 'module:Class' (repeatable); replaces the dataset's metrics.",
        panel="Metrics",
    ),
]

# --- Report -----------------------------------------------------------------------------
FormatOpt: TypeAlias = Annotated[
    str,
    _option(
        "--format",
        "-f",
        env="ASSAY_FORMAT",
        help="json | md | html | junit | csv | padosoft-json",
        panel="Report",
    ),
]
OutOpt: TypeAlias = Annotated[
    Path | None,
    _option(
        "--out",
        "-o",
        env="ASSAY_OUT",
        help="Write the report here instead of stdout.",
        panel="Report",
    ),
]
AlsoOpt: TypeAlias = Annotated[
    list[str] | None,
    _option(
        "--also",
        help="Extra report files, FORMAT=PATH (repeatable), e.g. html=report.html.",
        panel="Report",
    ),
]
RedactOpt: TypeAlias = Annotated[
    bool,
    _option(
        "--redact",
        env="ASSAY_REDACT",
        help="Drop every text (input, expected, actual, messages); keep ids and numbers.",
        panel="Report",
    ),
]
TextLimitOpt: TypeAlias = Annotated[
    int,
    _option(
        "--text-limit",
        env="ASSAY_TEXT_LIMIT",
        help="Characters of input/expected/actual shown per failing row (0: no limit).",
        panel="Report",
    ),
]
PromoteFailuresOpt: TypeAlias = Annotated[
    Path | None,
    _option(
        "--promote-failures",
        env="ASSAY_PROMOTE_FAILURES",
        help="Write every failed or errored sample here as a YAML golden dataset.",
        panel="Report",
    ),
]

# --- Gate -------------------------------------------------------------------------------
MinMacroF1Opt: TypeAlias = Annotated[
    float | None,
    _option(
        "--min-macro-f1",
        env="ASSAY_MIN_MACRO_F1",
        help="Fail (exit 1) below this macro-F1.",
        panel="Gate",
    ),
]
MinPassRateOpt: TypeAlias = Annotated[
    list[str] | None,
    _option(
        "--min-pass-rate", help="METRIC=X: fail below this pass-rate (repeatable).", panel="Gate"
    ),
]
MinMeanOpt: TypeAlias = Annotated[
    list[str] | None,
    _option("--min-mean", help="METRIC=X: fail below this mean (repeatable).", panel="Gate"),
]
MinCoverageOpt: TypeAlias = Annotated[
    list[str] | None,
    _option(
        "--min-coverage", help="METRIC=X: fail below this share of scored samples.", panel="Gate"
    ),
]
MaxFailuresOpt: TypeAlias = Annotated[
    int | None,
    _option(
        "--max-failures",
        env="ASSAY_MAX_FAILURES",
        help="Allow up to N errors (system under test or metric could not answer or score; "
        "default 0).",
        panel="Gate",
    ),
]
CompareOpt: TypeAlias = Annotated[
    str | None,
    _option(
        "--compare",
        env="ASSAY_COMPARE",
        help="baseline | latest | PATH to a report JSON.",
        panel="Gate",
    ),
]
MaxRegressionsOpt: TypeAlias = Annotated[
    int | None,
    _option(
        "--max-regressions",
        env="ASSAY_MAX_REGRESSIONS",
        help="Regressions beyond noise allowed (default 0).",
        panel="Gate",
    ),
]
ReferenceOpt: TypeAlias = Annotated[
    str | None,
    _option(
        "--reference",
        env="ASSAY_REFERENCE",
        help="With several systems: gate each other system against this one (flips, drops, "
        "regressions).",
        panel="Gate",
    ),
]
MaxFlipsOpt: TypeAlias = Annotated[
    int | None,
    _option(
        "--max-flips",
        env="ASSAY_MAX_FLIPS",
        help="Rows allowed to go from pass to fail against the baseline (default 0).",
        panel="Gate",
    ),
]
AllowJudgeChangeOpt: TypeAlias = Annotated[
    bool,
    _option(
        "--allow-judge-change",
        env="ASSAY_ALLOW_JUDGE_CHANGE",
        help="Count the flips and regressions of a metric whose judge (model, prompt, options) "
        "differs from the baseline's against the system.",
        panel="Gate",
    ),
]
MaxDropOpt: TypeAlias = Annotated[
    list[str] | None,
    _option(
        "--max-drop",
        help="Largest drop against the baseline: macro_f1=0.02 or "
        "METRIC[:mean|p50|p95|pass_rate]=0.05 (repeatable).",
        panel="Gate",
    ),
]

# --- Runner -----------------------------------------------------------------------------
RpmOpt: TypeAlias = Annotated[
    float | None,
    _option(
        "--rpm",
        env="ASSAY_RPM",
        help="At most this many calls per minute to the system under test.",
        panel="Runner",
    ),
]
RepetitionsOpt: TypeAlias = Annotated[
    int | None,
    _option(
        "--repetitions",
        env="ASSAY_REPETITIONS",
        help="Run each sample N times (1 to 1000).",
        panel="Runner",
    ),
]
ConcurrencyOpt: TypeAlias = Annotated[
    int,
    _option(
        "--concurrency",
        "-j",
        env="ASSAY_CONCURRENCY",
        help="Concurrent calls to the system under test.",
        panel="Runner",
    ),
]
BudgetUsdOpt: TypeAlias = Annotated[
    float | None,
    _option(
        "--budget-usd",
        env="ASSAY_BUDGET_USD",
        help="Stop before priced spend exceeds this.",
        panel="Runner",
    ),
]
ResumeChangedOpt: TypeAlias = Annotated[
    bool,
    _option(
        "--resume-changed",
        help="With --resume: score again the samples the dataset changed since the run began.",
        panel="Runner",
    ),
]
ResumeOpt: TypeAlias = Annotated[
    str | None,
    _option(
        "--resume",
        env="ASSAY_RESUME",
        help="Continue run RUN_ID (or 'latest') without redoing finished work.",
        panel="Runner",
    ),
]
RetryErrorsOpt: TypeAlias = Annotated[
    bool,
    _option(
        "--retry-errors", help="With --resume: redo only executions that failed.", panel="Runner"
    ),
]
RunIdOpt: TypeAlias = Annotated[
    str | None,
    _option(
        "--run-id", env="ASSAY_RUN_ID", help="Name the run (default: timestamp).", panel="Runner"
    ),
]
ExecutorOpt: TypeAlias = Annotated[
    str | None,
    _option(
        "--executor",
        env="ASSAY_EXECUTOR",
        help="local (default) or ray: score batches on Ray workers (assay[ray]).",
        panel="Runner",
    ),
]
RayAddressOpt: TypeAlias = Annotated[
    str | None,
    _option(
        "--ray-address",
        env="RAY_ADDRESS",
        help="With --executor ray: the cluster to join (default: a local Ray).",
        panel="Runner",
    ),
]
StoreOpt: TypeAlias = Annotated[
    str | None,
    _option(
        "--store",
        env="ASSAY_STORE",
        help="Run store: a SQLite file (default: .assay/runs.db) or a postgresql:// URL.",
        panel="Runner",
    ),
]
NoStoreOpt: TypeAlias = Annotated[
    bool,
    _option(
        "--no-store", env="ASSAY_NO_STORE", help="Keep nothing on disk (no resume).", panel="Runner"
    ),
]
DryRunOpt: TypeAlias = Annotated[
    bool,
    _option(
        "--dry-run",
        env="ASSAY_DRY_RUN",
        help="Count the model calls per metric (cache hits, estimated tokens and cost); send none.",
        panel="Runner",
    ),
]
QuietOpt: TypeAlias = Annotated[
    bool,
    _option(
        "--quiet", "-q", help="No progress (bar or lines) or summary on stderr.", panel="Runner"
    ),
]

# --- Providers --------------------------------------------------------------------------
JudgeModelOpt: TypeAlias = Annotated[
    str | None,
    _option(
        "--judge-model",
        env="ASSAY_JUDGE_MODEL",
        help="Chat model for judge metrics.",
        panel="Providers",
    ),
]
EmbeddingModelOpt: TypeAlias = Annotated[
    str | None,
    _option(
        "--embedding-model", env="ASSAY_EMBEDDING_MODEL", help="Embedding model.", panel="Providers"
    ),
]
EmbeddingProviderOpt: TypeAlias = Annotated[
    str | None,
    _option(
        "--embedding-provider",
        env="ASSAY_EMBEDDING_PROVIDER",
        help="openai | local | hashing",
        panel="Providers",
    ),
]
RerankerOpt: TypeAlias = Annotated[
    str | None,
    _option(
        "--reranker",
        env="ASSAY_RERANKER",
        help="Local cross-encoder for answer-relevancy and context-precision relevance.",
        panel="Providers",
    ),
]
BaseUrlOpt: TypeAlias = Annotated[
    str | None,
    _option(
        "--base-url",
        env="ASSAY_BASE_URL",
        help="OpenAI-compatible endpoint (default $OPENAI_BASE_URL).",
        panel="Providers",
    ),
]
AllowDatasetEndpointsOpt: TypeAlias = Annotated[
    bool,
    _option(
        "--allow-dataset-endpoints",
        help="Send the environment's API key to a base_url the dataset names (docs/providers.md).",
        panel="Providers",
    ),
]
ProviderConcurrencyOpt: TypeAlias = Annotated[
    int | None,
    _option(
        "--provider-concurrency",
        env="ASSAY_PROVIDER_CONCURRENCY",
        help="Concurrent provider calls.",
        panel="Providers",
    ),
]
NoCacheOpt: TypeAlias = Annotated[
    bool, _option("--no-cache", help="Do not use the provider cache.", panel="Providers")
]
RefreshCacheOpt: TypeAlias = Annotated[
    bool,
    _option(
        "--refresh-cache",
        help="Call providers again and overwrite cached answers.",
        panel="Providers",
    ),
]
CacheDirOpt: TypeAlias = Annotated[
    str | None,
    _option(
        "--cache-dir", env="ASSAY_CACHE_DIR", help="Provider cache directory.", panel="Providers"
    ),
]
