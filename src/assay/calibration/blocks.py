"""Agreement blocks: each rater (the overall rater and every judge) against the human labels,
per criterion and on per-item scores, and their bootstrap intervals.

The overall rater is the single judge, the ensemble's own consensus when the file carries one,
otherwise an aggregation of the judges.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from assay.calibration import stats
from assay.calibration.aggregate import AbstainPolicy, Aggregation, consensus, weighted_scores
from assay.calibration.agreement import (
    Pairs,
    abstention_agreement,
    aggregate,
    criterion_agreement,
    make_pairs,
)
from assay.calibration.bands import icc_band
from assay.calibration.model import LabelSet, Mode
from assay.calibration.result import (
    AgreementBlock,
    BootstrapResult,
    JudgeComparison,
    ScoreAgreement,
)


@dataclass(frozen=True)
class RaterBlocks:
    """The overall rater's block, each judge's, and what the bootstrap resamples from them."""

    overall: AgreementBlock
    how: str  # where the overall rater's verdicts come from
    per_judge: list[AgreementBlock]
    raters: list[tuple[list[Pairs], np.ndarray, np.ndarray]]  # to resample, overall first
    human_scores: np.ndarray


def rater_blocks(
    labels: LabelSet,
    has_human: np.ndarray,
    policy: AbstainPolicy,
    modes: tuple[Mode, Mode],
    aggregation: Aggregation,
) -> RaterBlocks:
    """Compare the overall rater and every judge of ``labels`` with the human labels.

    ``has_human`` marks the items with a human label; ``modes`` are the cannot-assess and NA
    handling modes.
    """
    ca, na = modes
    human_scores = _human_scores(labels, has_human, policy)
    rater_name, rater_codes, how = _overall_rater(labels, aggregation)
    rater_scores = _rater_scores(labels, rater_codes, policy)
    overall, overall_pairs = _block(
        rater_name, labels, rater_codes, rater_scores, human_scores, ca, na
    )
    per_judge, judge_inputs = _judge_blocks(labels, human_scores, policy, ca, na)
    raters = _bootstrap_raters(labels, overall_pairs, judge_inputs, human_scores, rater_scores)
    return RaterBlocks(overall, how, per_judge, raters, human_scores)


def bootstrapped(
    labels: LabelSet,
    blocks: RaterBlocks,
    *,
    n_resamples: int,
    seed: int | None,
    confidence: float,
    keep_distribution: bool,
) -> tuple[BootstrapResult | None, list[AgreementBlock], list[JudgeComparison] | None]:
    """Bootstrap the raters: the overall result, the judge blocks with theirs, and the
    judge-vs-judge differences (None with a single judge); no resamples, no intervals."""
    if not n_resamples:
        return None, blocks.per_judge, None
    return _bootstrapped(
        labels,
        blocks.raters,
        blocks.per_judge,
        n_resamples=n_resamples,
        seed=seed,
        confidence=confidence,
        keep_distribution=keep_distribution,
    )


def _scores(human: np.ndarray, judge: np.ndarray, errored: np.ndarray) -> ScoreAgreement:
    """Score-level agreement over the items where both scores exist and grading did not err."""
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
    """One rater's block against the humans, and its per-criterion pairs."""
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


def _human_scores(labels: LabelSet, has_human: np.ndarray, policy: AbstainPolicy) -> np.ndarray:
    """Per-item human scores: supplied, else derived from the human verdicts; NaN if neither."""
    given_human = labels.human_scores  # LabelSet.__post_init__ fills it (NaN where not given)
    assert given_human is not None
    derived_human = weighted_scores(labels.criteria, labels.human, policy)
    human_scores = np.where(np.isnan(given_human), derived_human, given_human)
    return np.where(has_human | ~np.isnan(given_human), human_scores, np.nan)


