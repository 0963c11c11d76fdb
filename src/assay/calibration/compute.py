"""``compute_agreement``: every agreement statistic of a :class:`LabelSet`, in one result.

Order of work: pick the overall rater (the single judge, the ensemble's own consensus when
the file carries one, otherwise an aggregation of the judges), compare it and every judge to
the human labels per criterion under the handling modes, pool the aggregates (micro/macro),
compare per-item weighted scores, measure inter-judge agreement, optionally bootstrap, and
collect the warnings.
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np

from assay.calibration import stats
from assay.calibration.aggregate import AbstainPolicy, Aggregation
from assay.calibration.agreement import Scale, scale_for
from assay.calibration.bands import alpha_band, kappa_band
from assay.calibration.blocks import bootstrapped, rater_blocks
from assay.calibration.caveats import result_warnings
from assay.calibration.model import MODES, Criterion, LabelSet, Mode
from assay.calibration.result import CalibrationResult, InterJudge
from assay.errors import CalibrationError, UsageError


def _check_mode(name: str, value: str) -> Mode:
    if value not in MODES:
        raise UsageError(f"{name} must be one of {', '.join(MODES)}; got {value!r}")
    return cast(Mode, value)  # checked against MODES, the values of Mode, just above


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
    policy, ca, na = _checked_options(
        score_abstain=score_abstain,
        cannot_assess_mode=cannot_assess_mode,
        na_mode=na_mode,
        bootstrap=bootstrap,
        confidence_level=confidence_level,
    )
    _refuse_ordinal_na_category(labels, na)
    warnings: list[str] = list(labels.notes)
    if not labels.judges:
        raise CalibrationError("no judge verdicts to compare", file=labels.source, field="judges")
    has_human = np.any(labels.human >= 0, axis=0)
    if not has_human.any():
        return _raters_only(labels, ca, na, policy, warnings, bootstrap)
    warnings.extend(_unlabelled_warnings(labels, has_human))
    blocks = rater_blocks(labels, has_human, policy, (ca, na), aggregation or Aggregation())
    inter = inter_judge(labels, ca, na) if len(labels.judges) >= 2 else None
    boot, per_judge, comparisons = bootstrapped(
        labels,
        blocks,
        n_resamples=bootstrap,
        seed=seed,
        confidence=confidence_level,
        keep_distribution=keep_distribution,
    )
    warnings.extend(result_warnings(labels, blocks.overall, per_judge, blocks.human_scores, ca))
    return CalibrationResult(
        **_header(labels, ca, na, policy, counted=has_human),
        consensus=blocks.how,
        overall=blocks.overall,
        per_judge=per_judge,
        inter_judge=inter,
        mean_krippendorff_alpha=mean_alpha(inter),
        bootstrap=boot,
        warnings=warnings,
        judge_comparisons=comparisons,
    )


def _checked_options(
    *,
    score_abstain: str,
    cannot_assess_mode: str,
    na_mode: str,
    bootstrap: int,
    confidence_level: float,
) -> tuple[AbstainPolicy, Mode, Mode]:
    """The abstention policy and the two handling modes; UsageError on any bad option."""
    from assay.calibration.aggregate import ABSTAIN_POLICIES, is_abstain_policy

    if not is_abstain_policy(score_abstain):
        raise UsageError(
            f"score_abstain must be one of {', '.join(ABSTAIN_POLICIES)}; got {score_abstain!r}"
        )
    ca = _check_mode("cannot_assess_mode", cannot_assess_mode)
    na = _check_mode("na_mode", na_mode)
    if bootstrap < 0:
        raise UsageError(f"bootstrap must be >= 0; got {bootstrap}")
    if not 0.0 < confidence_level < 1.0:
        raise UsageError(f"confidence_level must be in (0, 1); got {confidence_level}")
    return score_abstain, ca, na


def _header(
    labels: LabelSet, ca: Mode, na: Mode, policy: AbstainPolicy, *, counted: np.ndarray
) -> dict[str, Any]:
    """The result fields that describe the input and the options, shared by both result kinds;
    ``counted`` marks the items that count towards the used and errored totals."""
    errored = labels.item_errored
    assert errored is not None
    kinds = [c.kind_ for c in labels.criteria]
    return {
        "n_items_used": int(np.sum(counted & ~errored)),
        "n_errored_items": int(np.sum(errored & counted)),
        "source": labels.source,
        "cannot_assess_mode": ca,
        "na_mode": na,
        "score_abstain_policy": policy,
        "n_items": labels.n_items,
        "n_criteria": len(labels.criteria),
        "n_binary": kinds.count("binary"),
        "n_ordinal": kinds.count("ordinal"),
        "n_nominal": kinds.count("nominal"),
        "judges": list(labels.judges),
    }


def _unlabelled_warnings(labels: LabelSet, has_human: np.ndarray) -> list[str]:
    """The items skipped for want of a human label (the first five named)."""
    unlabelled = [labels.item_ids[i] for i in np.nonzero(~has_human)[0]]
    if not unlabelled:
        return []
    shown = ", ".join(unlabelled[:5]) + (" ..." if len(unlabelled) > 5 else "")
    return [f"{len(unlabelled)} item(s) have no human label and were skipped: {shown}"]


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
    inter = inter_judge(labels, ca, na)
    return CalibrationResult(
        **_header(labels, ca, na, policy, counted=np.ones(labels.n_items, dtype=bool)),
        consensus="none (no human labels: raters compared with each other)",
        overall=None,
        per_judge=[],
        inter_judge=inter,
        mean_krippendorff_alpha=mean_alpha(inter),
        bootstrap=None,
        warnings=warnings,
    )


def inter_judge(labels: LabelSet, ca_mode: Mode, na_mode: Mode) -> list[InterJudge]:
    """One :class:`InterJudge` row per criterion of ``labels`` (errored items count as missing)."""
    errored = labels.item_errored
    assert errored is not None
    out: list[InterJudge] = []
    for c, criterion in enumerate(labels.criteria):
        scale = scale_for(criterion, ca_mode if criterion.kind_ == "binary" else na_mode)
        mapped = np.where(errored[None, :], -1, scale.map(labels.votes[:, c, :]))
        out.append(_criterion_row(criterion, scale, mapped))
    return out


def mean_alpha(inter: list[InterJudge] | None) -> float | None:
    """Macro mean of the defined per-criterion alphas (autorubric's mean_krippendorff_alpha)."""
    return stats.mean_or_none([ij.krippendorff_alpha for ij in inter or []])


def _criterion_row(criterion: Criterion, scale: Scale, mapped: np.ndarray) -> InterJudge:
    """The inter-judge row of one criterion from its judge-by-item scale codes (-1 = missing)."""
    ordinal = criterion.kind_ == "ordinal"
    alpha, alpha_interval, alpha_nominal = _alphas(scale, mapped, ordinal=ordinal)
    table = stats.complete_case_counts(mapped, scale.k)
    n_judges = mapped.shape[0]
    fleiss = stats.fleiss_kappa(table) if n_judges >= 2 else None
    return InterJudge(
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
        mean_pairwise_kappa=stats.mean_or_none(_pairwise_kappas(mapped, scale.k)),
    )


def _alphas(
    scale: Scale, mapped: np.ndarray, *, ordinal: bool
) -> tuple[float | None, float | None, float | None]:
    """Krippendorff's alpha at the criterion's level, plus interval and nominal for ordinal."""
    alpha_codes = mapped.astype(np.float64)
    if ordinal:  # an NA category has no scale position: missing for ordinal alpha
        alpha_codes[mapped >= scale.n_scale] = np.nan
    alpha_codes[mapped < 0] = np.nan
    domain = list(range(scale.n_scale if ordinal else scale.k))
    alpha = stats.krippendorff_alpha(alpha_codes, "ordinal" if ordinal else "nominal", domain)
    if not ordinal:
        return alpha, None, None
    nominal_codes = np.where(mapped >= scale.n_scale, np.nan, alpha_codes)
    alpha_nominal = stats.krippendorff_alpha(nominal_codes, "nominal", domain)
    alpha_interval = None
    values = np.where(
        np.isnan(alpha_codes), np.nan, scale.values[np.nan_to_num(alpha_codes).astype(int)]
    )
    if not np.all(np.isnan(scale.values[: scale.n_scale])):
        alpha_interval = stats.krippendorff_alpha(values, "interval")
    return alpha, alpha_interval, alpha_nominal


def _pairwise_kappas(mapped: np.ndarray, k: int) -> list[float | None]:
    """Cohen's kappa of every pair of judges over the items both rated."""
    return stats.pairwise_cohen_kappas(mapped, k)
