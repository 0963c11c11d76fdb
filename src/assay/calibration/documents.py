"""Labels documents into a :class:`LabelSet`: validation, label codes and precise errors.

Every mistake raises :class:`~assay.errors.CalibrationError` naming the file, the item and the
field (``human.tone``, ``judges.gpt-4o.accuracy``...), so ``assay agreement`` can print one line.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import ValidationError

from assay.calibration.model import (
    FAILED,
    MISSING,
    Criterion,
    ItemRecord,
    LabelsDocument,
    LabelSet,
)
from assay.errors import CalibrationError


def labels_from_data(data: object, *, source: str = "<labels>") -> LabelSet:
    """Validate a parsed labels document and convert it to a :class:`LabelSet`."""
    if not isinstance(data, Mapping):
        raise CalibrationError(
            "the document must be a mapping with 'criteria' and 'items'", file=source
        )
    try:
        document = LabelsDocument.model_validate(dict(data))
    except ValidationError as exc:
        raise translate(exc, source, raw_items=data.get("items")) from None
    return labels_from_document(document, source=source)


def labels_from_items(
    data: Mapping[str, Any], items: list[Any], *, source: str, notes: Iterable[str] = ()
) -> LabelSet:
    """Validate a document assembled from a line- or row-based file whose items are ``items``."""
    try:
        document = LabelsDocument.model_validate(data)
    except ValidationError as exc:
        raise translate(exc, source, raw_items=items) from None
    return labels_from_document(document, source=source, notes=notes)


def labels_from_document(
    document: LabelsDocument, *, source: str = "<labels>", notes: Iterable[str] = ()
) -> LabelSet:
    """Convert a validated document into code arrays; label errors name item and field."""
    criteria = tuple(document.criteria)
    cells = _Cells(criteria, source)
    items = document.items
    _check_item_ids(items, source)
    judge_ids = _judge_ids(document, source)
    arrays = _Arrays.empty(
        len(criteria), len(items), len(judge_ids), any(item.consensus for item in items)
    )
    judge_pos = {jid: j for j, jid in enumerate(judge_ids)}
    for i, item in enumerate(items):
        arrays.add(i, item, cells, judge_pos)
    weights = {j.id: j.weight for j in document.judges} if document.judges else {}
    return LabelSet(
        criteria=criteria,
        item_ids=tuple(item.id for item in items),
        judges=tuple(judge_ids),
        human=arrays.human,
        votes=arrays.votes,
        consensus=arrays.consensus,
        item_errored=arrays.errored,
        human_scores=arrays.human_scores,
        judge_scores=arrays.judge_scores,
        consensus_scores=arrays.consensus_scores,
        judge_weights=tuple(weights.get(j, 1.0) for j in judge_ids),
        lengths=arrays.lengths if not np.all(np.isnan(arrays.lengths)) else None,
        source=source,
        notes=tuple(notes),
    )


def translate(
    exc: ValidationError, source: str, *, raw_items: object = None, prefix: str | None = None
) -> CalibrationError:
    """One CalibrationError for a validation failure: its first error, located by item id."""
    first = exc.errors()[0]
    loc = [str(part) for part in first["loc"]]
    item: str | None = None
    if len(loc) >= 2 and loc[0] == "items" and loc[1].isdigit():
        item = _item_name(int(loc[1]), raw_items)
        loc = loc[2:]
    if prefix:
        loc = [prefix, *loc]
    message = first["msg"].removeprefix("Value error, ")
    if first["type"] == "missing":
        message = "required field is missing"
    elif first["type"] == "extra_forbidden":
        message = "unknown field (see docs/calibration.md for the labels format)"
    extra = len(exc.errors()) - 1
    if extra:
        message += f" (and {extra} more error{'s' if extra > 1 else ''})"
    return CalibrationError(message, file=source, sample=item, field=".".join(loc) or None)


def _item_name(number: int, raw_items: object) -> str:
    """The id the raw item at ``number`` carries, else ``#number``."""
    if isinstance(raw_items, list) and number < len(raw_items):
        raw = raw_items[number]
        if isinstance(raw, Mapping) and isinstance(raw.get("id"), (str, int)):
            return str(raw["id"])
    return f"#{number}"


def _check_item_ids(items: Sequence[ItemRecord], source: str) -> None:
    """Refuse a repeated item id, naming both positions."""
    seen: dict[str, int] = {}
    for number, item in enumerate(items):
        if item.id in seen:
            raise CalibrationError(
                f"duplicate item id (first at #{seen[item.id]}, again at #{number})",
                file=source,
                sample=item.id,
                field="id",
            )
        seen[item.id] = number


