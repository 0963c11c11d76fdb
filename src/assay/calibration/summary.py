"""Plain-text summary of a :class:`CalibrationResult`.

The header names the handling modes (the estimand), every aggregate carries its level
(micro = pooled decisions, macro = mean over criteria), and None prints as ``n/a``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from assay.calibration.block_text import block_lines, criteria_lines, fmt, pair
from assay.providers.pricing import format_usd

if TYPE_CHECKING:
    from assay.calibration.result import (
        AgreementBlock,
        BootstrapResult,
        CalibrationResult,
        InterJudge,
        Interval,
        JudgeComparison,
    )

__all__ = ["RULE", "fmt", "render_summary"]

RULE = "=" * 72


def render_summary(result: CalibrationResult, *, verbose: bool = False) -> str:
    """The text report of ``assay agreement``."""
    lines = _header_lines(result)
    if result.warnings:
        lines.append("")
        lines.append(f"Warnings ({len(result.warnings)}):")
        lines.extend(f"  - {w}" for w in result.warnings)
    if result.overall is not None:
        lines.append("")
        lines.extend(
            block_lines(result.overall, header=f"Overall ({result.overall.rater} vs human):")
        )
        lines.append("")
        lines.extend(criteria_lines(result.overall, verbose=verbose))
    if result.bootstrap is not None:
        lines.append("")
        lines.extend(_bootstrap_lines(result.bootstrap, verbose=verbose))
    if len(result.per_judge) > 1 or verbose:
        lines.append("")
        lines.extend(_per_judge_lines(result.per_judge, verbose=verbose))
    if result.judge_comparisons:
        lines.append("")
        lines.extend(_comparison_lines(result.judge_comparisons))
    if result.inter_judge:
        lines.append("")
        lines.extend(_inter_judge_lines(result.inter_judge))
        lines.append(
            f"  Mean Krippendorff's alpha (macro over criteria): "
            f"{fmt(result.mean_krippendorff_alpha)}"
        )
    lines.append(RULE)
    return "\n".join(lines)


def _header_lines(result: CalibrationResult) -> list[str]:
    """Title, source, counts, handling modes, judges and what judging cost."""
    title = (
        "JUDGE CALIBRATION: AGREEMENT WITH HUMAN LABELS"
        if result.overall is not None
        else "INTER-RATER AGREEMENT (NO HUMAN LABELS)"
    )
    lines = [RULE, title, RULE]
    lines.append(f"Source: {result.source}")
    lines.append(
        f"Items: {result.n_items} ({result.n_items_used} used, {result.n_errored_items} errored), "
        f"criteria: {result.n_criteria} ({result.n_binary} binary, {result.n_ordinal} ordinal, "
        f"{result.n_nominal} nominal)"
    )
    lines.append(f"Handling modes: CANNOT_ASSESS={result.cannot_assess_mode}, NA={result.na_mode}")
    lines.append(f"Judges: {', '.join(result.judges)}; overall rater: {result.consensus}")
    run = result.judge_run
    if run is not None:
        cost = "unpriced" if run.cost_usd is None else format_usd(run.cost_usd)
        lines.append(
            f"Judged by assay calibrate: metric {run.metric}, {run.n_samples} samples, "
            f"{run.n_calls} calls ({run.n_cached} cached), {run.prompt_tokens}+"
            f"{run.completion_tokens} tokens, {cost}, {run.n_failed} failed scorings"
            + (f"; model under test {run.model_under_test}" if run.model_under_test else "")
        )
    if result.score_abstain_policy != "skip":
        lines.append(f"Score abstention policy: {result.score_abstain_policy}")
    return lines


def _interval(name: str, iv: Interval, spec: str) -> str:
    return (
        f"  {name:<28}{fmt(iv.estimate, spec):>9}  percentile {pair(iv.percentile, spec):<20} "
        f"BCa {pair(iv.bca, spec)}" + (f"  ({iv.n_defined} defined)" if iv.n_defined else "")
    )


def _bootstrap_lines(b: BootstrapResult, *, verbose: bool) -> list[str]:
    """The overall intervals; ``verbose`` adds each criterion's."""
    lines = [
        f"Bootstrap ({b.n_resamples} item-level resamples, seed {b.seed}, "
        f"{b.confidence_level:.0%} intervals):",
        _interval("Accuracy (micro)", b.accuracy_micro, ".3f"),
        _interval("Mean kappa (macro)", b.mean_kappa_macro, ".3f"),
        _interval("Score RMSE", b.rmse, ".4f"),
    ]
    if verbose:
        for ci in b.criteria:
            lines.append(_interval(f"{ci.name[:18]} accuracy", ci.accuracy, ".3f"))
            lines.append(_interval(f"{ci.name[:18]} kappa", ci.kappa, ".3f"))
            if ci.weighted_kappa is not None:
                lines.append(_interval(f"{ci.name[:18]} QWK", ci.weighted_kappa, ".3f"))
    return lines


