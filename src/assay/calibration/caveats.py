"""The warnings a calibration result carries: what was left out, what the numbers cannot say,
and signs of length bias. Order matters: it is the order the summary prints them in."""

from __future__ import annotations

import numpy as np

from assay.calibration.model import LabelSet, Mode
from assay.calibration.result import AgreementBlock

LENGTH_BIAS_RHO = 0.3


def result_warnings(
    labels: LabelSet,
    overall: AgreementBlock,
    per_judge: list[AgreementBlock],
    human_scores: np.ndarray,
    ca: Mode,
) -> list[str]:
    """Every warning about ``overall`` and ``per_judge`` computed from ``labels``."""
    return [
        *_exclusion_warnings(labels, overall, per_judge),
        *_criteria_warnings(overall),
        *_score_warnings(overall, human_scores),
        *_coverage_warnings(overall, ca),
        *_length_bias_warnings(overall),
    ]


def _exclusion_warnings(
    labels: LabelSet, overall: AgreementBlock, per_judge: list[AgreementBlock]
) -> list[str]:
    """Errored items, failed judgments and pairs a judge did not rate."""
    out: list[str] = []
    errored_items = int(np.sum(labels.item_errored & np.any(labels.human >= 0, axis=0)))
    if errored_items:
        out.append(
            f"{errored_items} item(s) with human labels were excluded because grading errored; "
            "their verdicts and scores do not contribute"
        )
    n_failed = overall.aggregate.coverage.n_failed
    if n_failed:
        out.append(
            f"{n_failed} criterion judgment(s) on graded items failed and were left out of "
            "the criterion-level statistics"
        )
    for block in per_judge:
        missing = block.aggregate.coverage.n_missing
        if missing and len(per_judge) > 1:
            out.append(f"judge {block.rater!r} did not rate {missing} labelled pair(s)")
    return out


def _criteria_warnings(overall: AgreementBlock) -> list[str]:
    """Criteria without a usable pair or with single-class data."""
    out: list[str] = []
    no_data = [c.name for c in overall.criteria if not c.has_data]
    if no_data:
        out.append(
            "No usable pair (every item abstained, errored or was unlabelled) for criteria: "
            + ", ".join(no_data)
        )
    degenerate = [c.name for c in overall.criteria if c.is_degenerate]
    if degenerate:
        out.append(
            "Degenerate (single-class) data prevented an agreement estimate for criteria: "
            + ", ".join(degenerate)
        )
    return out


def _score_warnings(overall: AgreementBlock, human_scores: np.ndarray) -> list[str]:
    """Too few scored items, or a collapsed human score range, for correlations to inform."""
    out: list[str] = []
    if 0 < overall.scores.n < 3:
        out.append(
            f"only {overall.scores.n} scored item(s): correlations need at least 3 and are n/a"
        )
    distinct = np.unique(human_scores[~np.isnan(human_scores)])
    if overall.scores.n >= 3 and len(distinct) <= 2:
        out.append(
            "Human scores take <=2 distinct values; score-level correlations "
            "(Spearman/Kendall/Pearson) are uninformative on a collapsed score range"
        )
    return out


def _coverage_warnings(overall: AgreementBlock, ca: Mode) -> list[str]:
    """How a mixed rubric is pooled, and low coverage after exclusion."""
    out: list[str] = []
    kinds = {c.kind for c in overall.criteria}
    if len(kinds) > 1:
        out.append(
            "Mixed rubric (" + ", ".join(sorted(kinds)) + "): accuracy_micro pools every "
            "criterion's exact agreement; mean_kappa_macro averages unweighted Cohen's kappa of "
            "every criterion; quadratic-weighted kappa is averaged separately over ordinal criteria"
        )
    cov = overall.aggregate.coverage
    if ca == "exclude" and cov.n_total and cov.coverage is not None and cov.coverage < 0.8:
        out.append(
            f"coverage is {cov.coverage:.1%}: agreement describes only the pairs that survived "
            "exclusion"
        )
    return out


def _length_bias_warnings(overall: AgreementBlock) -> list[str]:
    """A significant Spearman between answer length and the judge score."""
    lb = overall.length_bias
    if (
        lb is not None
        and lb.coefficient is not None
        and abs(lb.coefficient) >= LENGTH_BIAS_RHO
        and lb.p_value is not None
        and lb.p_value < 0.05
    ):
        return [
            f"possible length bias: Spearman between answer length and the judge score is "
            f"{lb.coefficient:+.2f} (p={lb.p_value:.3g})"
        ]
    return []