def _overall_rater(labels: LabelSet, aggregation: Aggregation) -> tuple[str, np.ndarray, str]:
    """The overall rater's name, criterion-by-item codes and a description of where they came
    from: the single judge, else the ensemble's recorded verdicts over the aggregation."""
    n_judges = len(labels.judges)
    if n_judges == 1:
        return labels.judges[0], labels.votes[0], f"single judge {labels.judges[0]!r}"
    weights = np.array(labels.judge_weights, dtype=np.float64)
    rater_codes = np.stack(
        [
            consensus(cr, labels.votes[:, c, :], weights, aggregation)
            for c, cr in enumerate(labels.criteria)
        ]
    )
    if labels.consensus is None:
        return (
            "consensus",
            rater_codes,
            f"aggregated from {n_judges} judges ({aggregation.describe()})",
        )
    rater_codes = np.where(labels.consensus != -1, labels.consensus, rater_codes).astype(np.int16)
    return (
        "consensus",
        rater_codes,
        f"the ensemble's recorded verdicts (else {aggregation.describe()})",
    )


def _rater_scores(labels: LabelSet, rater_codes: np.ndarray, policy: AbstainPolicy) -> np.ndarray:
    """The overall rater's per-item scores: supplied (a single judge's own), else derived."""
    given_judges, given_consensus = labels.judge_scores, labels.consensus_scores
    assert given_judges is not None and given_consensus is not None
    derived_rater = weighted_scores(labels.criteria, rater_codes, policy)
    if len(labels.judges) == 1:
        supplied = np.where(np.isnan(given_consensus), given_judges[0], given_consensus)
    else:
        supplied = given_consensus
    return np.where(np.isnan(supplied), derived_rater, supplied)


def _judge_blocks(
    labels: LabelSet, human_scores: np.ndarray, policy: AbstainPolicy, ca: Mode, na: Mode
) -> tuple[list[AgreementBlock], list[tuple[list[Pairs], np.ndarray]]]:
    """Each judge's agreement block, and its pairs and scores for the bootstrap."""
    given_judges = labels.judge_scores
    assert given_judges is not None
    per_judge: list[AgreementBlock] = []
    judge_inputs: list[tuple[list[Pairs], np.ndarray]] = []
    for j, judge in enumerate(labels.judges):
        judge_scores = np.where(
            np.isnan(given_judges[j]),
            weighted_scores(labels.criteria, labels.votes[j], policy),
            given_judges[j],
        )
        block, pairs = _block(judge, labels, labels.votes[j], judge_scores, human_scores, ca, na)
        per_judge.append(block)
        judge_inputs.append((pairs, judge_scores))
    return per_judge, judge_inputs


def _bootstrap_raters(
    labels: LabelSet,
    overall_pairs: list[Pairs],
    judge_inputs: list[tuple[list[Pairs], np.ndarray]],
    human_scores: np.ndarray,
    rater_scores: np.ndarray,
) -> list[tuple[list[Pairs], np.ndarray, np.ndarray]]:
    """The raters to resample: the overall rater, then each judge when there are several."""
    errored = labels.item_errored
    assert errored is not None
    use = ~errored
    h = np.where(use, human_scores, np.nan)
    raters = [(overall_pairs, h, np.where(use, rater_scores, np.nan))]
    if len(labels.judges) > 1:  # with one judge its block is the overall block
        raters += [(pairs, h, np.where(use, scores, np.nan)) for pairs, scores in judge_inputs]
    return raters


def _bootstrapped(
    labels: LabelSet,
    raters: list[tuple[list[Pairs], np.ndarray, np.ndarray]],
    per_judge: list[AgreementBlock],
    *,
    n_resamples: int,
    seed: int | None,
    confidence: float,
    keep_distribution: bool,
) -> tuple[BootstrapResult, list[AgreementBlock], list[JudgeComparison] | None]:
    """Run the bootstrap over ``raters`` and attach each interval to its block."""
    from assay.calibration.bootstrap import bootstrap_raters

    n_judges = len(labels.judges)
    pairs_of_judges = [(a + 1, b + 1) for a in range(n_judges) for b in range(a + 1, n_judges)]
    results, diffs = bootstrap_raters(
        raters,
        n_resamples=n_resamples,
        seed=seed,
        confidence=confidence,
        compare=pairs_of_judges if n_judges > 1 else (),
        keep_distribution=keep_distribution,
    )
    boot = results[0]
    if n_judges == 1:
        return boot, [per_judge[0].model_copy(update={"bootstrap": boot})], None
    per_judge = [b.model_copy(update={"bootstrap": r}) for b, r in zip(per_judge, results[1:])]
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
    return boot, per_judge, comparisons
