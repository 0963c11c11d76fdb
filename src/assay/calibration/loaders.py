"""Read labels files (JSON, YAML, JSONL, CSV) into a :class:`LabelSet` with precise errors.

Every mistake raises :class:`~assay.errors.CalibrationError` naming the file, the item and the
field (``human.tone``, ``judges.gpt-4o.accuracy``...), so ``assay agreement`` can print one line.

* JSON / YAML: a :class:`~assay.calibration.model.LabelsDocument` mapping.
* JSONL: one item per line; an optional first line ``{"criteria": [...], "judges": [...]}``.
* CSV: long (``item_id,criterion,rater,label``; the rater ``human`` is the ground truth) or
  wide (``item_id,criterion,human,<judge>,...``). A cell starting with ``error:`` is a failed
  judgment; an empty cell is missing (see :mod:`assay.calibration.loaders`).

When criteria are not declared (JSONL without header, CSV) they are inferred from the labels
and a note says so: verdict strings -> binary, integers -> ordinal over the full integer range
between the smallest and largest label, anything else -> nominal. Declare the criteria (or
pass ``criteria=``) to fix the scale, e.g. a 1-5 scale where nobody answered 5.
"""

from __future__ import annotations

import _csv  # the reader type (csv.reader returns one)
import csv
import io
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

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


HUMAN_RATER = "human"
_ID_COLUMNS = ("item_id", "id", "item")


def labels_from_csv(text: str, source: str, declared: list[Criterion] | None) -> LabelSet:
    """Read a long or wide labels CSV; ``declared`` criteria replace the inferred ones."""
    reader = csv.reader(io.StringIO(text))
    columns = _Columns.of(next(reader, []), source)
    rows = _items(_records(reader, columns.header, source), columns, source)
    notes: list[str] = []
    if declared is not None:
        criteria = declared
    else:
        criteria, notes = infer_criteria(collect_from_items(rows, source))
    data = {"criteria": [c.model_dump(exclude_none=True) for c in criteria], "items": rows}
    return labels_from_items(data, rows, source=source, notes=notes)


@dataclass(frozen=True)
class _Columns:
    """Where the item id, criterion and (long form) rater and label live in a row."""

    header: list[str]
    id_col: str
    crit_col: str
    rater_col: str | None  # None in the wide form, where every other column is a rater
    label_col: str | None

    @classmethod
    def of(cls, fieldnames: Sequence[str], source: str) -> _Columns:
        """Find the columns in the header; CalibrationError when it fits neither form."""
        header = [h.strip() for h in fieldnames]
        lowered = [h.lower() for h in header]
        id_col = next((header[lowered.index(k)] for k in _ID_COLUMNS if k in lowered), None)
        if id_col is None or "criterion" not in lowered:
            raise CalibrationError(
                "a labels CSV needs an item_id column and a criterion column",
                file=source,
                field="header",
            )
        crit_col = header[lowered.index("criterion")]
        if "rater" in lowered and "label" in lowered:
            rater, label = header[lowered.index("rater")], header[lowered.index("label")]
            return cls(header, id_col, crit_col, rater, label)
        if HUMAN_RATER not in lowered:
            raise CalibrationError(
                "a labels CSV needs either rater+label columns (long form) or a human column "
                "(wide form)",
                file=source,
                field="header",
            )
        return cls(header, id_col, crit_col, None, None)

    def pairs(self, row: dict[str, str]) -> list[tuple[str, str]]:
        """The (rater, label) pairs of one row."""
        if self.rater_col is not None and self.label_col is not None:
            return [(row[self.rater_col].strip(), row[self.label_col].strip())]
        return [
            (h, row.get(h, "").strip())
            for h in self.header
            if h not in (self.id_col, self.crit_col)
        ]


def _records(
    reader: _csv.Reader, header: list[str], source: str
) -> Iterator[tuple[int, dict[str, str]]]:
    """Each row of ``reader`` (a ``csv.reader`` past the header) as {column: cell}, with the
    line it starts on as an editor numbers it (a quoted cell may span lines; blank lines are
    skipped); a row with more or fewer cells than the header is refused, not cut or padded."""
    end = reader.line_num
    for cells in reader:
        start, end = end + 1, reader.line_num
        if not cells:
            continue
        if len(cells) != len(header):
            raise CalibrationError(
                f"line {start}: expected {len(header)} columns (as in the header), "
                f"found {len(cells)}",
                file=source,
            )
        yield start, dict(zip(header, cells, strict=True))


def _items(
    records: Iterable[tuple[int, dict[str, str]]], columns: _Columns, source: str
) -> list[dict[str, Any]]:
    """The rows grouped into items (``id``, ``human``, ``judges``) in order of first appearance."""
    items: dict[str, dict[str, Any]] = {}
    for line, row in records:
        item_id = row.get(columns.id_col, "").strip()
        criterion = row.get(columns.crit_col, "").strip()
        if not item_id or not criterion:
            raise CalibrationError(
                f"line {line}: item_id and criterion must not be empty", file=source
            )
        item = items.setdefault(item_id, {"id": item_id, "human": {}, "judges": {}})
        for rater, label in columns.pairs(row):
            _put(item, rater, criterion, label, line=line, source=source)
    if not items:
        raise CalibrationError("no rows", file=source)
    return list(items.values())


def _put(
    item: dict[str, Any], rater: str, criterion: str, label: str, *, line: int, source: str
) -> None:
    """Store one rater's label for ``criterion``; a second non-empty label is an error."""
    if not rater:
        raise CalibrationError(f"line {line}: empty rater name", file=source)
    cell: Any = (
        None if not label else ({"error": label} if label.lower().startswith("error:") else label)
    )
    target = item["human"] if rater.lower() == HUMAN_RATER else item["judges"].setdefault(rater, {})
    if criterion in target and cell is not None and target[criterion] is not None:
        raise CalibrationError(
            f"line {line}: a second label for this item, criterion and rater",
            file=source,
            sample=item["id"],
            field=f"{rater}.{criterion}",
        )
    if cell is not None or criterion not in target:
        target[criterion] = cell
