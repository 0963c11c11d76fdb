"""An agreement result under autorubric's field names (``assay agreement --format autorubric``).

autorubric's ``MetricsResult.to_file`` writes ``criterion_accuracy``, ``mean_kappa``,
``per_criterion`` ... where assay writes ``accuracy_micro``, ``mean_kappa_macro``,
``criteria``. This module renames, and where autorubric defines a field differently it
computes autorubric's definition from assay's per-criterion values, so a dashboard or script
built on autorubric's output reads the same numbers:

* ``criterion_accuracy`` / precision / recall / F1 / ``micro_kappa`` / ``criterion_phi`` pool
  the binary criteria when the rubric has any (autorubric's rule), else every criterion;
* ``mean_kappa`` averages Cohen's kappa of binary and nominal criteria with the
  quadratic-weighted kappa of ordinal ones;
* ``bootstrap.kappa_ci`` is given only when that mean is assay's macro kappa (no ordinal
  criterion); otherwise it is None and a warning says why.

The document carries ``schema_version: assay.autorubric-metrics.v1`` (autorubric ignores it).
"""

from __future__ import annotations

from typing import Any, Final

from assay.calibration.result import (
    AgreementBlock,
    Bias,
    CalibrationResult,
    Correlation,
    Coverage,
    CriterionAgreement,
    InterJudge,
)

AUTORUBRIC_METRICS_SCHEMA: Final = "assay.autorubric-metrics.v1"


def to_autorubric(result: CalibrationResult) -> dict[str, Any]:
    """The result as autorubric's ``MetricsResult`` JSON (the overall rater vs the humans)."""
    block = result.overall
    warnings = list(result.warnings)
    document: dict[str, Any] = {
        "schema_version": AUTORUBRIC_METRICS_SCHEMA,
        **(_aggregate(block, result) if block is not None else {}),
        "cannot_assess_mode": result.cannot_assess_mode,
        "na_mode": result.na_mode,
        "mean_krippendorff_alpha": result.mean_krippendorff_alpha,
        "n_items": result.n_items_used,
        "n_criteria": result.n_criteria,
        "n_binary_criteria": result.n_binary,
        "n_ordinal_criteria": result.n_ordinal,
        "n_nominal_criteria": result.n_nominal,
        "bootstrap": _bootstrap(result, warnings),
        "per_judge": _per_judge(result),
        "warnings": warnings,
    }
    return document


def _aggregate(block: AgreementBlock, result: CalibrationResult) -> dict[str, Any]:
    """The top-level agreement and score fields of one rater's block."""
    agg = block.aggregate
    binary = agg.binary_micro
    inter = {j.name: j for j in result.inter_judge or []}
    exclude = result.cannot_assess_mode == "exclude" and result.na_mode == "exclude"
    return {
        "criterion_accuracy": binary.accuracy if binary is not None else agg.accuracy_micro,
        "criterion_precision": binary.precision if binary is not None else None,
        "criterion_recall": binary.recall if binary is not None else None,
        "criterion_f1": binary.f1 if binary is not None else None,
        "mean_kappa": mean_kappa(block.criteria),
        "macro_accuracy": agg.accuracy_macro,
        "micro_kappa": binary.kappa if binary is not None else None,
        "criterion_phi": binary.phi if binary is not None else None,
        "n_samples": agg.n_samples,
        "coverage_stats": _coverage(agg.coverage) if exclude else None,
        **_abstentions(block),
        "per_criterion": [
            _criterion(c, index, inter.get(c.name), exclude)
            for index, c in enumerate(block.criteria)
        ],
        **_scores(block),
    }


def mean_kappa(criteria: list[CriterionAgreement]) -> float | None:
    """autorubric's ``mean_kappa``: Cohen's kappa (binary, nominal) and quadratic-weighted
    kappa (ordinal) averaged over the criteria where it is defined; None when none is."""
    values = [c.weighted_kappa if c.kind == "ordinal" else c.kappa for c in criteria]
    defined = [v for v in values if v is not None]
    return sum(defined) / len(defined) if defined else None


