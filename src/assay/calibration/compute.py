"""``compute_agreement``: every agreement statistic of a :class:`LabelSet`, in one result.

Order of work: pick the overall rater (the single judge, the ensemble's own consensus when
the file carries one, otherwise an aggregation of the judges), compare it and every judge to
the human labels per criterion under the handling modes, pool the aggregates (micro/macro),
compare per-item weighted scores, measure inter-judge agreement, optionally bootstrap, and
collect the warnings.
"""

from __future__ import annotations

from typing import cast

import numpy as np

from assay.calibration import stats
from assay.calibration.aggregate import Aggregation, consensus
from assay.calibration.agreement import (
    Pairs,
    abstention_agreement,
    aggregate,
    criterion_agreement,
    make_pairs,
    scale_for,
)
from assay.calibration.bands import alpha_band, icc_band, kappa_band
from assay.calibration.model import MODES, LabelSet, Mode
from assay.calibration.result import (
    AgreementBlock,
    CalibrationResult,
    InterJudge,
    JudgeComparison,
    ScoreAgreement,
)
from assay.calibration.scoring import AbstainPolicy, weighted_scores
from assay.errors import CalibrationError, UsageError

LENGTH_BIAS_RHO = 0.3


def _check_mode(name: str, value: str) -> Mode:
    if value not in MODES:
        raise UsageError(f"{name} must be one of {', '.join(MODES)}; got {value!r}")
    return cast(Mode, value)  # checked against MODES, the values of Mode, just above


def _scores(human: np.ndarray, judge: np.ndarray, errored: np.ndarray) -> ScoreAgreement:
    use = ~np.isnan(human) & ~np.isnan(judge) & ~errored
    h, j = human[use], judge[use]
    iccs = stats.icc(np.column_stack([h, j]))
    return ScoreAgreement(
        n=int(use.sum()),
        rmse=stats.rmse(h, j),
        mae=stats.mae(h, j),
        spearman=stats.correlation(j, h, "spearman"),
        kendall=stats.correlation(j, h, "kendall"),
        pearson=stats.correlation(j, h, "pearson"),
        bias=stats.systematic_bias(j, h),
        icc_absolute=iccs["icc2"],
        icc_consistency=iccs["icc3"],
        icc_interpretation=icc_band(iccs["icc2"]),
    )


def _block(
    rater: str,
    labels: LabelSet,
    codes: np.ndarray,
    scores: np.ndarray,
    human_scores: np.ndarray,
    ca_mode: Mode,
    na_mode: Mode,
) -> tuple[AgreementBlock, list[Pairs]]:
    errored = labels.item_errored
    assert errored is not None
    pairs = [
        make_pairs(
            criterion,
            labels.human[c],
            codes[c],
            errored,
            ca_mode if criterion.kind_ == "binary" else na_mode,
        )
        for c, criterion in enumerate(labels.criteria)
    ]
    criteria = [criterion_agreement(p) for p in pairs]
    length_bias = None
    if labels.lengths is not None:
        use = ~np.isnan(labels.lengths) & ~np.isnan(scores) & ~errored
        length_bias = stats.correlation(labels.lengths[use], scores[use], "spearman")
    block = AgreementBlock(
        rater=rater,
        aggregate=aggregate(pairs, criteria),
        criteria=criteria,
        scores=_scores(human_scores, scores, errored),
        abstention=abstention_agreement(labels.criteria, labels.human, codes, errored),
        length_bias=length_bias,
    )
    return block, pairs


