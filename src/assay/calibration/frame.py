"""``CalibrationResult.to_dataframe()``: one flat pandas frame (pandas imported lazily).

Rows: per rater (``overall`` then each judge) one ``aggregate`` row and one ``criterion`` row
per criterion, then one ``inter_judge`` row per criterion for ensembles. Column names carry
the aggregation level (``accuracy_micro`` / ``accuracy_macro`` / ``mean_kappa_macro``); the
handling modes are repeated on every row so a filtered frame stays unambiguous.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from assay.errors import UsageError

if TYPE_CHECKING:
    import pandas

    from assay.calibration.result import (
        AgreementBlock,
        CalibrationResult,
        Coverage,
        CriterionAgreement,
    )

COLUMNS = (
    "level",
    "rater",
    "name",
    "kind",
    "cannot_assess_mode",
    "na_mode",
    "n_samples",
    "accuracy_micro",
    "accuracy_macro",
    "mean_kappa_macro",
    "mean_weighted_kappa_macro",
    "mean_weighted_kappa_linear_macro",
    "kappa_micro",
    "macro_f1_macro",
    "binary_precision_micro",
    "binary_recall_micro",
    "binary_f1_micro",
    "binary_kappa_micro",
    "binary_phi_micro",
    "accuracy",
    "kappa",
    "weighted_kappa",
    "weighted_kappa_linear",
    "macro_precision",
    "macro_recall",
    "macro_f1",
    "adjacent_accuracy",
    "precision",
    "recall",
    "f1",
    "phi",
    "fpr",
    "fnr",
    "rmse",
    "mae",
    "spearman",
    "kendall",
    "pearson",
    "bias",
    "icc_absolute",
    "is_degenerate",
    "coverage",
    "judge_abstain_rate",
    "human_abstain_rate",
    "error_rate",
    "n_errored",
    "n_failed",
    "krippendorff_alpha",
    "fleiss_kappa",
    "mean_pairwise_kappa",
)


def _rows(block: AgreementBlock, base: dict[str, Any]) -> list[dict[str, Any]]:
    """The block's aggregate row, then one row per criterion."""
    head = {**base, "rater": block.rater}
    return [_aggregate_row(block, head), *(_criterion_row(c, head) for c in block.criteria)]


def _coverage(cov: Coverage) -> dict[str, Any]:
    """The coverage columns of a row."""
    return {
        "coverage": cov.coverage,
        "judge_abstain_rate": cov.judge_abstain_rate,
        "human_abstain_rate": cov.human_abstain_rate,
        "error_rate": cov.error_rate,
        "n_errored": cov.n_errored,
        "n_failed": cov.n_failed,
    }


def _aggregate_row(block: AgreementBlock, head: dict[str, Any]) -> dict[str, Any]:
    """Micro and macro aggregates and the score agreement of one rater."""
    agg = block.aggregate
    bm = agg.binary_micro
    s = block.scores
    return {
        **head,
        "level": "aggregate",
        "name": "overall",
        "kind": "all",
        "n_samples": agg.n_samples,
        "accuracy_micro": agg.accuracy_micro,
        "accuracy_macro": agg.accuracy_macro,
        "mean_kappa_macro": agg.mean_kappa_macro,
        "mean_weighted_kappa_macro": agg.mean_weighted_kappa_macro,
        "mean_weighted_kappa_linear_macro": agg.mean_weighted_kappa_linear_macro,
        "kappa_micro": agg.kappa_micro,
        "macro_f1_macro": agg.macro_f1_macro,
        "binary_precision_micro": bm.precision if bm else None,
        "binary_recall_micro": bm.recall if bm else None,
        "binary_f1_micro": bm.f1 if bm else None,
        "binary_kappa_micro": bm.kappa if bm else None,
        "binary_phi_micro": bm.phi if bm else None,
        "rmse": s.rmse,
        "mae": s.mae,
        "spearman": s.spearman.coefficient,
        "kendall": s.kendall.coefficient,
        "pearson": s.pearson.coefficient,
        "bias": s.bias.mean_bias,
        "icc_absolute": s.icc_absolute,
        **_coverage(agg.coverage),
    }


def _criterion_row(c: CriterionAgreement, head: dict[str, Any]) -> dict[str, Any]:
    """One criterion's statistics for one rater."""
    return {
        **head,
        "level": "criterion",
        "name": c.name,
        "kind": c.kind,
        "n_samples": c.n_samples,
        "accuracy": c.accuracy,
        "kappa": c.kappa,
        "weighted_kappa": c.weighted_kappa,
        "weighted_kappa_linear": c.weighted_kappa_linear,
        "macro_precision": c.macro_precision,
        "macro_recall": c.macro_recall,
        "macro_f1": c.macro_f1,
        "adjacent_accuracy": c.adjacent_accuracy,
        "precision": c.precision,
        "recall": c.recall,
        "f1": c.f1,
        "phi": c.phi,
        "fpr": c.fpr,
        "fnr": c.fnr,
        "rmse": c.rmse,
        "mae": c.mae,
        "spearman": c.spearman.coefficient if c.spearman else None,
        "kendall": c.kendall.coefficient if c.kendall else None,
        "pearson": c.pearson.coefficient if c.pearson else None,
        "is_degenerate": c.is_degenerate,
        **_coverage(c.coverage),
    }


def to_dataframe(result: CalibrationResult) -> pandas.DataFrame:
    """Flatten ``result``; raises UsageError when pandas is not installed."""
    try:
        import pandas as pd
    except ImportError:
        raise UsageError("to_dataframe() needs pandas: pip install 'assay[pandas]'") from None
    base = {"cannot_assess_mode": result.cannot_assess_mode, "na_mode": result.na_mode}
    rows: list[dict[str, Any]] = [] if result.overall is None else _rows(result.overall, base)
    for block in result.per_judge:
        rows.extend(_rows(block, base))
    for ij in result.inter_judge or []:
        rows.append(
            {
                **base,
                "level": "inter_judge",
                "rater": "judges",
                "name": ij.name,
                "kind": ij.kind,
                "n_samples": ij.n_items,
                "krippendorff_alpha": ij.krippendorff_alpha,
                "fleiss_kappa": ij.fleiss_kappa,
                "mean_pairwise_kappa": ij.mean_pairwise_kappa,
            }
        )
    frame = pd.DataFrame(
        [{col: row.get(col) for col in COLUMNS} for row in rows], columns=list(COLUMNS)
    )
    return frame
