"""Drift over production scores, per metric: the latest window against the last stable one.

Windows are consecutive runs of ``window`` traces in the order the traces started; a window's
pass rate is over its scored rows (an errored row is never a failure), and its errored rows
are counted apart. The current window is the latest; the *stable* window is the newest
earlier, non-overlapping window with at least ``min_samples`` scores whose pass rate is at
least ``threshold``. A metric alerts when its current window has ``min_samples`` scores or
more and either its pass rate is below ``threshold`` (padosoft's rule: window 50, minimum 20,
threshold 0.8) or it is more than ``max_drop`` below the stable window's; or when more than
``max_drop`` of the current window's rows errored (a metric that can no longer score the
traffic is drift too). The rows that moved it are the current window's failed rows, lowest
score first.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict

from assay.errors import UsageError

MAX_ROWS: Final = 20


@dataclass(frozen=True)
class DriftRule:
    """The window, the minimum to judge it, the floor and the allowed drop."""

    window: int = 50
    min_samples: int = 20
    threshold: float = 0.8
    max_drop: float = 0.1

    def __post_init__(self) -> None:
        if self.window < 1 or not 1 <= self.min_samples <= self.window:
            raise UsageError(
                f"--window must be 1 or more and --min-samples between 1 and the window; got "
                f"window {self.window}, min-samples {self.min_samples}"
            )
        for name in ("threshold", "max_drop"):
            value = getattr(self, name)
            if not (math.isfinite(value) and 0.0 <= value <= 1.0):
                raise UsageError(f"--{name.replace('_', '-')} must be in [0, 1]; got {value}")


@dataclass(frozen=True, slots=True)
class Observation:
    """One trace's outcome on a metric: a score with its pass, or an error."""

    trace_id: str
    value: float | None
    passed: bool


class MovedRow(BaseModel):
    """A failed row of the current window."""

    model_config = ConfigDict(extra="forbid")

    trace_id: str
    score: float


class Drift(BaseModel):
    """One metric's drift verdict."""

    model_config = ConfigDict(extra="forbid")

    metric: str
    status: Literal["alert", "ok", "too-few"]
    reasons: list[str]
    current_pass_rate: float | None
    current_scored: int
    errored: int
    stable_pass_rate: float | None
    stable_scored: int
    drop: float | None
    rows: list[MovedRow]
    trend: list[float]
    """Pass rate of each full window, oldest first (the last may be partial)."""


def _rate(window: Sequence[Observation]) -> float | None:
    scored = [o for o in window if o.value is not None]
    return round(sum(o.passed for o in scored) / len(scored), 6) if scored else None


def _scored(window: Sequence[Observation]) -> int:
    return sum(o.value is not None for o in window)


def _windows(scored: Sequence[Observation], size: int) -> list[Sequence[Observation]]:
    """Non-overlapping windows ending at the newest row, newest first."""
    windows = []
    end = len(scored)
    while end > 0:
        windows.append(scored[max(0, end - size) : end])
        end -= size
    return windows


def drift(metric: str, observations: Sequence[Observation], rule: DriftRule) -> Drift:
    """The drift verdict of one metric's observations (oldest first)."""
    windows = _windows(observations, rule.window)
    current = windows[0] if windows else []
    stable = next(
        (
            w
            for w in windows[1:]
            if _scored(w) >= rule.min_samples and (_rate(w) or 0.0) >= rule.threshold
        ),
        [],
    )
    rate, stable_rate = _rate(current), _rate(stable)
    drop = round(max(0.0, stable_rate - rate), 6) if rate is not None and stable_rate else None
    errored = len(current) - _scored(current)
    reasons = _reasons(rule, _scored(current), rate, drop)
    if len(current) >= rule.min_samples and errored > rule.max_drop * len(current):
        reasons.append(f"{errored} of the window's {len(current)} rows could not be scored")
    enough = _scored(current) >= rule.min_samples or bool(reasons)
    status: Literal["alert", "ok", "too-few"] = (
        "alert" if reasons else "ok" if enough else "too-few"
    )
    moved = sorted((o for o in current if o.value is not None and not o.passed), key=_value)
    return Drift(
        metric=metric,
        status=status,
        reasons=reasons,
        current_pass_rate=rate,
        current_scored=_scored(current),
        errored=errored,
        stable_pass_rate=stable_rate,
        stable_scored=_scored(stable),
        drop=drop,
        rows=[MovedRow(trace_id=o.trace_id, score=_value(o)) for o in moved[:MAX_ROWS]],
        trend=[r for w in reversed(windows) if (r := _rate(w)) is not None],
    )


def _value(observation: Observation) -> float:
    return observation.value if observation.value is not None else 0.0


def _reasons(rule: DriftRule, n: int, rate: float | None, drop: float | None) -> list[str]:
    if n < rule.min_samples or rate is None:
        return []
    reasons = []
    if rate < rule.threshold:
        reasons.append(f"pass rate {rate:.3f} is below the threshold {rule.threshold:g}")
    if drop is not None and drop > rule.max_drop + 1e-9:
        reasons.append(
            f"pass rate fell {drop:.3f} from the last stable window (max {rule.max_drop:g})"
        )
    return reasons