def _criterion(
    c: CriterionAgreement, index: int, inter: InterJudge | None, exclude: bool
) -> dict[str, Any]:
    """One criterion under autorubric's per-criterion field names for its kind."""
    common: dict[str, Any] = {
        "name": c.name,
        "index": index,
        "criterion_type": c.kind,
        "n_samples": c.n_samples,
        "is_degenerate": c.is_degenerate,
        "krippendorff_alpha": inter.krippendorff_alpha if inter is not None else None,
        "fleiss_kappa": inter.fleiss_kappa if inter is not None else None,
        "coverage_stats": _coverage(c.coverage) if exclude else None,
    }
    if c.kind == "binary":
        return {**common, **_binary(c)}
    matrix = c.confusion_matrix
    fields: dict[str, Any] = {
        "exact_accuracy": c.accuracy,
        "kappa_interpretation": c.kappa_interpretation,
        "n_options": len(matrix.labels) if matrix is not None else None,
        "confusion_matrix": matrix.model_dump() if matrix is not None else None,
    }
    if c.kind == "nominal":
        return {**common, **fields, "kappa": c.kappa}
    return {
        **common,
        **fields,
        "weighted_kappa": c.weighted_kappa,
        "kappa_interpretation": c.weighted_kappa_interpretation or c.kappa_interpretation,
        "adjacent_accuracy": c.adjacent_accuracy,
        "spearman": _correlation(c.spearman),
        "kendall": _correlation(c.kendall),
        "rmse": c.rmse,
        "mae": c.mae,
    }


def _binary(c: CriterionAgreement) -> dict[str, Any]:
    """A binary criterion's fields; the confusion matrix as MET vs not MET ([[tp, fn], [fp,
    tn]]), as autorubric builds it from MET flags."""
    matrix = None
    if c.confusion_matrix is not None and c.confusion_matrix.labels[:1] == ["MET"]:
        rows = c.confusion_matrix.matrix
        tp = rows[0][0]
        fn = sum(rows[0][1:])
        fp = sum(row[0] for row in rows[1:])
        tn = sum(sum(row[1:]) for row in rows[1:])
        matrix = {"matrix": [[tp, fn], [fp, tn]], "labels": ["MET", "UNMET"]}
    return {
        "accuracy": c.accuracy,
        "precision": c.precision,
        "recall": c.recall,
        "f1": c.f1,
        "kappa": c.kappa,
        "kappa_interpretation": c.kappa_interpretation,
        "support_true": c.support_human,
        "support_pred": c.support_judge,
        "phi": c.phi,
        "fpr": c.fpr,
        "fnr": c.fnr,
        "confusion_matrix": matrix,
    }


def _scores(block: AgreementBlock) -> dict[str, Any]:
    """The score-level fields: RMSE, MAE, the three correlations and the bias test."""
    scores = block.scores
    return {
        "score_rmse": scores.rmse,
        "score_mae": scores.mae,
        "score_spearman": _correlation(scores.spearman),
        "score_kendall": _correlation(scores.kendall),
        "score_pearson": _correlation(scores.pearson),
        "bias": _bias(scores.bias),
    }


def _correlation(value: Correlation | None) -> dict[str, Any] | None:
    """autorubric's ``CorrelationResult``."""
    if value is None:
        return None
    ci = None
    if value.ci is not None:
        ci = {
            "lower": value.ci[0],
            "upper": value.ci[1],
            "confidence": 0.95,
            "method": value.ci_method or "fisher-z",
        }
    return {
        "coefficient": value.coefficient,
        "p_value": value.p_value,
        "ci": ci,
        "interpretation": value.interpretation,
        "n_samples": value.n,
        "method": value.method,
    }


def _bias(bias: Bias) -> dict[str, Any]:
    """autorubric's ``BiasResult`` (``is_significant`` False where assay's test is undefined)."""
    ci = None
    if bias.ci_low is not None and bias.ci_high is not None:
        ci = {
            "lower": bias.ci_low,
            "upper": bias.ci_high,
            "confidence": bias.confidence_level,
            "method": "t",
        }
    return {
        "mean_bias": bias.mean_bias,
        "std_bias": bias.std_bias,
        "is_significant": bool(bias.is_significant),
        "p_value": bias.p_value,
        "direction": bias.direction or "none",
        "effect_size": bias.effect_size,
        "ci": ci,
        "n_samples": bias.n,
    }


