"""Agreement among the judges themselves, per criterion: Krippendorff's alpha, Fleiss' kappa
and the mean pairwise Cohen's kappa, under the same handling modes as judge-vs-human."""

from __future__ import annotations

import numpy as np

from assay.calibration import stats
from assay.calibration.agreement import Scale, scale_for
from assay.calibration.bands import alpha_band, kappa_band
from assay.calibration.model import Criterion, LabelSet, Mode
from assay.calibration.result import InterJudge


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
