"""Plain-text summary of a :class:`CalibrationResult`.

The header names the handling modes (the estimand), every aggregate carries its level
(micro = pooled decisions, macro = mean over criteria), and None prints as ``n/a``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

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


if TYPE_CHECKING:
    from assay.calibration.result import (
        Aggregate,
        AgreementBlock,
        Correlation,
        CriterionAgreement,
        ScoreAgreement,
    )


def fmt(value: float | None, spec: str = ".3f", width: int = 0) -> str:
    """Format a number or ``n/a``, right-aligned to ``width``."""
    text = "n/a" if value is None else format(value, spec)
    return text.rjust(width) if width else text


def pair(p: tuple[float, float] | None, spec: str) -> str:
    """An interval as ``[low, high]`` or ``n/a``."""
    return "n/a" if p is None else f"[{format(p[0], spec)}, {format(p[1], spec)}]"


def corr(c: Correlation) -> str:
    """A correlation with its CI, interpretation, p-value and n."""
    p = f", p={c.p_value:.3g}" if c.p_value is not None else ""
    ci = f" 95% CI {pair(c.ci, '.3f')}" if c.ci is not None else ""
    return f"{fmt(c.coefficient, '.4f')}{ci} ({c.interpretation}{p}, n={c.n})"


def block_lines(block: AgreementBlock, *, header: str) -> list[str]:
    """The aggregates, coverage, abstention agreement and score agreement of ``block``."""
    lines = [header, *_aggregate_lines(block), *_binary_micro_lines(block.aggregate)]
    cov = block.aggregate.coverage
    lines.append(
        f"  Coverage: {fmt(cov.coverage, '.1%')} of {cov.n_total} labelled pairs "
        f"(judge abstained {cov.n_judge_abstain}, human abstained {cov.n_human_abstain}, "
        f"errored {cov.n_errored}, failed {cov.n_failed}, missing {cov.n_missing})"
    )
    for ab in block.abstention:
        name = "CANNOT_ASSESS" if ab.kind == "cannot_assess" else "NA"
        lines.append(
            f"  {name} agreement ({ab.n_pairs} pairs, any mode): human {ab.human_abstain}, "
            f"judge {ab.judge_abstain}, both {ab.both_abstain}, judge only {ab.judge_only}, "
            f"human only {ab.human_only}; kappa {fmt(ab.kappa)} ({ab.kappa_interpretation})"
        )
    lines.extend(_score_lines(block.scores))
    if block.length_bias is not None:
        lines.append(f"    Length vs score Spearman {corr(block.length_bias)}")
    return lines


def _aggregate_lines(block: AgreementBlock) -> list[str]:
    """Accuracy and kappa, micro and macro."""
    agg = block.aggregate
    lines = [
        f"  Accuracy (micro, all criteria pooled): {fmt(agg.accuracy_micro, '.1%')}",
        f"  Accuracy (macro, mean over criteria):  {fmt(agg.accuracy_macro, '.1%')}",
        f"  Mean Cohen's kappa (macro, unweighted, {agg.n_kappa_criteria} criteria): "
        f"{fmt(agg.mean_kappa_macro)}",
    ]
    if agg.mean_weighted_kappa_macro is not None or any(
        c.kind == "ordinal" for c in block.criteria
    ):
        lines.append(
            f"  Mean weighted kappa (macro, ordinal criteria only): quadratic (headline) "
            f"{fmt(agg.mean_weighted_kappa_macro)}, linear "
            f"{fmt(agg.mean_weighted_kappa_linear_macro)}"
        )
    lines.append(
        f"  Cohen's kappa (micro, all criteria pooled): {fmt(agg.kappa_micro)}  "
        f"Macro F1 (mean over criteria): {fmt(agg.macro_f1_macro)}"
    )
    return lines


def _binary_micro_lines(agg: Aggregate) -> list[str]:
    """The binary criteria pooled, when there are any."""
    bm = agg.binary_micro
    if bm is None:
        return []
    return [
        f"  Binary criteria pooled (micro, {bm.n_criteria} criteria, {bm.n_samples} pairs):",
        f"    Accuracy {fmt(bm.accuracy, '.1%')}  Precision {fmt(bm.precision, '.2f')}  "
        f"Recall {fmt(bm.recall, '.2f')}  F1 {fmt(bm.f1, '.2f')}",
        f"    Kappa {fmt(bm.kappa)} ({bm.kappa_interpretation})  Phi {fmt(bm.phi)}",
        "    (phi = MCC = Pearson on binary flags; the kappa - phi gap is the judge's "
        "positive-rate drift, not extra evidence)",
    ]


def _score_lines(s: ScoreAgreement) -> list[str]:
    """Errors, correlations, bias and ICC of the per-item weighted scores."""
    b = s.bias
    sig = "n/a" if b.is_significant is None else ("yes" if b.is_significant else "no")
    ci = (
        f" [{b.ci_low:+.4f}, {b.ci_high:+.4f}]"
        if b.ci_low is not None and b.ci_high is not None
        else ""
    )
    return [
        f"  Scores (per-item weighted score, n={s.n}):",
        f"    RMSE {fmt(s.rmse, '.4f')}  MAE {fmt(s.mae, '.4f')}",
        f"    Spearman {corr(s.spearman)}",
        f"    Kendall  {corr(s.kendall)}",
        f"    Pearson  {corr(s.pearson)}",
        f"    Bias {fmt(b.mean_bias, '+.4f')}{ci} ({b.direction or 'n/a'}), "
        f"p={fmt(b.p_value, '.3g')}, significant: {sig}, d_z={fmt(b.effect_size, '.2f')} "
        f"({b.effect_interpretation})",
        f"    ICC(2,1) absolute agreement {fmt(s.icc_absolute)} ({s.icc_interpretation}), "
        f"ICC(3,1) consistency {fmt(s.icc_consistency)}",
    ]


def criteria_lines(block: AgreementBlock, *, verbose: bool = False) -> list[str]:
    """One table per criterion kind; ``verbose`` adds the per-option scores."""
    lines = [
        *_binary_table([c for c in block.criteria if c.kind == "binary"]),
        *_ordinal_table([c for c in block.criteria if c.kind == "ordinal"]),
        *_nominal_table([c for c in block.criteria if c.kind == "nominal"]),
    ]
    for c in block.criteria:
        if verbose and c.per_option:
            lines.append(f"  {c.name}: per option (one-vs-rest)")
            lines.extend(
                f"    {o.label[:20]:<21}P {fmt(o.precision, '.2f')}  R {fmt(o.recall, '.2f')}  "
                f"F1 {fmt(o.f1, '.2f')}  human {o.support_human}  judge {o.support_judge}"
                for o in c.per_option
            )
    return lines


def _degenerate(c: CriterionAgreement) -> str:
    if not c.has_data:
        return "  [no data]"
    return "  [degenerate: single class, kappa undefined]" if c.is_degenerate else ""


def _binary_table(rows: list[CriterionAgreement]) -> list[str]:
    if not rows:
        return []
    return [
        "Binary criteria:",
        f"  {'Criterion':<22}{'n':>6}{'Acc':>8}{'Prec':>7}{'Rec':>7}{'F1':>7}{'Kappa':>8}"
        f"{'Phi':>8}{'FPR':>7}{'FNR':>7}",
        *(
            f"  {c.name[:21]:<22}{c.n_samples:>6}{fmt(c.accuracy, '.1%', 8)}"
            f"{fmt(c.precision, '.2f', 7)}{fmt(c.recall, '.2f', 7)}{fmt(c.f1, '.2f', 7)}"
            f"{fmt(c.kappa, '.3f', 8)}{fmt(c.phi, '.3f', 8)}{fmt(c.fpr, '.2f', 7)}"
            f"{fmt(c.fnr, '.2f', 7)}{_degenerate(c)}"
            for c in rows
        ),
    ]


def _ordinal_table(rows: list[CriterionAgreement]) -> list[str]:
    if not rows:
        return []
    return [
        "Ordinal criteria:",
        f"  {'Criterion':<22}{'n':>6}{'Exact':>8}{'Adj':>8}{'Kappa':>8}{'QWK':>8}"
        f"{'LWK':>8}{'MacroF1':>9}{'Spearman':>10}{'RMSE':>8}",
        *(
            f"  {c.name[:21]:<22}{c.n_samples:>6}{fmt(c.accuracy, '.1%', 8)}"
            f"{fmt(c.adjacent_accuracy, '.1%', 8)}{fmt(c.kappa, '.3f', 8)}"
            f"{fmt(c.weighted_kappa, '.3f', 8)}{fmt(c.weighted_kappa_linear, '.3f', 8)}"
            f"{fmt(c.macro_f1, '.3f', 9)}"
            f"{fmt(c.spearman.coefficient if c.spearman else None, '.3f', 10)}"
            f"{fmt(c.rmse, '.3f', 8)}{_degenerate(c)}"
            for c in rows
        ),
        "  (QWK = quadratic-weighted kappa, the headline; LWK = linear-weighted)",
    ]


def _nominal_table(rows: list[CriterionAgreement]) -> list[str]:
    if not rows:
        return []
    return [
        "Nominal criteria:",
        f"  {'Criterion':<22}{'n':>6}{'Acc':>8}{'Kappa':>8}{'MacroF1':>9}  Interpretation",
        *(
            f"  {c.name[:21]:<22}{c.n_samples:>6}{fmt(c.accuracy, '.1%', 8)}"
            f"{fmt(c.kappa, '.3f', 8)}{fmt(c.macro_f1, '.3f', 9)}  "
            f"{c.kappa_interpretation}{_degenerate(c)}"
            for c in rows
        ),
    ]
