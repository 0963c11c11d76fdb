"""``assay agreement LABELS_FILE`` (agreement from precomputed labels) and ``assay calibrate
DATASET`` (run judge models over a human-labelled dataset first), both with a gate.

Exit codes: 0 computed (and the gate passed), 1 a ``--min-*`` threshold was missed or the
gated statistic is undefined (an n/a kappa cannot pass a gate), 2 a usage or input error.
The report goes to stdout or ``--out``; the gate verdict goes to stderr.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from assay.cli import calibration_options as opt
from assay.providers.pricing import format_usd

if TYPE_CHECKING:
    from assay.calibration.result import CalibrationResult
    from assay.providers.settings import ProviderSettings


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


def agreement(
    labels_file: opt.LabelsArg,
    fmt: opt.FmtOption = "text",
    out: opt.OutOption = None,
    mode: opt.ModeOption = "exclude",
    na_mode: opt.NaModeOption = None,
    bootstrap: opt.BootstrapOption = 0,
    distribution: opt.DistributionOption = False,
    seed: opt.SeedOption = None,
    confidence: opt.ConfidenceOption = 0.95,
    min_kappa: opt.MinKappaOption = None,
    min_agreement: opt.MinAgreementOption = None,
    criteria: opt.CriteriaOption = None,
    verbose: opt.VerboseOption = False,
) -> None:
    """Agreement between judges and human labels: kappa, alpha, correlations, bias, intervals."""
    from assay.calibration.compute import compute_agreement
    from assay.calibration.loaders import load_labels

    _check_common(fmt=fmt, bootstrap=bootstrap, min_kappa=min_kappa, min_agreement=min_agreement)
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


def _check_common(
    *, fmt: str, bootstrap: int, min_kappa: float | None, min_agreement: float | None
) -> None:
    """UsageError on a bad format, a bootstrap count or a gate threshold out of range."""
    from assay.errors import UsageError

    if fmt not in ("text", "json", "autorubric"):
        raise UsageError(f"--format must be text, json or autorubric; got {fmt!r}")
    if not 0 <= bootstrap <= opt.MAX_BOOTSTRAP:
        raise UsageError(f"--bootstrap must be from 0 to {opt.MAX_BOOTSTRAP}; got {bootstrap}")
    _check_unit("--min-kappa", min_kappa, -1.0)
    _check_unit("--min-agreement", min_agreement, 0.0)


def _rendered(result: CalibrationResult, fmt: str, verbose: bool) -> str:
    """The report in ``fmt``: text, assay's JSON, or JSON under autorubric's field names."""
    if fmt == "autorubric":
        import json

        from assay.calibration.autorubric_fields import to_autorubric

        return json.dumps(to_autorubric(result), indent=2, allow_nan=False) + "\n"
    if fmt == "json":
        return result.to_json() + "\n"
    return result.summary(verbose=verbose) + "\n"


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
    from assay.data.fileio import write_atomic

    text = _rendered(result, fmt, verbose)
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
    dataset: opt.DatasetArg,
    metric: opt.MetricOption = "rubric",
    judge_model: opt.JudgeModelOption = None,
    outputs: opt.OutputsOption = None,
    rubric: opt.RubricOption = None,
    abstain: opt.AbstainOption = "skip",
    sut_model: opt.SutModelOption = None,
    fmt: opt.FmtOption = "text",
    out: opt.OutOption = None,
    mode: opt.ModeOption = "exclude",
    na_mode: opt.NaModeOption = None,
    bootstrap: opt.BootstrapOption = 0,
    distribution: opt.DistributionOption = False,
    seed: opt.SeedOption = None,
    min_kappa: opt.MinKappaOption = None,
    min_agreement: opt.MinAgreementOption = None,
    base_url: opt.BaseUrlOption = None,
    concurrency: opt.ConcurrencyOption = 8,
    no_cache: opt.NoCacheOption = False,
    verbose: opt.VerboseOption = False,
) -> None:
    """Run judge model(s) over a human-labelled dataset and report their agreement with people."""
    from assay.data.loading import load_dataset, load_outputs
    from assay.engine.calibration_run import calibrate as run_calibration
    from assay.errors import UsageError

    if fmt not in ("text", "json", "autorubric"):
        raise UsageError(f"--format must be text, json or autorubric; got {fmt!r}")
    if metric not in ("rubric", "llm-as-judge"):
        raise UsageError(f"--metric must be rubric or llm-as-judge; got {metric!r}")
    if concurrency < 1:
        raise UsageError(f"--concurrency must be at least 1; got {concurrency}")
    _check_common(fmt=fmt, bootstrap=bootstrap, min_kappa=min_kappa, min_agreement=min_agreement)
    loaded = load_dataset(dataset)
    settings = _providers(loaded.providers, base_url=base_url, no_cache=no_cache)
    result = run_calibration(
        loaded,
        settings=settings,
        metric=metric,
        judge_models=judge_model or (),
        outputs=load_outputs(outputs) if outputs is not None else None,
        rubric=rubric,
        abstain=abstain,
        model_under_test=sut_model,
        cannot_assess_mode=mode,
        na_mode=na_mode or mode,
        bootstrap=bootstrap,
        seed=seed,
        source=str(dataset),
        keep_distribution=distribution,
        concurrency=concurrency,
    )
    _echo_run(result)
    _emit(
        result, fmt=fmt, out=out, verbose=verbose, min_kappa=min_kappa, min_agreement=min_agreement
    )


def _providers(
    dataset_providers: dict[str, Any] | None, *, base_url: str | None, no_cache: bool
) -> ProviderSettings:
    """Provider settings from the command line over the dataset's ``providers:``."""
    from assay.providers.settings import build  # pydantic: not for `assay calibrate --help`

    cli = {"base_url": base_url, "cache_mode": "off" if no_cache else None}
    return build(cli={k: v for k, v in cli.items() if v is not None}, dataset=dataset_providers)


def _echo_run(result: CalibrationResult) -> None:
    """One stderr line on what judging cost."""
    run = result.judge_run
    if run is not None:
        cost = "unpriced" if run.cost_usd is None else format_usd(run.cost_usd)
        typer.echo(
            f"assay: judged {run.n_samples} samples with {len(run.judge_models)} judge model(s): "
            f"{run.n_calls} calls ({run.n_cached} cached), "
            f"{run.prompt_tokens}+{run.completion_tokens} tokens, {cost}; {run.n_failed} failed",
            err=True,
        )