def _coverage(coverage: Coverage) -> dict[str, Any]:
    """autorubric's ``CoverageStats`` (human abstentions are its ground-truth abstentions)."""
    union = None if coverage.coverage is None else 1.0 - coverage.coverage
    return {
        "n_total": coverage.n_total,
        "n_covered": coverage.n_covered,
        "n_errored": coverage.n_errored + coverage.n_failed,
        "coverage": coverage.coverage,
        "judge_abstain_rate": coverage.judge_abstain_rate,
        "gt_abstain_rate": coverage.human_abstain_rate,
        "union_exclusion_rate": union,
        "error_rate": coverage.error_rate,
    }


def _abstentions(block: AgreementBlock) -> dict[str, Any]:
    """autorubric's ``na_stats`` and ``cannot_assess_stats`` (None where the rubric has no
    criterion of that kind)."""
    found: dict[str, Any] = {"na_stats": None, "cannot_assess_stats": None}
    for stats in block.abstention:
        prefix, key = ("na", "na_stats") if stats.kind == "na" else ("ca", "cannot_assess_stats")
        found[key] = {
            f"{prefix}_count_true": stats.human_abstain,
            f"{prefix}_count_pred": stats.judge_abstain,
            f"{prefix}_kappa": stats.kappa,
            f"{prefix}_kappa_interpretation": stats.kappa_interpretation,
            f"{prefix}_false_positive": stats.judge_only,
            f"{prefix}_false_negative": stats.human_only,
        }
    return found


def _bootstrap(result: CalibrationResult, warnings: list[str]) -> dict[str, Any] | None:
    """autorubric's ``BootstrapResults``: percentile intervals of accuracy, kappa and RMSE."""
    boot = result.bootstrap
    if boot is None:
        return None
    kappa_ci = boot.mean_kappa_macro.percentile
    if result.n_ordinal:
        kappa_ci = None
        warnings.append(
            "bootstrap.kappa_ci is None: with ordinal criteria autorubric's mean_kappa mixes "
            "weighted and unweighted kappa, and assay bootstraps the unweighted macro mean "
            "(see --format json)"
        )
    accuracy_ci = boot.accuracy_micro.percentile
    if result.n_binary and (result.n_ordinal or result.n_nominal):
        accuracy_ci = None
        warnings.append(
            "bootstrap.accuracy_ci is None: on a mixed rubric autorubric's criterion_accuracy "
            "pools the binary criteria only, and assay bootstraps accuracy over every "
            "criterion (see --format json)"
        )
    return {
        "accuracy_ci": accuracy_ci,
        "kappa_ci": kappa_ci,
        "rmse_ci": boot.rmse.percentile,
        "n_bootstrap": boot.n_resamples,
        "confidence_level": boot.confidence_level,
    }


def _per_judge(result: CalibrationResult) -> dict[str, Any] | None:
    """autorubric's ``per_judge`` (``JudgeMetrics``) for every judge of an ensemble."""
    if len(result.judges) < 2:
        return None
    judges: dict[str, Any] = {}
    for block in result.per_judge:
        agg = block.aggregate
        binary = agg.binary_micro
        scores = block.scores
        judges[block.rater] = {
            "criterion_accuracy": binary.accuracy if binary is not None else agg.accuracy_micro,
            "criterion_precision": binary.precision if binary is not None else None,
            "criterion_recall": binary.recall if binary is not None else None,
            "criterion_f1": binary.f1 if binary is not None else None,
            "mean_kappa": mean_kappa(block.criteria),
            "phi": binary.phi if binary is not None else None,
            "score_rmse": scores.rmse,
            "score_mae": scores.mae,
            "score_spearman": _correlation(scores.spearman),
            "score_kendall": _correlation(scores.kendall),
            "score_pearson": _correlation(scores.pearson),
            "bias": _bias(scores.bias),
        }
    return judges
