"""Builders of criteria and labels documents for the calibration tests."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

from assay.calibration import Criterion, LabelSet, Option
from assay.calibration.model import FAILED, MISSING


def binary(name: str, weight: float = 1.0) -> Criterion:
    return Criterion(name=name, weight=weight)


def ordinal(name: str, labels: str = "12345", na: bool = True, weight: float = 1.0) -> Criterion:
    options = [Option(label=x) for x in labels]
    if na:
        options.append(Option(label="n/a", na=True))
    return Criterion(name=name, type="ordinal", options=options, weight=weight)


def nominal(
    name: str,
    labels: tuple[str, ...] = ("red", "green", "blue"),
    na: bool = False,
    values: tuple[float, ...] | None = None,
) -> Criterion:
    options = [
        Option(label=x, value=None if values is None else values[i]) for i, x in enumerate(labels)
    ]
    if na:
        options.append(Option(label="none", na=True))
    return Criterion(name=name, type="nominal", options=options)


def document(
    criteria: list[Criterion], items: list[dict[str, Any]], **extra: Any
) -> dict[str, Any]:
    return {
        "criteria": [c.model_dump(exclude_none=True) for c in criteria],
        "items": items,
        **extra,
    }


@st.composite
def label_sets(draw):
    kinds = draw(
        st.lists(st.sampled_from(["binary", "ordinal", "nominal"]), min_size=1, max_size=3)
    )
    criteria = []
    for i, kind in enumerate(kinds):
        weight = draw(st.sampled_from([1.0, 2.0, -1.0]))
        if kind == "binary":
            criteria.append(binary(f"c{i}", weight))
        elif kind == "ordinal":
            criteria.append(
                ordinal(
                    f"c{i}",
                    labels="abcde"[: draw(st.integers(2, 5))],
                    na=draw(st.booleans()),
                    weight=weight,
                )
            )
        else:
            criteria.append(nominal(f"c{i}", na=draw(st.booleans()), values=(0.0, 1.0, 0.5)))
    n_items = draw(st.integers(1, 25))
    n_judges = draw(st.integers(1, 3))

    def column(criterion, allow_failed):
        n_codes = len(criterion.labels)
        narrow = draw(st.booleans())  # single-class columns show up often
        pool = [0] if narrow else list(range(n_codes))
        extra = [MISSING] + ([FAILED] if allow_failed else [])
        return draw(
            st.lists(
                st.sampled_from(pool + extra) | st.sampled_from(pool),
                min_size=n_items,
                max_size=n_items,
            )
        )

    human = np.array([column(c, False) for c in criteria], dtype=np.int16)
    votes = np.array([[column(c, True) for c in criteria] for _ in range(n_judges)], dtype=np.int16)
    errored = np.array(draw(st.lists(st.booleans(), min_size=n_items, max_size=n_items)))
    errored &= np.array(draw(st.lists(st.booleans(), min_size=n_items, max_size=n_items)))
    if not np.any(human >= 0):
        human[0, 0] = 0
    return LabelSet(
        criteria=tuple(criteria),
        item_ids=tuple(f"i{i}" for i in range(n_items)),
        judges=tuple(f"j{j}" for j in range(n_judges)),
        human=human,
        votes=votes,
        item_errored=errored,
    )