def _inter_judge(labels: LabelSet, ca_mode: Mode, na_mode: Mode) -> list[InterJudge]:
    out: list[InterJudge] = []
    errored = labels.item_errored
    assert errored is not None
    for c, criterion in enumerate(labels.criteria):
        mode = ca_mode if criterion.kind_ == "binary" else na_mode
        scale = scale_for(criterion, mode)
        mapped = scale.map(labels.votes[:, c, :])
        mapped = np.where(errored[None, :], -1, mapped)
        ordinal = criterion.kind_ == "ordinal"
        alpha_codes = mapped.astype(np.float64)
        if ordinal:  # an NA category has no scale position: missing for ordinal alpha
            alpha_codes[mapped >= scale.n_scale] = np.nan
        alpha_codes[mapped < 0] = np.nan
        domain = list(range(scale.n_scale if ordinal else scale.k))
        alpha = stats.krippendorff_alpha(alpha_codes, "ordinal" if ordinal else "nominal", domain)
        alpha_interval = alpha_nominal = None
        if ordinal:
            nominal_codes = np.where(mapped >= scale.n_scale, np.nan, alpha_codes)
            alpha_nominal = stats.krippendorff_alpha(nominal_codes, "nominal", domain)
            values = np.where(
                np.isnan(alpha_codes), np.nan, scale.values[np.nan_to_num(alpha_codes).astype(int)]
            )
            if not np.all(np.isnan(scale.values[: scale.n_scale])):
                alpha_interval = stats.krippendorff_alpha(values, "interval")
        table = stats.complete_case_counts(mapped, scale.k)
        fleiss = stats.fleiss_kappa(table) if len(labels.judges) >= 2 else None
        pairwise: list[float | None] = []
        for a in range(len(labels.judges)):
            for b in range(a + 1, len(labels.judges)):
                both = (mapped[a] >= 0) & (mapped[b] >= 0)
                pairwise.append(
                    stats.cohen_kappa(mapped[a][both], mapped[b][both], labels=range(scale.k))
                )
        out.append(
            InterJudge(
                name=criterion.name,
                kind=criterion.kind_,
                n_items=int(np.sum(np.sum(mapped >= 0, axis=0) >= 2)),
                krippendorff_alpha=alpha,
                alpha_level="ordinal" if ordinal else "nominal",
                alpha_interpretation=alpha_band(alpha),
                krippendorff_alpha_interval=alpha_interval,
                krippendorff_alpha_nominal=alpha_nominal,
                fleiss_kappa=fleiss,
                fleiss_n_items=int(table.shape[0]),
                fleiss_interpretation=kappa_band(fleiss),
                mean_pairwise_kappa=stats.mean_or_none(pairwise),
            )
        )
    return out


