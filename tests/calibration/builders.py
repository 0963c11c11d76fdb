"""Builders of criteria and labels documents for the calibration tests."""

from __future__ import annotations

from typing import Any

from assay.calibration import Criterion, Option


def binary(name: str, weight: float = 1.0) -> Criterion:
    return Criterion(name=name, weight=weight)


def ordinal(name: str, labels: str = "12345", na: bool = True, weight: float = 1.0) -> Criterion:
    options = [Option(label=x) for x in labels]
    if na:
        options.append(Option(label="n/a", na=True))
    return Criterion(name=name, type="ordinal", options=options, weight=weight)


def nominal(name: str, labels: tuple[str, ...] = ("red", "green", "blue"), na: bool = False,
            values: tuple[float, ...] | None = None) -> Criterion:
    options = [
        Option(label=x, value=None if values is None else values[i]) for i, x in enumerate(labels)
    ]
    if na:
        options.append(Option(label="none", na=True))
    return Criterion(name=name, type="nominal", options=options)


def document(criteria: list[Criterion], items: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "criteria": [c.model_dump(exclude_none=True) for c in criteria],
        "items": items,
        **extra,
    }