def _per_judge_lines(blocks: list[AgreementBlock], *, verbose: bool) -> list[str]:
    """One line per judge (with its percentile intervals); ``verbose`` adds its criteria."""
    lines = ["Per-judge (each judge vs human):"]
    for block in blocks:
        agg = block.aggregate
        lines.append(
            f"  {block.rater:<24} Acc (micro) {fmt(agg.accuracy_micro, '.1%')}  "
            f"Mean kappa (macro) {fmt(agg.mean_kappa_macro)}  "
            f"Phi (binary micro) {fmt(agg.binary_micro.phi if agg.binary_micro else None)}  "
            f"RMSE {fmt(block.scores.rmse, '.4f')}"
        )
        if block.bootstrap is not None:
            kb = block.bootstrap.mean_kappa_macro
            ab = block.bootstrap.accuracy_micro
            lines.append(
                f"    {'':<22}percentile: accuracy {pair(ab.percentile, '.3f')}, "
                f"mean kappa {pair(kb.percentile, '.3f')}"
            )
        if verbose:
            lines.extend("    " + line for line in criteria_lines(block, verbose=True))
    return lines


def _comparison_lines(comparisons: list[JudgeComparison]) -> list[str]:
    """The paired judge-vs-judge differences and whether their interval excludes zero."""
    lines = ["Judge comparisons (paired bootstrap, judge A - judge B, same resamples):"]
    for cmp in comparisons:
        iv = cmp.difference
        verdict = (
            ""
            if cmp.excludes_zero is None
            else ("  differs" if cmp.excludes_zero else "  no clear difference")
        )
        lines.append(
            f"  {cmp.judge_a} - {cmp.judge_b}: {cmp.statistic} {fmt(iv.estimate, '+.3f')} "
            f"percentile {pair(iv.percentile, '+.3f')} BCa {pair(iv.bca, '+.3f')}{verdict}"
        )
    return lines


def _inter_judge_lines(rows: list[InterJudge]) -> list[str]:
    """Krippendorff's alpha at every level that applies; Fleiss only on ordinal criteria.

    On binary and nominal criteria Fleiss' kappa is nominal alpha up to a finite-sample term,
    so the text shows alpha alone there (the JSON keeps both).
    """
    lines = [
        "Inter-rater agreement (raters vs each other, no human labels):",
        f"  {'Criterion':<22}{'Items':>6}{'α nominal':>10}{'α ordinal':>10}{'α interval':>11}"
        f"{'Fleiss':>8}{'Pairwise κ':>11}",
    ]
    for ij in rows:
        ordinal = ij.kind == "ordinal"
        nominal = ij.krippendorff_alpha_nominal if ordinal else ij.krippendorff_alpha
        fleiss = fmt(ij.fleiss_kappa, ".3f", 8) if ordinal else f"{'':>8}"
        lines.append(
            f"  {ij.name[:21]:<22}{ij.n_items:>6}{fmt(nominal, '.3f', 10)}"
            f"{fmt(ij.krippendorff_alpha if ordinal else None, '.3f', 10)}"
            f"{fmt(ij.krippendorff_alpha_interval, '.3f', 11)}{fleiss}"
            f"{fmt(ij.mean_pairwise_kappa, '.3f', 11)}  {ij.alpha_interpretation}"
        )
    lines.append(
        "  (ordinal criteria: the interpretation is of ordinal alpha; Fleiss' kappa is nominal "
        "and uses only items every rater rated)"
    )
    return lines