def compute_agreement(
    labels: LabelSet,
    *,
    cannot_assess_mode: str = "exclude",
    na_mode: str = "exclude",
    bootstrap: int = 0,
    seed: int | None = None,
    confidence_level: float = 0.95,
    aggregation: Aggregation | None = None,
    score_abstain: str = "skip",
    keep_distribution: bool = False,
) -> CalibrationResult:
    """Compare the judges of ``labels`` with its human labels; see docs/calibration.md.

    ``bootstrap`` is the number of item-level resamples (0 = none); ``seed`` makes the
    intervals reproducible; ``keep_distribution`` keeps every resample's aggregates in the
    JSON. ``score_abstain`` is the abstention policy (skip | zero | worst) of
    the per-item weighted scores derived from verdicts. Raises CalibrationError when no item
    carries a human label.
    """
    from assay.calibration.scoring import ABSTAIN_POLICIES, is_abstain_policy

    if not is_abstain_policy(score_abstain):
        raise UsageError(
            f"score_abstain must be one of {', '.join(ABSTAIN_POLICIES)}; got {score_abstain!r}"
        )
    policy: AbstainPolicy = score_abstain
    ca = _check_mode("cannot_assess_mode", cannot_assess_mode)
    na = _check_mode("na_mode", na_mode)
    if bootstrap < 0:
        raise UsageError(f"bootstrap must be >= 0; got {bootstrap}")
    if not 0.0 < confidence_level < 1.0:
        raise UsageError(f"confidence_level must be in (0, 1); got {confidence_level}")
    aggregation = aggregation or Aggregation()
    _refuse_ordinal_na_category(labels, na)
    errored = labels.item_errored
    # LabelSet.__post_init__ fills these (NaN where a score was not supplied)
    given_human, given_judges = labels.human_scores, labels.judge_scores
    given_consensus = labels.consensus_scores
    assert errored is not None and given_human is not None
    assert given_judges is not None and given_consensus is not None
    criteria = labels.criteria
    warnings: list[str] = list(labels.notes)

    if not labels.judges:
        raise CalibrationError("no judge verdicts to compare", file=labels.source, field="judges")
    has_human = np.any(labels.human >= 0, axis=0)
    if not has_human.any():
        return _raters_only(labels, ca, na, policy, warnings, bootstrap)
    unlabelled = [labels.item_ids[i] for i in np.nonzero(~has_human)[0]]
    if unlabelled:
        shown = ", ".join(unlabelled[:5]) + (" ..." if len(unlabelled) > 5 else "")
        warnings.append(f"{len(unlabelled)} item(s) have no human label and were skipped: {shown}")

    # human scores: supplied or derived from the human verdicts
    derived_human = weighted_scores(criteria, labels.human, policy)
    human_scores = np.where(np.isnan(given_human), derived_human, given_human)
    human_scores = np.where(has_human | ~np.isnan(given_human), human_scores, np.nan)

    # the overall rater
    n_judges = len(labels.judges)
    weights = np.array(labels.judge_weights, dtype=np.float64)
    if n_judges == 1:
        rater_codes = labels.votes[0]
        rater_name = labels.judges[0]
        how = f"single judge {labels.judges[0]!r}"
    else:
        rater_codes = np.stack(
            [
                consensus(cr, labels.votes[:, c, :], weights, aggregation)
                for c, cr in enumerate(criteria)
            ]
        )
        how = f"aggregated from {n_judges} judges ({aggregation.describe()})"
        rater_name = "consensus"
        if labels.consensus is not None:
            given = labels.consensus
            rater_codes = np.where(given != -1, given, rater_codes).astype(np.int16)
            how = f"the ensemble's recorded verdicts (else {aggregation.describe()})"
    derived_rater = weighted_scores(criteria, rater_codes, policy)
    if n_judges == 1:
        supplied = np.where(np.isnan(given_consensus), given_judges[0], given_consensus)
    else:
        supplied = given_consensus
    rater_scores = np.where(np.isnan(supplied), derived_rater, supplied)

    overall, overall_pairs = _block(
        rater_name, labels, rater_codes, rater_scores, human_scores, ca, na
    )
    per_judge: list[AgreementBlock] = []
    judge_inputs: list[tuple[list[Pairs], np.ndarray]] = []
    for j, judge in enumerate(labels.judges):
        judge_scores = np.where(
            np.isnan(given_judges[j]),
            weighted_scores(criteria, labels.votes[j], policy),
            given_judges[j],
        )
        block, pairs = _block(judge, labels, labels.votes[j], judge_scores, human_scores, ca, na)
        per_judge.append(block)
        judge_inputs.append((pairs, judge_scores))

    inter = _inter_judge(labels, ca, na) if n_judges >= 2 else None

    boot = None
    comparisons: list[JudgeComparison] | None = None
    if bootstrap:
        from assay.calibration.bootstrap import bootstrap_raters

        use = ~errored
        h = np.where(use, human_scores, np.nan)
        raters = [(overall_pairs, h, np.where(use, rater_scores, np.nan))]
        if n_judges > 1:  # with one judge its block is the overall block
            raters += [(pairs, h, np.where(use, scores, np.nan)) for pairs, scores in judge_inputs]
        pairs_of_judges = [(a + 1, b + 1) for a in range(n_judges) for b in range(a + 1, n_judges)]
        results, diffs = bootstrap_raters(
            raters,
            n_resamples=bootstrap,
            seed=seed,
            confidence=confidence_level,
            compare=pairs_of_judges if n_judges > 1 else (),
            keep_distribution=keep_distribution,
        )
        boot = results[0]
        if n_judges > 1:
            per_judge = [
                b.model_copy(update={"bootstrap": r}) for b, r in zip(per_judge, results[1:])
            ]
            comparisons = [
                JudgeComparison(
                    judge_a=labels.judges[a - 1],
                    judge_b=labels.judges[b - 1],
                    statistic=statistic,
                    difference=iv,
                    excludes_zero=None
                    if iv.percentile is None
                    else (iv.percentile[0] > 0 or iv.percentile[1] < 0),
                )
                for a, b, statistic, iv in diffs
            ]
        else:
            per_judge = [per_judge[0].model_copy(update={"bootstrap": boot})]

    warnings.extend(_warnings(labels, overall, per_judge, human_scores, ca, na))
    kinds = [c.kind_ for c in criteria]
    return CalibrationResult(
        source=labels.source,
        cannot_assess_mode=ca,
        na_mode=na,
        score_abstain_policy=policy,
        n_items=labels.n_items,
        n_items_used=int(np.sum(has_human & ~errored)),
        n_errored_items=int(np.sum(errored & has_human)),
        n_criteria=len(criteria),
        n_binary=kinds.count("binary"),
        n_ordinal=kinds.count("ordinal"),
        n_nominal=kinds.count("nominal"),
        judges=list(labels.judges),
        consensus=how,
        overall=overall,
        per_judge=per_judge,
        inter_judge=inter,
        mean_krippendorff_alpha=_mean_alpha(inter),
        bootstrap=boot,
        warnings=warnings,
        judge_comparisons=comparisons,
    )


