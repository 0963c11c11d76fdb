"""The ``rubric`` metric's ensemble options, checked as they come from YAML: the judge models
(``model`` or ``models``, with positive weights) and the per-kind aggregation."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from assay.errors import MetricConfigError

if TYPE_CHECKING:
    from assay.calibration.aggregate import Aggregation


def judge_list(name: str, model: Any, models: Any) -> tuple[tuple[str | None, float], ...]:
    """(model, weight) per judge: ``models`` when given, else the single ``model`` (None = the
    settings' judge model). ``name`` is the metric's, for the error messages."""
    if models is None:
        return ((model, 1.0),)
    if model is not None:
        raise MetricConfigError(f"{name}: give 'model' or 'models', not both")
    if not isinstance(models, list) or not models:
        raise MetricConfigError(f"{name} option 'models' must be a non-empty list")
    judges = [_judge_entry(name, entry) for entry in models]
    if len({m for m, _ in judges}) != len(judges):
        raise MetricConfigError(f"{name}: judge models must be distinct")
    return tuple(judges)


def _judge_entry(name: str, entry: object) -> tuple[str | None, float]:
    """One entry of ``models``: a model name, or ``{model, weight}`` with a positive weight."""
    if isinstance(entry, str) and entry.strip():
        return entry, 1.0
    if isinstance(entry, Mapping) and isinstance(entry.get("model"), str):
        weight = entry.get("weight", 1.0)
        if isinstance(weight, bool) or not isinstance(weight, (int, float)) or weight <= 0:
            raise MetricConfigError(f"{name}: judge weights must be positive numbers")
        return entry["model"], float(weight)
    raise MetricConfigError(f"{name}: each of 'models' is a model name or {{model, weight}}")


def aggregation_of(name: str, value: object) -> Aggregation:
    """The :class:`Aggregation` of the ``aggregation`` option (a mapping of kind -> method)."""
    from assay.calibration.aggregate import Aggregation

    allowed = {
        "binary": ("majority", "weighted", "unanimous"),
        "ordinal": ("median", "mean", "mode"),
        "nominal": ("mode",),
    }
    aggregation = value or {}
    if not isinstance(aggregation, Mapping):
        raise MetricConfigError(f"{name} option 'aggregation' must be a mapping")
    for key, method in aggregation.items():
        if key not in allowed or method not in allowed[key]:
            raise MetricConfigError(
                f"{name} option 'aggregation': {key}={method!r} is not one of "
                + "; ".join(f"{k}: {'|'.join(v)}" for k, v in allowed.items())
            )
    return Aggregation(**dict(aggregation))
