"""The command-line options of ``assay agreement`` and ``assay calibrate``, as ``Annotated``
aliases so each command's signature lists its options one line each (shared ones once)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

LabelsArg = Annotated[Path, typer.Argument(help="Labels file (.json, .yml, .yaml, .jsonl, .csv).")]
DatasetArg = Annotated[
    Path, typer.Argument(help="Human-labelled dataset (.yml, .yaml, .json, .jsonl).")
]

# shared by both commands
FmtOption = Annotated[
    str,
    typer.Option(
        "--format",
        "-f",
        envvar="ASSAY_AGREEMENT_FORMAT",
        help="text | json | autorubric (JSON under autorubric's MetricsResult field names)",
    ),
]
OutOption = Annotated[
    Path | None,
    typer.Option(
        "--out",
        "-o",
        envvar="ASSAY_AGREEMENT_OUT",
        help="Write the report here instead of stdout.",
    ),
]
ModeOption = Annotated[
    str,
    typer.Option(
        "--mode",
        envvar="ASSAY_AGREEMENT_MODE",
        help="CANNOT_ASSESS / NA handling: exclude | as_unmet | as_category.",
    ),
]
NaModeOption = Annotated[
    str | None,
    typer.Option(
        "--na-mode",
        envvar="ASSAY_AGREEMENT_NA_MODE",
        help="NA handling for multi-choice criteria (default: --mode).",
    ),
]
MAX_BOOTSTRAP = 100_000
"""The most ``--bootstrap`` resamples (the usual 1,000-10,000 with room to spare): a slip such as
100000000 is refused, not resampled for hours."""

BootstrapOption = Annotated[
    int,
    typer.Option(
        "--bootstrap",
        envvar="ASSAY_AGREEMENT_BOOTSTRAP",
        help=f"Item-level bootstrap resamples (0 = none; at most {MAX_BOOTSTRAP}).",
    ),
]
DistributionOption = Annotated[
    bool,
    typer.Option(
        "--bootstrap-distribution",
        help="Keep every resample's aggregates in the JSON (bootstrap_distribution).",
    ),
]
SeedOption = Annotated[
    int | None,
    typer.Option("--seed", envvar="ASSAY_AGREEMENT_SEED", help="Seed of the bootstrap."),
]
MinKappaOption = Annotated[
    float | None,
    typer.Option(
        "--min-kappa",
        envvar="ASSAY_MIN_KAPPA",
        help="Exit 1 when the mean kappa (macro) is below this.",
    ),
]
MinAgreementOption = Annotated[
    float | None,
    typer.Option(
        "--min-agreement",
        envvar="ASSAY_MIN_AGREEMENT",
        help="Exit 1 when accuracy (micro) is below this.",
    ),
]
VerboseOption = Annotated[
    bool,
    typer.Option("--verbose", "-v", help="Per-judge criterion tables and per-criterion intervals."),
]

# assay agreement
ConfidenceOption = Annotated[
    float,
    typer.Option(
        "--confidence",
        envvar="ASSAY_AGREEMENT_CONFIDENCE",
        help="Confidence level of the intervals.",
    ),
]
CriteriaOption = Annotated[
    Path | None,
    typer.Option(
        "--criteria",
        envvar="ASSAY_AGREEMENT_CRITERIA",
        help="Criteria file for labels that do not declare them (CSV, JSONL).",
    ),
]

# assay calibrate
MetricOption = Annotated[
    str,
    typer.Option("--metric", "-m", envvar="ASSAY_CALIBRATE_METRIC", help="rubric | llm-as-judge"),
]
JudgeModelOption = Annotated[
    list[str] | None,
    typer.Option(
        "--judge-model",
        envvar="ASSAY_CALIBRATE_JUDGE_MODELS",
        help="A judge model; repeat for several (default: the configured judge model).",
    ),
]
OutputsOption = Annotated[
    Path | None,
    typer.Option(
        "--outputs",
        envvar="ASSAY_OUTPUTS",
        help="Saved outputs holding the answers to judge (else metadata.answer).",
    ),
]
RubricOption = Annotated[
    Path | None,
    typer.Option(
        "--rubric", envvar="ASSAY_RUBRIC", help="Rubric file (else the dataset's rubric:)."
    ),
]
AbstainOption = Annotated[
    str,
    typer.Option(
        "--abstain",
        envvar="ASSAY_RUBRIC_ABSTAIN",
        help="Abstentions in rubric scores: skip | zero | worst.",
    ),
]
SutModelOption = Annotated[
    str | None,
    typer.Option(
        "--sut-model",
        envvar="ASSAY_SUT_MODEL",
        help="The model under test (self-preference warning).",
    ),
]
BaseUrlOption = Annotated[
    str | None,
    typer.Option(
        "--base-url", help="OpenAI-compatible endpoint (else ASSAY_BASE_URL / OPENAI_BASE_URL)."
    ),
]
ConcurrencyOption = Annotated[
    int,
    typer.Option(
        "--concurrency",
        envvar="ASSAY_CALIBRATE_CONCURRENCY",
        help="Samples judged at once per judge model.",
    ),
]
NoCacheOption = Annotated[
    bool, typer.Option("--no-cache", help="Do not read or write the provider cache.")
]
