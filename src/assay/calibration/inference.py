"""Criteria inferred from the labels when a file does not declare them (JSONL without header,
CSV): verdict strings -> binary, integers -> ordinal over the full integer range between the
smallest and largest label, anything else -> nominal. Each guess comes with a note."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from assay.calibration.model import Criterion, Option
from assay.errors import CalibrationError

_BINARY_WORDS = {"MET", "UNMET", "CANNOT_ASSESS", "CANNOT ASSESS", "TRUE", "FALSE"}
_NA_WORDS = {"NA", "N/A", "NOT APPLICABLE"}


def collect_from_items(items: list[Any], source: str) -> dict[str, list[Any]]:
    """Every raw label per criterion name, from the human, judge and consensus verdicts."""
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


def infer_criteria(values: Mapping[str, list[Any]]) -> tuple[list[Criterion], list[str]]:
    """Guess each criterion's kind and options from the labels it received."""
    criteria: list[Criterion] = []
    notes: list[str] = []
    for name, raws in values.items():
        criterion, note = _infer_one(name, _real_labels(raws))
        criteria.append(criterion)
        if note is not None:
            notes.append(note)
    return criteria, notes


def _real_labels(raws: list[Any]) -> list[Any]:
    """The labels that are verdicts: not empty, not a failed judgment."""
    return [
        r
        for r in raws
        if r is not None
        and not isinstance(r, Mapping)
        and not (isinstance(r, str) and (not r.strip() or r.strip().lower().startswith("error:")))
    ]


def _infer_one(name: str, labels: list[Any]) -> tuple[Criterion, str | None]:
    """One criterion from its labels, and the note that says what was guessed (binary: none)."""
    words = {str(r).strip().upper() for r in labels}
    if not labels or words <= _BINARY_WORDS:
        return Criterion(name=name), None
    na = _distinct([r for r in labels if str(r).strip().upper() in _NA_WORDS])
    rest = [r for r in labels if str(r).strip().upper() not in _NA_WORDS]
    numbers = _as_integers(rest)
    if numbers is not None and len(set(numbers)) >= 2:
        return _ordinal(name, numbers, na)
    return _nominal(name, rest, na)


def _ordinal(name: str, numbers: list[int], na: list[str]) -> tuple[Criterion, str]:
    """An ordinal scale over every integer from the smallest to the largest label."""
    low, high = min(numbers), max(numbers)
    options = [Option(label=str(v)) for v in range(low, high + 1)]
    options += [Option(label=lab, na=True) for lab in na]
    note = (
        f"criterion {name!r}: ordinal scale {low}..{high} inferred from the labels; "
        "declare the criteria to fix the full scale"
    )
    return Criterion(name=name, kind="ordinal", options=tuple(options)), note


def _nominal(name: str, rest: list[Any], na: list[str]) -> tuple[Criterion, str]:
    """Nominal options from the distinct labels, padded to the two a criterion needs."""
    distinct = _distinct(rest)
    observed = len(distinct)
    while len(distinct) < 2:  # a criterion needs two real options; say they were padded
        distinct.append(f"(unobserved {len(distinct) + 1})")
    options = [Option(label=lab) for lab in distinct] + [Option(label=lab, na=True) for lab in na]
    padded = f", padded to {len(distinct)} with placeholders" if observed < len(distinct) else ""
    note = f"criterion {name!r}: nominal options inferred from the labels ({observed}{padded})"
    return Criterion(name=name, kind="nominal", options=tuple(options)), note


def _as_integers(values: list[Any]) -> list[int] | None:
    """The values as integers when every one is integral and the range is at most 100."""
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


def _distinct(labels: list[Any]) -> list[str]:
    """The labels as options, sorted: one per label ignoring case, as options are matched
    ('nan' and 'NaN' are one option; its spelling is the first in sort order)."""
    folded: dict[str, str] = {}
    for label in sorted({str(r).strip() for r in labels}):
        folded.setdefault(label.lower(), label)
    return sorted(folded.values(), key=str.lower)
