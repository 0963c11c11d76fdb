"""Plain-text summary of a :class:`CalibrationResult`.

The header names the handling modes (the estimand), every aggregate carries its level
(micro = pooled decisions, macro = mean over criteria), and None prints as ``n/a``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from assay.calibration.result import (
        AgreementBlock,
        CalibrationResult,
        Correlation,
        CriterionAgreement,
        InterJudge,
        Interval,
    )

RULE = "=" * 72


def fmt(value: float | None, spec: str = ".3f", width: int = 0) -> str:
    """Format a number or ``n/a``, right-aligned to ``width``."""
    text = "n/a" if value is None else format(value, spec)
    return text.rjust(width) if width else text


def _corr(c: Correlation) -> str:
    p = f", p={c.p_value:.3g}" if c.p_value is not None else ""
    ci = f" 95% CI {_pair(c.ci, '.3f')}" if c.ci is not None else ""
    return f"{fmt(c.coefficient, '.4f')}{ci} ({c.interpretation}{p}, n={c.n})"


def _block_lines(block: AgreementBlock, *, header: str) -> list[str]:
    agg = block.aggregate
    lines = [header]
    lines.append(f"  Accuracy (micro, all criteria pooled): {fmt(agg.accuracy_micro, '.1%')}")
    lines.append(f"  Accuracy (macro, mean over criteria):  {fmt(agg.accuracy_macro, '.1%')}")
    lines.append(
        f"  Mean Cohen's kappa (macro, unweighted, {agg.n_kappa_criteria} criteria): "
        f"{fmt(agg.mean_kappa_macro)}"
    )
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
    bm = agg.binary_micro
    if bm is not None:
        lines.append(
            f"  Binary criteria pooled (micro, {bm.n_criteria} criteria, {bm.n_samples} pairs):"
        )
        lines.append(
            f"    Accuracy {fmt(bm.accuracy, '.1%')}  Precision {fmt(bm.precision, '.2f')}  "
            f"Recall {fmt(bm.recall, '.2f')}  F1 {fmt(bm.f1, '.2f')}"
        )
        lines.append(f"    Kappa {fmt(bm.kappa)} ({bm.kappa_interpretation})  Phi {fmt(bm.phi)}")
        lines.append(
            "    (phi = MCC = Pearson on binary flags; the kappa - phi gap is the judge's "
            "positive-rate drift, not extra evidence)"
        )
    cov = agg.coverage
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
    s = block.scores
    lines.append(f"  Scores (per-item weighted score, n={s.n}):")
    lines.append(f"    RMSE {fmt(s.rmse, '.4f')}  MAE {fmt(s.mae, '.4f')}")
    lines.append(f"    Spearman {_corr(s.spearman)}")
    lines.append(f"    Kendall  {_corr(s.kendall)}")
    lines.append(f"    Pearson  {_corr(s.pearson)}")
    b = s.bias
    sig = "n/a" if b.is_significant is None else ("yes" if b.is_significant else "no")
    ci = (
        f" [{b.ci_low:+.4f}, {b.ci_high:+.4f}]"
        if b.ci_low is not None and b.ci_high is not None
        else ""
    )
    lines.append(
        f"    Bias {fmt(b.mean_bias, '+.4f')}{ci} ({b.direction or 'n/a'}), "
        f"p={fmt(b.p_value, '.3g')}, significant: {sig}, d_z={fmt(b.effect_size, '.2f')} "
        f"({b.effect_interpretation})"
    )
    lines.append(
        f"    ICC(2,1) absolute agreement {fmt(s.icc_absolute)} ({s.icc_interpretation}), "
        f"ICC(3,1) consistency {fmt(s.icc_consistency)}"
    )
    if block.length_bias is not None:
        lines.append(f"    Length vs score Spearman {_corr(block.length_bias)}")
    return lines


def _degenerate(c: CriterionAgreement) -> str:
    if not c.has_data:
        return "  [no data]"
    return "  [degenerate: single class, kappa undefined]" if c.is_degenerate else ""


def _criteria_lines(block: AgreementBlock, *, verbose: bool = False) -> list[str]:
    lines: list[str] = []
    binary = [c for c in block.criteria if c.kind == "binary"]
    ordinal = [c for c in block.criteria if c.kind == "ordinal"]
    nominal = [c for c in block.criteria if c.kind == "nominal"]
    if binary:
        lines.append("Binary criteria:")
        lines.append(
            f"  {'Criterion':<22}{'n':>6}{'Acc':>8}{'Prec':>7}{'Rec':>7}{'F1':>7}{'Kappa':>8}"
            f"{'Phi':>8}{'FPR':>7}{'FNR':>7}"
        )
        for c in binary:
            lines.append(
                f"  {c.name[:21]:<22}{c.n_samples:>6}{fmt(c.accuracy, '.1%', 8)}"
                f"{fmt(c.precision, '.2f', 7)}{fmt(c.recall, '.2f', 7)}{fmt(c.f1, '.2f', 7)}"
                f"{fmt(c.kappa, '.3f', 8)}{fmt(c.phi, '.3f', 8)}{fmt(c.fpr, '.2f', 7)}"
                f"{fmt(c.fnr, '.2f', 7)}{_degenerate(c)}"
            )
    if ordinal:
        lines.append("Ordinal criteria:")
        lines.append(
            f"  {'Criterion':<22}{'n':>6}{'Exact':>8}{'Adj':>8}{'Kappa':>8}{'QWK':>8}"
            f"{'LWK':>8}{'MacroF1':>9}{'Spearman':>10}{'RMSE':>8}"
        )
        for c in ordinal:
            lines.append(
                f"  {c.name[:21]:<22}{c.n_samples:>6}{fmt(c.accuracy, '.1%', 8)}"
                f"{fmt(c.adjacent_accuracy, '.1%', 8)}{fmt(c.kappa, '.3f', 8)}"
                f"{fmt(c.weighted_kappa, '.3f', 8)}{fmt(c.weighted_kappa_linear, '.3f', 8)}"
                f"{fmt(c.macro_f1, '.3f', 9)}"
                f"{fmt(c.spearman.coefficient if c.spearman else None, '.3f', 10)}"
                f"{fmt(c.rmse, '.3f', 8)}{_degenerate(c)}"
            )
        lines.append("  (QWK = quadratic-weighted kappa, the headline; LWK = linear-weighted)")
    if nominal:
        lines.append("Nominal criteria:")
        lines.append(
            f"  {'Criterion':<22}{'n':>6}{'Acc':>8}{'Kappa':>8}{'MacroF1':>9}  Interpretation"
        )
        for c in nominal:
            lines.append(
                f"  {c.name[:21]:<22}{c.n_samples:>6}{fmt(c.accuracy, '.1%', 8)}"
                f"{fmt(c.kappa, '.3f', 8)}{fmt(c.macro_f1, '.3f', 9)}  "
                f"{c.kappa_interpretation}{_degenerate(c)}"
            )
    for c in block.criteria:
        if verbose and c.per_option:
            lines.append(f"  {c.name}: per option (one-vs-rest)")
            lines.extend(
                f"    {o.label[:20]:<21}P {fmt(o.precision, '.2f')}  R {fmt(o.recall, '.2f')}  "
                f"F1 {fmt(o.f1, '.2f')}  human {o.support_human}  judge {o.support_judge}"
                for o in c.per_option
            )
    return lines


def _pair(p: tuple[float, float] | None, spec: str) -> str:
    return "n/a" if p is None else f"[{format(p[0], spec)}, {format(p[1], spec)}]"


def _interval(name: str, iv: Interval, spec: str) -> str:
    return (
        f"  {name:<28}{fmt(iv.estimate, spec):>9}  percentile {_pair(iv.percentile, spec):<20} "
        f"BCa {_pair(iv.bca, spec)}" + (f"  ({iv.n_defined} defined)" if iv.n_defined else "")
    )


def render_summary(result: CalibrationResult, *, verbose: bool = False) -> str:
    """The text report of ``assay agreement``."""
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
        cost = "unpriced" if run.cost_usd is None else f"${run.cost_usd:.4f}"
        lines.append(
            f"Judged by assay calibrate: metric {run.metric}, {run.n_samples} samples, "
            f"{run.n_calls} calls ({run.n_cached} cached), {run.prompt_tokens}+"
            f"{run.completion_tokens} tokens, {cost}, {run.n_failed} failed scorings"
            + (f"; model under test {run.model_under_test}" if run.model_under_test else "")
        )
    if result.score_abstain_policy != "skip":
        lines.append(f"Score abstention policy: {result.score_abstain_policy}")
    if result.warnings:
        lines.append("")
        lines.append(f"Warnings ({len(result.warnings)}):")
        lines.extend(f"  - {w}" for w in result.warnings)
    if result.overall is not None:
        lines.append("")
        lines.extend(
            _block_lines(result.overall, header=f"Overall ({result.overall.rater} vs human):")
        )
        lines.append("")
        lines.extend(_criteria_lines(result.overall, verbose=verbose))

    if result.bootstrap is not None:
        b = result.bootstrap
        lines.append("")
        lines.append(
            f"Bootstrap ({b.n_resamples} item-level resamples, seed {b.seed}, "
            f"{b.confidence_level:.0%} intervals):"
        )
        lines.append(_interval("Accuracy (micro)", b.accuracy_micro, ".3f"))
        lines.append(_interval("Mean kappa (macro)", b.mean_kappa_macro, ".3f"))
        lines.append(_interval("Score RMSE", b.rmse, ".4f"))
        if verbose:
            for ci in b.criteria:
                lines.append(_interval(f"{ci.name[:18]} accuracy", ci.accuracy, ".3f"))
                lines.append(_interval(f"{ci.name[:18]} kappa", ci.kappa, ".3f"))
                if ci.weighted_kappa is not None:
                    lines.append(_interval(f"{ci.name[:18]} QWK", ci.weighted_kappa, ".3f"))

    if len(result.per_judge) > 1 or verbose:
        lines.append("")
        lines.append("Per-judge (each judge vs human):")
        for block in result.per_judge:
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
                    f"    {'':<22}percentile: accuracy {_pair(ab.percentile, '.3f')}, "
                    f"mean kappa {_pair(kb.percentile, '.3f')}"
                )
            if verbose:
                lines.extend("    " + line for line in _criteria_lines(block, verbose=True))

    if result.judge_comparisons:
        lines.append("")
        lines.append("Judge comparisons (paired bootstrap, judge A - judge B, same resamples):")
        for cmp in result.judge_comparisons:
            iv = cmp.difference
            verdict = (
                ""
                if cmp.excludes_zero is None
                else ("  differs" if cmp.excludes_zero else "  no clear difference")
            )
            lines.append(
                f"  {cmp.judge_a} - {cmp.judge_b}: {cmp.statistic} {fmt(iv.estimate, '+.3f')} "
                f"percentile {_pair(iv.percentile, '+.3f')} BCa {_pair(iv.bca, '+.3f')}{verdict}"
            )

    if result.inter_judge:
        lines.append("")
        lines.extend(_inter_judge_lines(result.inter_judge))
        lines.append(
            f"  Mean Krippendorff's alpha (macro over criteria): "
            f"{fmt(result.mean_krippendorff_alpha)}"
        )
    lines.append(RULE)
    return "\n".join(lines)


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
