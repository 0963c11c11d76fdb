"""``assay agreement LABELS_FILE`` (agreement from precomputed labels) and ``assay calibrate
DATASET`` (run judge models over a human-labelled dataset first), both with a gate.

Exit codes: 0 computed (and the gate passed), 1 a ``--min-*`` threshold was missed or the
gated statistic is undefined (an n/a kappa cannot pass a gate), 2 a usage or input error.
The report goes to stdout or ``--out``; the gate verdict goes to stderr.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from assay.calibration.result import CalibrationResult


def register(app: typer.Typer) -> None:
    app.command("agreement")(agreement)
    app.command("calibrate")(calibrate)


def gate_failures(
    result: CalibrationResult, *, min_kappa: float | None, min_agreement: float | None
) -> list[str]:
    """Human-readable reasons the thresholds were missed (empty = passed)."""
    failures: list[str] = []
    if result.overall is None:
        if min_kappa is not None or min_agreement is not None:
            failures.append("no human labels, so --min-kappa / --min-agreement cannot pass")
        return failures
    agg = result.overall.aggregate
    if min_kappa is not None:
        value = agg.mean_kappa_macro
        if value is None:
            failures.append("mean kappa (macro) is undefined (n/a), so --min-kappa cannot pass")
        elif value < min_kappa:
            failures.append(f"mean kappa (macro) {value:.3f} < --min-kappa {min_kappa:g}")
    if min_agreement is not None:
        value = agg.accuracy_micro
        if value is None:
            failures.append("accuracy (micro) is undefined (n/a), so --min-agreement cannot pass")
        elif value < min_agreement:
            failures.append(f"accuracy (micro) {value:.3f} < --min-agreement {min_agreement:g}")
    return failures


def _check_unit(name: str, value: float | None, low: float) -> None:
    from assay.errors import UsageError

    if value is not None and not low <= value <= 1.0:
        raise UsageError(f"{name} must be in [{low:g}, 1]; got {value:g}")


# Options shared by `assay agreement` and `assay calibrate`.
_FMT_OPTION = Annotated[
    str, typer.Option("--format", "-f", envvar="ASSAY_AGREEMENT_FORMAT", help="text | json")
]
_OUT_OPTION = Annotated[
    Path | None,
    typer.Option(
        "--out",
        "-o",
        envvar="ASSAY_AGREEMENT_OUT",
        help="Write the report here instead of stdout.",
    ),
]
_MODE_OPTION = Annotated[
    str,
    typer.Option(
        "--mode",
        envvar="ASSAY_AGREEMENT_MODE",
        help="CANNOT_ASSESS / NA handling: exclude | as_unmet | as_category.",
    ),
]
_NA_MODE_OPTION = Annotated[
    str | None,
    typer.Option(
        "--na-mode",
        envvar="ASSAY_AGREEMENT_NA_MODE",
        help="NA handling for multi-choice criteria (default: --mode).",
    ),
]
_BOOTSTRAP_OPTION = Annotated[
    int,
    typer.Option(
        "--bootstrap",
        envvar="ASSAY_AGREEMENT_BOOTSTRAP",
        help="Item-level bootstrap resamples (0 = none).",
    ),
]
_DISTRIBUTION_OPTION = Annotated[
    bool,
    typer.Option(
        "--bootstrap-distribution",
        help="Keep every resample's aggregates in the JSON (bootstrap_distribution).",
    ),
]
_SEED_OPTION = Annotated[
    int | None,
    typer.Option("--seed", envvar="ASSAY_AGREEMENT_SEED", help="Seed of the bootstrap."),
]


def agreement(
    labels_file: Annotated[
        Path, typer.Argument(help="Labels file (.json, .yml, .yaml, .jsonl, .csv).")
    ],
    fmt: _FMT_OPTION = "text",
    out: _OUT_OPTION = None,
    mode: _MODE_OPTION = "exclude",
    na_mode: _NA_MODE_OPTION = None,
    bootstrap: _BOOTSTRAP_OPTION = 0,
    distribution: _DISTRIBUTION_OPTION = False,
    seed: _SEED_OPTION = None,
    confidence: Annotated[
        float,
        typer.Option(
            "--confidence",
            envvar="ASSAY_AGREEMENT_CONFIDENCE",
            help="Confidence level of the intervals.",
        ),
    ] = 0.95,
    min_kappa: Annotated[
        float | None,
        typer.Option(
            "--min-kappa",
            envvar="ASSAY_MIN_KAPPA",
            help="Exit 1 when the mean kappa (macro) is below this.",
        ),
    ] = None,
    min_agreement: Annotated[
        float | None,
        typer.Option(
            "--min-agreement",
            envvar="ASSAY_MIN_AGREEMENT",
            help="Exit 1 when accuracy (micro) is below this.",
        ),
    ] = None,
    criteria: Annotated[
        Path | None,
        typer.Option(
            "--criteria",
            envvar="ASSAY_AGREEMENT_CRITERIA",
            help="Criteria file for labels that do not declare them (CSV, JSONL).",
        ),
    ] = None,
    verbose: Annotated[
        bool,
        typer.Option(
            "--verbose", "-v", help="Per-judge criterion tables and per-criterion intervals."
        ),
    ] = False,
) -> None:
    """Agreement between judges and human labels: kappa, alpha, correlations, bias, intervals."""
    from assay.calibration.compute import compute_agreement
    from assay.calibration.loaders import load_labels
    from assay.errors import UsageError

    if fmt not in ("text", "json"):
        raise UsageError(f"--format must be text or json; got {fmt!r}")
    if bootstrap < 0:
        raise UsageError(f"--bootstrap must be >= 0; got {bootstrap}")
    _check_unit("--min-kappa", min_kappa, -1.0)
    _check_unit("--min-agreement", min_agreement, 0.0)
    labels = load_labels(labels_file, criteria=criteria)
    result = compute_agreement(
        labels,
        cannot_assess_mode=mode,
        na_mode=na_mode or mode,
        bootstrap=bootstrap,
        seed=seed,
        confidence_level=confidence,
        keep_distribution=distribution,
    )
    _emit(
        result, fmt=fmt, out=out, verbose=verbose, min_kappa=min_kappa, min_agreement=min_agreement
    )


def _emit(
    result: CalibrationResult,
    *,
    fmt: str,
    out: Path | None,
    verbose: bool,
    min_kappa: float | None,
    min_agreement: float | None,
) -> None:
    """Write the report, then apply the gate (exit 1 on failure)."""
    from assay.fileio import write_atomic

    text = result.to_json() + "\n" if fmt == "json" else result.summary(verbose=verbose) + "\n"
    if out is None:
        typer.echo(text, nl=False)
    else:
        write_atomic(out, text)
    failures = gate_failures(result, min_kappa=min_kappa, min_agreement=min_agreement)
    for reason in failures:
        typer.echo(f"assay: gate failed: {reason}", err=True)
    if failures:
        raise typer.Exit(1)


def calibrate(
    dataset: Annotated[
        Path, typer.Argument(help="Human-labelled dataset (.yml, .yaml, .json, .jsonl).")
    ],
    metric: Annotated[
        str,
        typer.Option(
            "--metric", "-m", envvar="ASSAY_CALIBRATE_METRIC", help="rubric | llm-as-judge"
        ),
    ] = "rubric",
    judge_model: Annotated[
        list[str] | None,
        typer.Option(
            "--judge-model",
            envvar="ASSAY_CALIBRATE_JUDGE_MODELS",
            help="A judge model; repeat for several (default: the configured judge model).",
        ),
    ] = None,
    outputs: Annotated[
        Path | None,
        typer.Option(
            "--outputs",
            envvar="ASSAY_OUTPUTS",
            help="Saved outputs holding the answers to judge (else metadata.answer).",
        ),
    ] = None,
    rubric: Annotated[
        Path | None,
        typer.Option(
            "--rubric", envvar="ASSAY_RUBRIC", help="Rubric file (else the dataset's rubric:)."
        ),
    ] = None,
    abstain: Annotated[
        str,
        typer.Option(
            "--abstain",
            envvar="ASSAY_RUBRIC_ABSTAIN",
            help="Abstentions in rubric scores: skip | zero | worst.",
        ),
    ] = "skip",
    sut_model: Annotated[
        str | None,
        typer.Option(
            "--sut-model",
            envvar="ASSAY_SUT_MODEL",
            help="The model under test (self-preference warning).",
        ),
    ] = None,
    fmt: _FMT_OPTION = "text",
    out: _OUT_OPTION = None,
    mode: _MODE_OPTION = "exclude",
    na_mode: _NA_MODE_OPTION = None,
    bootstrap: _BOOTSTRAP_OPTION = 0,
    distribution: _DISTRIBUTION_OPTION = False,
    seed: _SEED_OPTION = None,
    min_kappa: Annotated[
        float | None,
        typer.Option(
            "--min-kappa",
            envvar="ASSAY_MIN_KAPPA",
            help="Exit 1 when the mean kappa (macro) is below this.",
        ),
    ] = None,
    min_agreement: Annotated[
        float | None,
        typer.Option(
            "--min-agreement",
            envvar="ASSAY_MIN_AGREEMENT",
            help="Exit 1 when accuracy (micro) is below this.",
        ),
    ] = None,
    base_url: Annotated[
        str | None,
        typer.Option(
            "--base-url", help="OpenAI-compatible endpoint (else ASSAY_BASE_URL / OPENAI_BASE_URL)."
        ),
    ] = None,
    concurrency: Annotated[
        int,
        typer.Option(
            "--concurrency",
            envvar="ASSAY_CALIBRATE_CONCURRENCY",
            help="Samples judged at once per judge model.",
        ),
    ] = 8,
    no_cache: Annotated[
        bool, typer.Option("--no-cache", help="Do not read or write the provider cache.")
    ] = False,
    verbose: Annotated[
        bool,
        typer.Option(
            "--verbose", "-v", help="Per-judge criterion tables and per-criterion intervals."
        ),
    ] = False,
) -> None:
    """Run judge model(s) over a human-labelled dataset and report their agreement with people."""
    from assay.calibration.workflow import calibrate as run_calibration
    from assay.dataset import load_dataset
    from assay.errors import UsageError
    from assay.outputs import load_outputs
    from assay.providers import settings as provider_settings

    if fmt not in ("text", "json"):
        raise UsageError(f"--format must be text or json; got {fmt!r}")
    if metric not in ("rubric", "llm-as-judge"):
        raise UsageError(f"--metric must be rubric or llm-as-judge; got {metric!r}")
    if concurrency < 1:
        raise UsageError(f"--concurrency must be at least 1; got {concurrency}")
    if bootstrap < 0:
        raise UsageError(f"--bootstrap must be >= 0; got {bootstrap}")
    _check_unit("--min-kappa", min_kappa, -1.0)
    _check_unit("--min-agreement", min_agreement, 0.0)
    loaded = load_dataset(dataset)
    cli = {"base_url": base_url, "cache_mode": "off" if no_cache else None}
    provider_settings.use(
        provider_settings.build(
            cli={k: v for k, v in cli.items() if v is not None}, dataset=loaded.providers
        )
    )
    saved = load_outputs(outputs) if outputs is not None else None
    result = run_calibration(
        loaded,
        metric=metric,
        judge_models=judge_model or (),
        outputs=saved,
        rubric=rubric,
        abstain=abstain,
        model_under_test=sut_model,
        cannot_assess_mode=mode,
        na_mode=na_mode or mode,
        bootstrap=bootstrap,
        seed=seed,
        source=str(dataset),
        keep_distribution=distribution,
    )
    run = result.judge_run
    if run is not None:
        cost = "unpriced" if run.cost_usd is None else f"${run.cost_usd:.4f}"
        typer.echo(
            f"assay: judged {run.n_samples} samples with {len(run.judge_models)} judge model(s): "
            f"{run.n_calls} calls ({run.n_cached} cached), "
            f"{run.prompt_tokens}+{run.completion_tokens} tokens, {cost}; {run.n_failed} failed",
            err=True,
        )
    _emit(
        result, fmt=fmt, out=out, verbose=verbose, min_kappa=min_kappa, min_agreement=min_agreement
    )