def _mean_alpha(inter: list[InterJudge] | None) -> float | None:
    """Macro mean of the defined per-criterion alphas (autorubric's mean_krippendorff_alpha)."""
    return stats.mean_or_none([ij.krippendorff_alpha for ij in inter or []])


def _refuse_ordinal_na_category(labels: LabelSet, na: Mode) -> None:
    """Seed 002: NA as its own category is refused on an ordinal criterion with an NA option.

    NA has no position on the scale, so a weighted kappa would give it a meaningless distance.
    """
    if na != "as_category":
        return
    for criterion in labels.criteria:
        if criterion.kind_ == "ordinal" and criterion.abstain_codes:
            raise UsageError(
                f"criterion {criterion.name!r} is ordinal with an NA option: --na-mode "
                "as_category is refused (NA has no position on the scale); use exclude or as_unmet"
            )


def _raters_only(
    labels: LabelSet,
    ca: Mode,
    na: Mode,
    policy: AbstainPolicy,
    warnings: list[str],
    bootstrap: int,
) -> CalibrationResult:
    """No human column: agreement among the raters (judge vs judge, coder vs coder) only."""
    if len(labels.judges) < 2:
        raise CalibrationError(
            "no item carries a human label and there is only one rater: agreement needs human "
            "labels or at least two raters",
            file=labels.source,
            field="human",
        )
    warnings.append(
        "no human labels: only agreement among the raters is reported (no accuracy, kappa vs "
        "human, correlations or bias)"
    )
    if bootstrap:
        warnings.append("--bootstrap resamples judge-vs-human statistics; skipped without humans")
    errored = labels.item_errored
    assert errored is not None
    kinds = [c.kind_ for c in labels.criteria]
    inter = _inter_judge(labels, ca, na)
    return CalibrationResult(
        source=labels.source,
        cannot_assess_mode=ca,
        na_mode=na,
        score_abstain_policy=policy,
        n_items=labels.n_items,
        n_items_used=int(np.sum(~errored)),
        n_errored_items=int(np.sum(errored)),
        n_criteria=len(labels.criteria),
        n_binary=kinds.count("binary"),
        n_ordinal=kinds.count("ordinal"),
        n_nominal=kinds.count("nominal"),
        judges=list(labels.judges),
        consensus="none (no human labels: raters compared with each other)",
        overall=None,
        per_judge=[],
        inter_judge=inter,
        mean_krippendorff_alpha=_mean_alpha(inter),
        bootstrap=None,
        warnings=warnings,
    )


def _warnings(
    labels: LabelSet,
    overall: AgreementBlock,
    per_judge: list[AgreementBlock],
    human_scores: np.ndarray,
    ca: Mode,
    na: Mode,
) -> list[str]:
    out: list[str] = []
    cov = overall.aggregate.coverage
    errored_items = int(np.sum(labels.item_errored & np.any(labels.human >= 0, axis=0)))
    if errored_items:
        out.append(
            f"{errored_items} item(s) with human labels were excluded because grading errored; "
            "their verdicts and scores do not contribute"
        )
    if cov.n_failed:
        out.append(
            f"{cov.n_failed} criterion judgment(s) on graded items failed and were left out of "
            "the criterion-level statistics"
        )
    for block in per_judge:
        missing = block.aggregate.coverage.n_missing
        if missing and len(per_judge) > 1:
            out.append(f"judge {block.rater!r} did not rate {missing} labelled pair(s)")
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
    kinds = {c.kind for c in overall.criteria}
    if len(kinds) > 1:
        out.append(
            "Mixed rubric (" + ", ".join(sorted(kinds)) + "): accuracy_micro pools every "
            "criterion's exact agreement; mean_kappa_macro averages unweighted Cohen's kappa of "
            "every criterion; quadratic-weighted kappa is averaged separately over ordinal criteria"
        )
    if ca == "exclude" and cov.n_total and cov.coverage is not None and cov.coverage < 0.8:
        out.append(
            f"coverage is {cov.coverage:.1%}: agreement describes only the pairs that survived "
            "exclusion"
        )
    lb = overall.length_bias
    if (
        lb is not None
        and lb.coefficient is not None
        and abs(lb.coefficient) >= LENGTH_BIAS_RHO
        and lb.p_value is not None
        and lb.p_value < 0.05
    ):
        out.append(
            f"possible length bias: Spearman between answer length and the judge score is "
            f"{lb.coefficient:+.2f} (p={lb.p_value:.3g})"
        )
    return out
