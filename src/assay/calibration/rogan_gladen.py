"""The pass rate corrected for a judge's measured sensitivity and specificity (Rogan-Gladen).

A judge that passes answers people fail (false positives) or fails answers people pass (false
negatives) moves a run's pass rate away from what people would have said. Rogan and Gladen
(1978) invert that: with sensitivity ``Se`` = P(judge pass | human pass) and specificity
``Sp`` = P(judge fail | human fail), measured on a calibration set, the pass rate people would
give is ``(p + Sp - 1) / (Se + Sp - 1)`` for an observed judge pass rate ``p``.

The interval adds the calibration's own uncertainty to the run's: by the delta method the
variance is ``[V(p) + pi^2 V(Se) + (1 - pi)^2 V(Sp)] / (Se + Sp - 1)^2``, each proportion's
variance from its own count (the run's n, the human passes, the human failures). Following
Lang and Reiczigel (2014), the three proportions of the interval are Agresti-Coull adjusted
(``z^2 / 2`` added to successes and to failures), so a calibration with Se = 1 still carries
its uncertainty instead of a zero variance. The estimate and the interval are clipped to
[0, 1]. A judge no better than chance (``Se + Sp <= 1``) leaves the correction undefined.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

__all__ = ["Corrected", "PassCounts", "rogan_gladen"]


@dataclass(frozen=True)
class PassCounts:
    """The judge's pass decision against the humans' on a calibration set."""

    true_pass: int  # human pass, judge pass
    false_fail: int  # human pass, judge fail
    false_pass: int  # human fail, judge pass
    true_fail: int  # human fail, judge fail

    @property
    def sensitivity(self) -> float | None:
        n = self.true_pass + self.false_fail
        return self.true_pass / n if n else None

    @property
    def specificity(self) -> float | None:
        n = self.true_fail + self.false_pass
        return self.true_fail / n if n else None


@dataclass(frozen=True)
class Corrected:
    """The corrected pass rate and its interval; None where undefined."""

    estimate: float | None
    low: float | None
    high: float | None
    confidence: float


def _clip(value: float) -> float:
    return min(1.0, max(0.0, value))


def _adjusted(successes: float, n: int, z: float) -> tuple[float, float]:
    """The Agresti-Coull adjusted proportion and its variance."""
    total = n + z * z
    share = (successes + z * z / 2) / total
    return share, share * (1 - share) / total


def rogan_gladen(
    passed: int, n_run: int, counts: PassCounts, *, confidence: float = 0.95
) -> Corrected:
    """The pass rate people would give, from ``passed`` of ``n_run`` judged passes."""
    se, sp = counts.sensitivity, counts.specificity
    if n_run <= 0 or se is None or sp is None or se + sp - 1 <= 0:
        return Corrected(None, None, None, confidence)
    estimate = _clip((passed / n_run + sp - 1) / (se + sp - 1))
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    n_pos = counts.true_pass + counts.false_fail
    n_neg = counts.true_fail + counts.false_pass
    p_a, v_p = _adjusted(passed, n_run, z)
    se_a, v_se = _adjusted(counts.true_pass, n_pos, z)
    sp_a, v_sp = _adjusted(counts.true_fail, n_neg, z)
    youden = se_a + sp_a - 1
    if youden <= 0:
        return Corrected(estimate, None, None, confidence)
    centre = (p_a + sp_a - 1) / youden
    variance = (v_p + centre**2 * v_se + (1 - centre) ** 2 * v_sp) / youden**2
    half = z * math.sqrt(variance)
    return Corrected(estimate, _clip(centre - half), _clip(centre + half), confidence)
