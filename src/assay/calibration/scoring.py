"""The weighted rubric score of one item, from its per-criterion verdict codes.

Each verdict contributes ``value * weight`` (MET = 1, UNMET = 0, or the option's value).
Abstentions (CANNOT_ASSESS, NA options), missing and failed cells are skipped: they leave
both the numerator and the denominator (the SKIP policy). With P the sum of the positive
weights that were scored and N the sum of the absolute negative (penalty) weights scored:
``score = clamp(sum / P, 0, 1)`` when P > 0, else ``clamp(1 + sum / N, 0, 1)`` when N > 0,
else undefined (NaN here, None in results): nothing was scored, so no score is invented.

Other abstention policies (``abstain=``): ``zero`` keeps an abstained criterion in the
denominator with a contribution of 0; ``worst`` scores it as the criterion's worst real answer
(UNMET, MET for a penalty criterion, or the lowest-valued option). Missing and failed cells are
skipped under every policy.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, TypeGuard

import numpy as np

from assay.calibration.model import Criterion

AbstainPolicy = Literal["skip", "zero", "worst"]
ABSTAIN_POLICIES: tuple[AbstainPolicy, ...] = ("skip", "zero", "worst")


def is_abstain_policy(value: object) -> TypeGuard[AbstainPolicy]:
    """Whether ``value`` names an abstention policy (skip | zero | worst)."""
    return value in ABSTAIN_POLICIES


def weighted_scores(
    criteria: Sequence[Criterion], codes: np.ndarray, abstain: AbstainPolicy = "skip"
) -> np.ndarray:
    """Scores of every item from a criteria x items code matrix; NaN where undefined."""
    codes = np.asarray(codes)
    n_items = codes.shape[1]
    total = np.zeros(n_items)
    positive = np.zeros(n_items)
    negative = np.zeros(n_items)
    for c, criterion in enumerate(criteria):
        values = criterion.code_values.copy()
        if abstain != "skip":
            for code in criterion.abstain_codes:
                values[code] = 0.0 if abstain == "zero" else values[criterion.worst_code]
        row = codes[c]
        value = np.where(row >= 0, values[np.clip(row, 0, None)], np.nan)
        scored = ~np.isnan(value)
        weight = criterion.weight
        total += np.where(scored, np.nan_to_num(value) * weight, 0.0)
        if weight > 0:
            positive += np.where(scored, weight, 0.0)
        elif weight < 0:
            negative += np.where(scored, -weight, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        by_positive = np.clip(total / positive, 0.0, 1.0)
        by_negative = np.clip(1.0 + total / negative, 0.0, 1.0)
    return np.where(positive > 0, by_positive, np.where(negative > 0, by_negative, np.nan))
