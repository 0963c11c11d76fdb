"""Rubric criteria for the ``rubric`` metric: parsed from a list, a mapping or a file, given a
"cannot assess" NA option where they have none, and described for the judge's prompt."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from assay.errors import AssayError, MetricConfigError

if TYPE_CHECKING:
    from assay.calibration.model import Criterion

NA_LABEL = "cannot assess"


def parse_rubric(value: object, *, where: str) -> tuple[Criterion, ...]:
    """Criteria from a list, a mapping with ``criteria`` / ``rubric``, or a file path."""
    from pydantic import ValidationError

    from assay.calibration.loaders import load_criteria
    from assay.calibration.model import Criterion

    if isinstance(value, (str, Path)):
        try:
            return tuple(load_criteria(value))
        except AssayError as exc:
            raise MetricConfigError(f"{where}: {exc}") from None
    if isinstance(value, Mapping):
        value = value.get("criteria", value.get("rubric"))
    if not isinstance(value, list) or not value:
        raise MetricConfigError(f"{where} must be a non-empty list of criteria (or a file path)")
    criteria: list[Criterion] = []
    for index, raw in enumerate(value):
        try:
            criteria.append(Criterion.model_validate(raw))
        except ValidationError as exc:
            first = exc.errors()[0]
            loc = ".".join(str(p) for p in first["loc"])
            message = first["msg"].removeprefix("Value error, ")
            raise MetricConfigError(
                f"{where}[{index}]{'.' + loc if loc else ''}: {message}"
            ) from None
    names = [c.name for c in criteria]
    if len(set(names)) != len(names):
        raise MetricConfigError(f"{where}: criterion names must be unique")
    return tuple(criteria)


def with_na_options(criteria: Sequence[Criterion]) -> tuple[Criterion, ...]:
    """Append a "cannot assess" NA option to multi-choice criteria that have none (last, so
    the authored option indices do not move)."""
    from assay.calibration.model import Option

    out = []
    for criterion in criteria:
        if criterion.options is not None and not any(o.na for o in criterion.options):
            labels = {o.label.lower() for o in criterion.options}
            label = NA_LABEL if NA_LABEL not in labels else "cannot assess (n/a)"
            options = (*criterion.options, Option(label=label, na=True))
            criterion = criterion.model_copy(update={"options": options})
        out.append(criterion)
    return tuple(out)


def describe(criteria: Sequence[Criterion]) -> str:
    """The CRITERIA block of the prompt."""
    lines = []
    for number, c in enumerate(criteria, start=1):
        requirement = c.requirement or c.name
        if c.options is None:
            if c.weight < 0:
                lines.append(f'{number}. "{c.name}" (penalty): {requirement}')
                lines.append(
                    "   MET if the answer has this problem, UNMET if it does not, CANNOT_ASSESS "
                    "only if the answer gives no basis to decide."
                )
            else:
                lines.append(f'{number}. "{c.name}": {requirement}')
                lines.append(
                    "   MET if the answer satisfies it, UNMET if it does not, CANNOT_ASSESS only "
                    "if the answer gives no basis to decide."
                )
        else:
            scale = "ordered from worst to best" if c.kind == "ordinal" else "unordered"
            lines.append(f'{number}. "{c.name}" (choose one option, {scale}): {requirement}')
            shown = ", ".join(
                json.dumps(o.label, ensure_ascii=False)
                + (" (not applicable / cannot assess)" if o.na else "")
                for o in c.options
            )
            lines.append(f"   Options: {shown}")
    return "\n".join(lines)
