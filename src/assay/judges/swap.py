"""``assay judge swap``: the evidence a team needs before changing judge.

Both judges score the same calibration set (through ``assay calibrate``'s path, with a 1,000
resample item bootstrap); the lines say, per judge and criterion, its agreement with people
(kappa, or quadratic-weighted kappa for an ordinal criterion) with the interval and n, then
how far the two judges agree with each other (Krippendorff's alpha and Cohen's kappa per
criterion), then the paired difference of their mean kappa with its interval.
"""

from __future__ import annotations

from assay.calibration.result import AgreementBlock, BootstrapResult, CalibrationResult
from assay.report.judge_model import JudgeAgreement
from assay.report.judge_sections import agreement_text

__all__ = ["judge_agreements", "swap_lines"]


def judge_agreements(
    block: AgreementBlock, confidence: float, bootstrap: BootstrapResult | None = None
) -> list[JudgeAgreement]:
    """One rater's agreement with people per criterion, with its bootstrap interval (from
    ``bootstrap``, the result's own for its overall rater, else the block's)."""
    source = bootstrap if bootstrap is not None else block.bootstrap
    intervals = {c.name: c for c in (source.criteria if source else [])}
    out = []
    for c in block.criteria:
        ordinal = c.kind == "ordinal"
        found = intervals.get(c.name)
        chosen = (found.weighted_kappa if ordinal else found.kappa) if found else None
        bounds = chosen.percentile if chosen is not None else None
        out.append(
            JudgeAgreement(
                criterion=c.name,
                kind=c.kind,
                statistic="quadratic-weighted kappa" if ordinal else "kappa",
                value=c.weighted_kappa if ordinal else c.kappa,
                low=bounds[0] if bounds else None,
                high=bounds[1] if bounds else None,
                confidence=confidence,
                n=c.coverage.n_covered,
            )
        )
    return out


def _num(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def swap_lines(result: CalibrationResult, before: str, after: str) -> list[str]:
    """The swap's evidence as text lines."""
    confidence = result.bootstrap.confidence_level if result.bootstrap else 0.95
    lines = [f"judge swap on {result.source}: {before} -> {after}"]
    for block in result.per_judge:
        lines.append(f"{block.rater} with people:")
        lines += [f"  {agreement_text(a)}" for a in judge_agreements(block, confidence)]
    lines.append(f"{before} with {after}:")
    for item in result.inter_judge or []:
        lines.append(
            f"  {item.name}: Krippendorff's alpha ({item.alpha_level}) "
            f"{_num(item.krippendorff_alpha)}, unweighted Cohen's kappa "
            f"{_num(item.mean_pairwise_kappa)}, n={item.n_items}"
        )
    for diff in result.judge_comparisons or []:
        interval = diff.difference.percentile
        shown = "no interval" if interval is None else f"{_num(interval[0])} to {_num(interval[1])}"
        lines.append(
            f"{diff.judge_a} - {diff.judge_b} {diff.statistic}: "
            f"{_num(diff.difference.estimate)} ({confidence:.0%} CI {shown})"
        )
    return lines
