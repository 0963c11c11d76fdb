"""Verbal interpretation bands for agreement and correlation coefficients.

* kappa-type coefficients (Cohen, weighted, Fleiss): Landis & Koch (1977), with the cut-offs
  written as inclusive upper bounds: < 0 poor, <= 0.20 slight, <= 0.40 fair, <= 0.60 moderate,
  <= 0.80 substantial, above that almost perfect.
* Krippendorff's alpha: Krippendorff (2004): >= 0.800 reliable, >= 0.667 tentative, below
  that unreliable.
* correlation |r|: >= 0.9 very strong, >= 0.7 strong, >= 0.5 moderate, >= 0.3 weak, else very
  weak, followed by the sign.
* Cohen's d: < 0.2 negligible, < 0.5 small, < 0.8 medium, else large.
* intraclass correlation (Koo & Li 2016): < 0.5 poor, < 0.75 moderate, < 0.9 good, else
  excellent.

Every function returns ``"undefined"`` for ``None``, so an n/a statistic never gets a band.
"""

from __future__ import annotations

UNDEFINED = "undefined"


def kappa_band(value: float | None) -> str:
    """Landis & Koch label of a kappa-type coefficient."""
    if value is None:
        return UNDEFINED
    if value < 0:
        return "poor (worse than chance)"
    for upper, label in (
        (0.20, "slight"),
        (0.40, "fair"),
        (0.60, "moderate"),
        (0.80, "substantial"),
    ):
        if value <= upper:
            return label
    return "almost perfect"


def alpha_band(value: float | None) -> str:
    """Krippendorff's reliability reading of alpha."""
    if value is None:
        return UNDEFINED
    if value >= 0.800:
        return "reliable"
    if value >= 0.667:
        return "tentative"
    return "unreliable"


def correlation_band(value: float | None) -> str:
    """Strength and sign of a correlation coefficient."""
    if value is None:
        return UNDEFINED
    size = abs(value)
    if size >= 0.9:
        strength = "very strong"
    elif size >= 0.7:
        strength = "strong"
    elif size >= 0.5:
        strength = "moderate"
    elif size >= 0.3:
        strength = "weak"
    else:
        strength = "very weak"
    return f"{strength} {'positive' if value >= 0 else 'negative'}"


def effect_size_band(value: float | None) -> str:
    """Cohen's conventional reading of a standardised mean difference."""
    if value is None:
        return UNDEFINED
    size = abs(value)
    if size < 0.2:
        return "negligible"
    if size < 0.5:
        return "small"
    if size < 0.8:
        return "medium"
    return "large"


def icc_band(value: float | None) -> str:
    """Koo & Li's (2016) reading of an intraclass correlation."""
    if value is None:
        return UNDEFINED
    if value < 0.5:
        return "poor"
    if value < 0.75:
        return "moderate"
    if value < 0.9:
        return "good"
    return "excellent"
