"""Read labels files (JSON, YAML, JSONL, CSV) into a :class:`LabelSet` with precise errors.

Every mistake raises :class:`~assay.errors.CalibrationError` naming the file, the item and the
field (``human.tone``, ``judges.gpt-4o.accuracy``...), so ``assay agreement`` can print one line.

* JSON / YAML: a :class:`~assay.calibration.model.LabelsDocument` mapping.
* JSONL: one item per line; an optional first line ``{"criteria": [...], "judges": [...]}``.
* CSV: long (``item_id,criterion,rater,label``; the rater ``human`` is the ground truth) or
  wide (``item_id,criterion,human,<judge>,...``). A cell starting with ``error:`` is a failed
  judgment; an empty cell is missing.

When criteria are not declared (JSONL without header, CSV) they are inferred from the labels
and a note says so: verdict strings -> binary, integers -> ordinal over the full integer range
between the smallest and largest label, anything else -> nominal. Declare the criteria (or
pass ``criteria=``) to fix the scale, e.g. a 1-5 scale where nobody answered 5.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable, Mapping
from pathlib import Path
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
    Option,
)
from assay.dataset import iter_jsonl, parse_document, read_text
from assay.errors import CalibrationError

HUMAN_RATER = "human"
_ID_COLUMNS = ("item_id", "id", "item")
_BINARY_WORDS = {"MET", "UNMET", "CANNOT_ASSESS", "CANNOT ASSESS", "TRUE", "FALSE"}
_NA_WORDS = {"NA", "N/A", "NOT APPLICABLE"}


def load_labels(path: str | Path, *, criteria: str | Path | None = None) -> LabelSet:
    """Load a labels file by extension; ``criteria`` optionally names a criteria document."""
    path = Path(path)
    text = read_text(path, CalibrationError)
    declared = load_criteria(criteria) if criteria is not None else None
    suffix = path.suffix.lower()
    if suffix == ".csv":
        try:
            return _from_csv(text, str(path), declared)
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
            raise _translate(exc, str(path), prefix=f"criteria.{index}") from None
    return out


def labels_from_data(data: Any, *, source: str = "<labels>") -> LabelSet:
    """Validate a parsed labels document and convert it to a :class:`LabelSet`."""
    if not isinstance(data, Mapping):
        raise CalibrationError(
            "the document must be a mapping with 'criteria' and 'items'", file=source
        )
    try:
        document = LabelsDocument.model_validate(dict(data))
    except ValidationError as exc:
        raise _translate(exc, source, raw_items=data.get("items")) from None
    return labels_from_document(document, source=source)


def labels_from_document(
    document: LabelsDocument, *, source: str = "<labels>", notes: Iterable[str] = ()
) -> LabelSet:
    """Convert a validated document into code arrays; label errors name item and field."""
    criteria = tuple(document.criteria)
    names = [c.name for c in criteria]
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise CalibrationError(f"duplicate criterion name {dup!r}", file=source, field="criteria")
    index = {name: i for i, name in enumerate(names)}
    items = document.items
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

    judge_ids: list[str] = [j.id for j in document.judges] if document.judges else []
    weights = {j.id: j.weight for j in document.judges} if document.judges else {}
    declared = set(judge_ids)
    for item in items:
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

    n_c, n_i, n_j = len(criteria), len(items), len(judge_ids)
    human = np.full((n_c, n_i), MISSING, dtype=np.int16)
    votes = np.full((n_j, n_c, n_i), MISSING, dtype=np.int16)
    has_consensus = any(item.consensus for item in items)
    consensus = np.full((n_c, n_i), MISSING, dtype=np.int16) if has_consensus else None
    errored = np.zeros(n_i, dtype=bool)
    human_scores = np.full(n_i, np.nan)
    judge_scores = np.full((n_j, n_i), np.nan)
    consensus_scores = np.full(n_i, np.nan)
    lengths = np.full(n_i, np.nan)
    judge_pos = {jid: j for j, jid in enumerate(judge_ids)}

    def fill(
        target: np.ndarray, i: int, cells: Mapping[str, Any], item: ItemRecord, where: str
    ) -> None:
        for name, raw in cells.items():
            if name not in index:
                raise CalibrationError(
                    f"unknown criterion {name!r}; criteria are {', '.join(names)}",
                    file=source,
                    sample=item.id,
                    field=f"{where}.{name}",
                )
            c = index[name]
            target[c, i] = _cell_code(criteria[c], raw, source, item.id, f"{where}.{name}")

    for i, item in enumerate(items):
        errored[i] = item.error is not None
        if item.human:
            fill(human, i, item.human, item, "human")
        for jid, cells in item.judges.items():
            fill(votes[judge_pos[jid]], i, cells, item, f"judges.{jid}")
        if item.consensus and consensus is not None:
            fill(consensus, i, item.consensus, item, "consensus")
        human_scores[i] = _score(item.human_score, source, item.id, "human_score")
        consensus_scores[i] = _score(item.score, source, item.id, "score")
        for jid, value in item.judge_scores.items():
            judge_scores[judge_pos[jid], i] = _score(value, source, item.id, f"judge_scores.{jid}")
        if item.text is not None:
            lengths[i] = len(item.text.split())

    return LabelSet(
        criteria=criteria,
        item_ids=tuple(item.id for item in items),
        judges=tuple(judge_ids),
        human=human,
        votes=votes,
        consensus=consensus,
        item_errored=errored,
        human_scores=human_scores,
        judge_scores=judge_scores,
        consensus_scores=consensus_scores,
        judge_weights=tuple(weights.get(j, 1.0) for j in judge_ids),
        lengths=lengths if not np.all(np.isnan(lengths)) else None,
        source=source,
        notes=tuple(notes),
    )


def _score(value: float | None, source: str, item: str, field: str) -> float:
    if value is None:
        return math.nan
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        raise CalibrationError(
            f"score must be in [0, 1]; got {value}", file=source, sample=item, field=field
        )
    return float(value)


def _cell_code(criterion: Criterion, raw: Any, source: str, item: str, field: str) -> int:
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


def _translate(
    exc: ValidationError, source: str, *, raw_items: Any = None, prefix: str | None = None
) -> CalibrationError:
    first = exc.errors()[0]
    loc = [str(part) for part in first["loc"]]
    item: str | None = None
    if len(loc) >= 2 and loc[0] == "items" and loc[1].isdigit():
        number = int(loc[1])
        item = f"#{number}"
        if isinstance(raw_items, list) and number < len(raw_items):
            raw = raw_items[number]
            if isinstance(raw, Mapping) and isinstance(raw.get("id"), (str, int)):
                item = str(raw["id"])
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


# --------------------------------------------------------------------------- JSONL / CSV


def _from_jsonl(text: str, path: Path, declared: list[Criterion] | None) -> LabelSet:
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
            inferred, notes = _infer_criteria(_collect_from_items(items, str(path)))
            header["criteria"] = [c.model_dump(exclude_none=True) for c in inferred]
    data = {**header, "items": items}
    try:
        document = LabelsDocument.model_validate(data)
    except ValidationError as exc:
        raise _translate(exc, str(path), raw_items=items) from None
    return labels_from_document(document, source=str(path), notes=notes)


def _collect_from_items(items: list[Any], source: str) -> dict[str, list[Any]]:
    seen: dict[str, list[Any]] = {}
    for item in items:
        groups: list[Any] = [item.get("human") or item.get("ground_truth") or {}]
        judges = item.get("judges") or {}
        if "judge" in item:
            judges = {"judge": item["judge"]}
        if isinstance(judges, Mapping):
            groups.extend(judges.values())
        groups.append(item.get("consensus") or {})
        for group in groups:
            if not isinstance(group, Mapping):
                raise CalibrationError(
                    "verdicts must be a mapping of criterion -> label",
                    file=source,
                    sample=str(item.get("id")),
                    field="judges",
                )
            for name, raw in group.items():
                seen.setdefault(str(name), []).append(raw)
    return seen


def _infer_criteria(values: Mapping[str, list[Any]]) -> tuple[list[Criterion], list[str]]:
    """Guess each criterion's kind and options from the labels it received."""
    criteria: list[Criterion] = []
    notes: list[str] = []
    for name, raws in values.items():
        labels = [
            r
            for r in raws
            if r is not None
            and not isinstance(r, Mapping)
            and not (
                isinstance(r, str) and (not r.strip() or r.strip().lower().startswith("error:"))
            )
        ]
        words = {str(r).strip().upper() for r in labels}
        if not labels or words <= _BINARY_WORDS:
            criteria.append(Criterion(name=name))
            continue
        na = sorted({str(r).strip() for r in labels if str(r).strip().upper() in _NA_WORDS})
        rest = [r for r in labels if str(r).strip().upper() not in _NA_WORDS]
        numbers = _as_integers(rest)
        if numbers is not None and len(set(numbers)) >= 2:
            low, high = min(numbers), max(numbers)
            options = [Option(label=str(v)) for v in range(low, high + 1)]
            options += [Option(label=lab, na=True) for lab in na]
            criteria.append(Criterion(name=name, kind="ordinal", options=tuple(options)))
            notes.append(
                f"criterion {name!r}: ordinal scale {low}..{high} inferred from the labels; "
                "declare the criteria to fix the full scale"
            )
            continue
        distinct = sorted({str(r).strip() for r in rest}, key=str.lower)
        observed = len(distinct)
        while len(distinct) < 2:  # a criterion needs two real options; say they were padded
            distinct.append(f"(unobserved {len(distinct) + 1})")
        options = [Option(label=lab) for lab in distinct] + [
            Option(label=lab, na=True) for lab in na
        ]
        criteria.append(Criterion(name=name, kind="nominal", options=tuple(options)))
        padded = (
            f", padded to {len(distinct)} with placeholders" if observed < len(distinct) else ""
        )
        notes.append(
            f"criterion {name!r}: nominal options inferred from the labels ({observed}{padded})"
        )
    return criteria, notes


