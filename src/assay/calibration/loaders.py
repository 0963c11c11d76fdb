"""Read labels files (JSON, YAML, JSONL, CSV) into a :class:`LabelSet` with precise errors.

Every mistake raises :class:`~assay.errors.CalibrationError` naming the file, the item and the
field (``human.tone``, ``judges.gpt-4o.accuracy``...), so ``assay agreement`` can print one line.

* JSON / YAML: a :class:`~assay.calibration.model.LabelsDocument` mapping.
* JSONL: one item per line; an optional first line ``{"criteria": [...], "judges": [...]}``.
* CSV: long (``item_id,criterion,rater,label``; the rater ``human`` is the ground truth) or
  wide (``item_id,criterion,human,<judge>,...``). A cell starting with ``error:`` is a failed
  judgment; an empty cell is missing (see :mod:`assay.calibration.csv_labels`).

When criteria are not declared (JSONL without header, CSV) they are inferred from the labels
and a note says so: verdict strings -> binary, integers -> ordinal over the full integer range
between the smallest and largest label, anything else -> nominal. Declare the criteria (or
pass ``criteria=``) to fix the scale, e.g. a 1-5 scale where nobody answered 5.
"""

from __future__ import annotations

import csv
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from assay.calibration.csv_labels import HUMAN_RATER, labels_from_csv
from assay.calibration.documents import (
    labels_from_data,
    labels_from_document,
    labels_from_items,
    translate,
)
from assay.calibration.inference import collect_from_items, infer_criteria
from assay.calibration.model import Criterion, LabelSet
from assay.data.dataset import iter_jsonl, parse_document, read_text
from assay.errors import CalibrationError

__all__ = [
    "HUMAN_RATER",
    "labels_from_data",
    "labels_from_document",
    "load_criteria",
    "load_labels",
]


def load_labels(path: str | Path, *, criteria: str | Path | None = None) -> LabelSet:
    """Load a labels file by extension; ``criteria`` optionally names a criteria document."""
    path = Path(path)
    text = read_text(path, CalibrationError)
    declared = load_criteria(criteria) if criteria is not None else None
    suffix = path.suffix.lower()
    if suffix == ".csv":
        try:
            return labels_from_csv(text, str(path), declared)
        except csv.Error as exc:  # e.g. a field over the csv module's size limit
            raise CalibrationError(f"not a readable CSV: {exc}", file=str(path)) from None
    if suffix == ".jsonl":
        return _from_jsonl(text, path, declared)
    data = parse_document(text, path, CalibrationError)
    if declared is not None and isinstance(data, Mapping) and "criteria" not in data:
        data = {**data, "criteria": [c.model_dump(exclude_none=True) for c in declared]}
    return labels_from_data(data, source=str(path))


def load_criteria(path: str | Path) -> list[Criterion]:
    """Read a criteria list (or a mapping with ``criteria``) from JSON / YAML."""
    path = Path(path)
    data = parse_document(read_text(path, CalibrationError), path, CalibrationError)
    if isinstance(data, Mapping):
        data = data.get("criteria", data.get("rubric"))
    if not isinstance(data, list) or not data:
        raise CalibrationError(
            "expected a non-empty list of criteria", file=str(path), field="criteria"
        )
    out: list[Criterion] = []
    for index, raw in enumerate(data):
        try:
            out.append(Criterion.model_validate(raw))
        except ValidationError as exc:
            raise translate(exc, str(path), prefix=f"criteria.{index}") from None
    return out


def _from_jsonl(text: str, path: Path, declared: list[Criterion] | None) -> LabelSet:
    """One item per line after an optional header line with criteria, judges or version."""
    rows = list(iter_jsonl(text, path, CalibrationError))
    header: dict[str, Any] = {}
    if (
        rows
        and isinstance(rows[0][1], Mapping)
        and "items" not in rows[0][1]
        and ("criteria" in rows[0][1] or "judges" in rows[0][1] or "schema_version" in rows[0][1])
    ):
        header = dict(rows[0][1])
        rows = rows[1:]
    items: list[Any] = []
    for number, value in rows:
        if not isinstance(value, Mapping):
            raise CalibrationError(
                f"line {number} must be a JSON object (one item)", file=str(path)
            )
        items.append(value)
    if not items:
        raise CalibrationError("no items", file=str(path))
    notes: list[str] = []
    if "criteria" not in header:
        if declared is not None:
            header["criteria"] = [c.model_dump(exclude_none=True) for c in declared]
        else:
            inferred, notes = infer_criteria(collect_from_items(items, str(path)))
            header["criteria"] = [c.model_dump(exclude_none=True) for c in inferred]
    data = {**header, "items": items}
    return labels_from_items(data, items, source=str(path), notes=notes)
