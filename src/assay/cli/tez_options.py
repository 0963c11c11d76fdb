"""The options of ``assay tez`` commands: their choices and their typer declarations.

Declared once here as ``Annotated`` aliases so that :mod:`assay.cli.tez` holds only what each
command does; the help text, environment variables and bounds live with the option.
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated

import typer


class Method(str, Enum):
    automated_heuristic = "automated_heuristic"
    llm_as_judge = "llm_as_judge"
    nli_based = "nli_based"
    human_in_loop = "human_in_loop"
    hybrid = "hybrid"


class Extension(str, Enum):
    vendor = "com.ragu.eval-metrics"
    standard = "tezit-eval"


class Format(str, Enum):
    text = "text"
    json = "json"


BundleArg = Annotated[Path, typer.Argument(help="Bundle directory or .tez (zip) file.")]
FormatOpt = Annotated[
    Format, typer.Option("--format", envvar="ASSAY_TEZ_FORMAT", help="Output format.")
]
SessionOpt = Annotated[
    Path,
    typer.Option(
        "--session", "-s", envvar="ASSAY_TEZ_SESSION", help="Session file (JSON, YAML or JSONL)."
    ),
]
ExpectationsOpt = Annotated[
    Path | None,
    typer.Option(
        "--expectations",
        "-e",
        envvar="ASSAY_TEZ_EXPECTATIONS",
        help="Expected outcomes in test-queries.json shape.",
    ),
]
MethodOpt = Annotated[
    Method, typer.Option("--method", envvar="ASSAY_TEZ_METHOD", help="Scoring method.")
]
JudgeModelOpt = Annotated[
    str | None,
    typer.Option(
        "--judge-model",
        envvar="ASSAY_JUDGE_MODEL",
        help="Judge model (llm_as_judge, hybrid); default ASSAY_JUDGE_MODEL.",
    ),
]
NliModelOpt = Annotated[
    str | None,
    typer.Option(
        "--nli-model",
        envvar="ASSAY_TEZ_NLI_MODEL",
        help="Cross-encoder NLI model name or path (nli_based; needs assay[nli]).",
    ),
]
NliThresholdOpt = Annotated[
    float,
    typer.Option(
        "--nli-threshold",
        envvar="ASSAY_TEZ_NLI_THRESHOLD",
        min=0.0,
        max=1.0,
        help="Entailment probability a passage needs to support a claim (nli_based).",
    ),
]
VerdictsOpt = Annotated[
    Path | None,
    typer.Option(
        "--verdicts",
        envvar="ASSAY_TEZ_VERDICTS",
        help="Reviewers' per-claim verdicts, JSON or YAML (human_in_loop).",
    ),
]
WriteOpt = Annotated[
    bool,
    typer.Option("--write", envvar="ASSAY_TEZ_WRITE", help="Write the records into the bundle."),
]
ExtensionOpt = Annotated[
    Extension,
    typer.Option("--extension", envvar="ASSAY_TEZ_EXTENSION", help="Extension id to write."),
]
ReplaceOpt = Annotated[
    bool,
    typer.Option(
        "--replace", envvar="ASSAY_TEZ_REPLACE", help="Discard records of another session."
    ),
]
TezitEvalOutOpt = Annotated[
    Path | None,
    typer.Option(
        "--tezit-eval-out",
        envvar="ASSAY_TEZ_EVAL_OUT",
        help="Also write a standalone tezit-eval report here.",
    ),
]
PreviousOpt = Annotated[
    Path | None,
    typer.Option(
        "--previous",
        envvar="ASSAY_TEZ_PREVIOUS",
        help="Earlier evaluation (tezit-eval or score JSON) for drop alerts.",
    ),
]
MaxDropOpt = Annotated[
    float,
    typer.Option(
        "--max-drop",
        envvar="ASSAY_TEZ_MAX_DROP",
        min=0.0,
        max=1.0,
        help="Relative drop that raises an alert.",
    ),
]
GateOpt = Annotated[
    bool, typer.Option("--gate", envvar="ASSAY_TEZ_GATE", help="Exit 1 when any alert fires.")
]
TauOpt = Annotated[
    float,
    typer.Option(
        "--tau",
        envvar="ASSAY_TEZ_TAU",
        min=0.0,
        max=1.0,
        help="Word coverage a citation needs (heuristic).",
    ),
]
OutOpt = Annotated[
    Path | None,
    typer.Option("--out", envvar="ASSAY_TEZ_OUT", help="Write the report here instead of stdout."),
]
StrictOpt = Annotated[
    bool,
    typer.Option("--strict", envvar="ASSAY_TEZ_STRICT", help="Treat warnings as problems."),
]