def _as_integers(values: list[Any]) -> list[int] | None:
    out: list[int] = []
    for raw in values:
        if isinstance(raw, bool):
            return None
        if isinstance(raw, int):
            out.append(raw)
            continue
        if isinstance(raw, float) and raw.is_integer():
            out.append(int(raw))
            continue
        try:
            number = float(str(raw).strip())
        except ValueError:
            return None
        if not number.is_integer():
            return None
        out.append(int(number))
    if out and max(out) - min(out) > 100:
        return None
    return out


def _from_csv(text: str, source: str, declared: list[Criterion] | None) -> LabelSet:
    reader = csv.DictReader(io.StringIO(text))
    header = [h.strip() for h in (reader.fieldnames or [])]
    lowered = [h.lower() for h in header]
    id_col = next((header[lowered.index(k)] for k in _ID_COLUMNS if k in lowered), None)
    if id_col is None or "criterion" not in lowered:
        raise CalibrationError(
            "a labels CSV needs an item_id column and a criterion column",
            file=source,
            field="header",
        )
    crit_col = header[lowered.index("criterion")]
    long_form = "rater" in lowered and "label" in lowered
    if not long_form and HUMAN_RATER not in lowered:
        raise CalibrationError(
            "a labels CSV needs either rater+label columns (long form) or a human column (wide "
            "form)",
            file=source,
            field="header",
        )
    items: dict[str, dict[str, Any]] = {}
    for line, raw_row in enumerate(reader, start=2):
        row = {(k or "").strip(): (v if v is not None else "") for k, v in raw_row.items()}
        item_id = row.get(id_col, "").strip()
        criterion = row.get(crit_col, "").strip()
        if not item_id or not criterion:
            raise CalibrationError(
                f"line {line}: item_id and criterion must not be empty", file=source
            )
        item = items.setdefault(item_id, {"id": item_id, "human": {}, "judges": {}})
        if long_form:
            rater = row[header[lowered.index("rater")]].strip()
            label = row[header[lowered.index("label")]].strip()
            pairs = [(rater, label)]
        else:
            pairs = [(h, row.get(h, "").strip()) for h in header if h not in (id_col, crit_col)]
        for rater, label in pairs:
            if not rater:
                raise CalibrationError(f"line {line}: empty rater name", file=source)
            cell: Any = (
                None
                if not label
                else ({"error": label} if label.lower().startswith("error:") else label)
            )
            target = (
                item["human"]
                if rater.lower() == HUMAN_RATER
                else item["judges"].setdefault(rater, {})
            )
            if criterion in target and cell is not None and target[criterion] is not None:
                raise CalibrationError(
                    f"line {line}: a second label for this item, criterion and rater",
                    file=source,
                    sample=item_id,
                    field=f"{rater}.{criterion}",
                )
            if cell is not None or criterion not in target:
                target[criterion] = cell
    if not items:
        raise CalibrationError("no rows", file=source)
    rows = list(items.values())
    notes: list[str] = []
    if declared is not None:
        criteria = declared
    else:
        criteria, notes = _infer_criteria(_collect_from_items(rows, source))
    data = {"criteria": [c.model_dump(exclude_none=True) for c in criteria], "items": rows}
    try:
        document = LabelsDocument.model_validate(data)
    except ValidationError as exc:
        raise _translate(exc, source, raw_items=rows) from None
    return labels_from_document(document, source=source, notes=notes)