def _judge_ids(document: LabelsDocument, source: str) -> list[str]:
    """The declared judges, or those the items name in order of first appearance."""
    judge_ids: list[str] = [j.id for j in document.judges] if document.judges else []
    declared = set(judge_ids)
    for item in document.items:
        for jid in list(item.judges) + [k for k in item.judge_scores]:
            if jid not in declared and jid not in judge_ids:
                if document.judges:
                    raise CalibrationError(
                        f"judge {jid!r} is not declared in 'judges'",
                        file=source,
                        sample=item.id,
                        field=f"judges.{jid}",
                    )
                judge_ids.append(jid)
    if not judge_ids:
        raise CalibrationError("no judge verdicts found in any item", file=source, field="judges")
    return judge_ids


class _Cells:
    """Turns a mapping of criterion -> label into codes in a criteria-by-items array."""

    def __init__(self, criteria: tuple[Criterion, ...], source: str) -> None:
        self.criteria = criteria
        self.names = [c.name for c in criteria]
        if len(set(self.names)) != len(self.names):
            dup = next(n for n in self.names if self.names.count(n) > 1)
            raise CalibrationError(
                f"duplicate criterion name {dup!r}", file=source, field="criteria"
            )
        self.index = {name: i for i, name in enumerate(self.names)}
        self.source = source

    def fill(
        self, target: np.ndarray, i: int, cells: Mapping[str, Any], item: ItemRecord, where: str
    ) -> None:
        """Write the codes of ``cells`` (item ``i``) into ``target``; ``where`` names the field."""
        for name, raw in cells.items():
            if name not in self.index:
                raise CalibrationError(
                    f"unknown criterion {name!r}; criteria are {', '.join(self.names)}",
                    file=self.source,
                    sample=item.id,
                    field=f"{where}.{name}",
                )
            c = self.index[name]
            target[c, i] = _cell_code(
                self.criteria[c], raw, self.source, item.id, f"{where}.{name}"
            )


@dataclass(frozen=True)
class _Arrays:
    """The code and score arrays a :class:`LabelSet` is built from, filled item by item."""

    human: np.ndarray
    votes: np.ndarray
    consensus: np.ndarray | None
    errored: np.ndarray
    human_scores: np.ndarray
    judge_scores: np.ndarray
    consensus_scores: np.ndarray
    lengths: np.ndarray

    @classmethod
    def empty(cls, n_c: int, n_i: int, n_j: int, has_consensus: bool) -> _Arrays:
        """Arrays for ``n_c`` criteria, ``n_i`` items and ``n_j`` judges, all missing."""
        return cls(
            human=np.full((n_c, n_i), MISSING, dtype=np.int16),
            votes=np.full((n_j, n_c, n_i), MISSING, dtype=np.int16),
            consensus=np.full((n_c, n_i), MISSING, dtype=np.int16) if has_consensus else None,
            errored=np.zeros(n_i, dtype=bool),
            human_scores=np.full(n_i, np.nan),
            judge_scores=np.full((n_j, n_i), np.nan),
            consensus_scores=np.full(n_i, np.nan),
            lengths=np.full(n_i, np.nan),
        )

    def add(self, i: int, item: ItemRecord, cells: _Cells, judge_pos: Mapping[str, int]) -> None:
        """Fill column ``i`` from ``item``: verdicts, scores, the errored flag and the length."""
        source = cells.source
        self.errored[i] = item.error is not None
        if item.human:
            cells.fill(self.human, i, item.human, item, "human")
        for jid, verdicts in item.judges.items():
            cells.fill(self.votes[judge_pos[jid]], i, verdicts, item, f"judges.{jid}")
        if item.consensus and self.consensus is not None:
            cells.fill(self.consensus, i, item.consensus, item, "consensus")
        self.human_scores[i] = _score(item.human_score, source, item.id, "human_score")
        self.consensus_scores[i] = _score(item.score, source, item.id, "score")
        for jid, value in item.judge_scores.items():
            self.judge_scores[judge_pos[jid], i] = _score(
                value, source, item.id, f"judge_scores.{jid}"
            )
        if item.text is not None:
            self.lengths[i] = len(item.text.split())


def _score(value: float | None, source: str, item: str, field: str) -> float:
    """A supplied score in [0, 1], NaN when none was given."""
    if value is None:
        return math.nan
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        raise CalibrationError(
            f"score must be in [0, 1]; got {value}", file=source, sample=item, field=field
        )
    return float(value)


def _cell_code(criterion: Criterion, raw: object, source: str, item: str, field: str) -> int:
    """The code of one label cell: MISSING when empty, FAILED for an error, else its option."""
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return MISSING
    if isinstance(raw, Mapping):
        if set(raw) == {"error"}:
            return FAILED
        raise CalibrationError(
            'a cell is a label, null, or {"error": "..."} for a failed judgment',
            file=source,
            sample=item,
            field=field,
        )
    if isinstance(raw, str) and raw.strip().lower().startswith("error:"):
        return FAILED
    try:
        return criterion.code_of(raw)
    except ValueError as exc:
        raise CalibrationError(str(exc), file=source, sample=item, field=field) from None
