"""Plain-text lines of one agreement block (a rater vs the humans) and its criteria tables,
for the calibration summary. None prints as ``n/a``."""

from __future__ import annotations

from typing import TYPE_CHECKING

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
