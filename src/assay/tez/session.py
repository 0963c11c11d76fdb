"""Interrogation-session input and expectations (ground truth) for scoring.

Session file (JSON or YAML, schema ``assay.tez-session.v1``; JSONL with one turn per line and a
``session_id`` on each line is accepted too)::

    {"session_id": "tip-sess-1a2b", "turns": [
       {"query_id": "q-001", "query": "...", "response": "... [[item:loc]]",
        "classification": "grounded", "chunks_used": ["item-a:p2", {"item_id": "item-b"}]}]}

The HTTP-API names are accepted as aliases (``answer`` for ``response``, ``exchanges`` for
``turns``, classification ``partially_grounded`` -> ``partial``, ``insufficient_context`` and
``out_of_scope`` -> ``abstention``).

Expectations use the shape of the bundles' ``test-queries.json`` (both shapes: the top-level
array of ``{id, expected_classification, expected_citations, passing_criteria}`` and the object
``{test_queries: [{id, expected_behavior: {type, must_cite, must_contain, ...}}]}``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from assay.data.documents import iter_jsonl, parse_document, read_text
from assay.errors import TezError
from assay.tez.records import SessionFile

_CLASSIFICATION_ALIASES = {
    "partially_grounded": "partial",
    "insufficient_context": "abstention",
    "out_of_scope": "abstention",
    "abstain": "abstention",
}
Behavior = Literal["answer", "abstain", "partial"]


@dataclass(frozen=True, slots=True)
class Expectation:
    """Ground truth for one query: what a correct response does."""

    query_id: str
    behavior: Behavior
    relevant_items: tuple[str, ...]
    must_contain_groups: tuple[tuple[str, ...], ...]
    must_not_contain: tuple[str, ...]

    def contains_groups_met(self, text: str) -> int:
        low = text.lower()
        return sum(1 for group in self.must_contain_groups if any(p.lower() in low for p in group))

    def forbidden_hits(self, text: str) -> list[str]:
        low = text.lower()
        return [p for p in self.must_not_contain if p and p.lower() in low]


# --------------------------------------------------------------------------- sessions


def load_session(path: str | Path) -> SessionFile:
    """Read and validate a session file; TezError names the file, turn and field."""
    path = Path(path)
    text = read_text(path, TezError)
    if path.suffix.lower() == ".jsonl":
        lines = list(iter_jsonl(text, path, TezError))
        ids = {row.get("session_id") for _, row in lines if isinstance(row, Mapping)}
        if len(ids) != 1 or not all(isinstance(i, str) for i in ids):
            raise TezError("every JSONL line needs the same string session_id", file=str(path))
        data: Any = {
            "session_id": ids.pop(),
            "turns": [_drop(row, "session_id") for _, row in lines],
        }
    else:
        data = parse_document(text, path, TezError)
    return session_from_data(data, source=str(path))


def session_from_data(data: object, *, source: str = "<session>") -> SessionFile:
    if not isinstance(data, Mapping):
        raise TezError("a session must be a mapping with session_id and turns", file=source)
    raw = dict(data)
    if "turns" not in raw and "exchanges" in raw:
        raw["turns"] = raw.pop("exchanges")
    turns = raw.get("turns")
    if isinstance(turns, list):
        raw["turns"] = [_normalise_turn(t) if isinstance(t, Mapping) else t for t in turns]
    try:
        session = SessionFile.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = list(err["loc"])
        sample = None
        if len(loc) >= 2 and loc[0] == "turns" and isinstance(loc[1], int):
            sample = _turn_label(raw.get("turns"), loc[1])
            loc = loc[2:]
        field = ".".join(str(p) for p in loc) or None
        raise TezError(err["msg"], file=source, sample=sample, field=field) from None
    seen: set[str] = set()
    for turn in session.turns:
        if turn.query_id in seen:
            raise TezError("query_id repeats within the session", file=source, sample=turn.query_id)
        seen.add(turn.query_id)
    return session


def _drop(row: object, key: str) -> Any:
    return {k: v for k, v in row.items() if k != key} if isinstance(row, Mapping) else row


def _turn_label(turns: object, index: int) -> str | int:
    if isinstance(turns, list) and index < len(turns) and isinstance(turns[index], Mapping):
        qid = turns[index].get("query_id")
        if isinstance(qid, str) and qid:
            return qid
    return index


def _normalise_turn(turn: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(turn)
    if "response" not in out and "answer" in out:
        out["response"] = out.pop("answer")
    if isinstance(out.get("response"), Mapping) and isinstance(out["response"].get("text"), str):
        body = out["response"]  # a TIP response object: take its text and classification
        out["response"] = body["text"]
        out.setdefault("classification", body.get("classification"))
    if isinstance(out.get("classification"), str):
        value = out["classification"].strip().lower()
        out["classification"] = _CLASSIFICATION_ALIASES.get(value, value)
    if "chunks_used" not in out and isinstance(out.get("context_chunks_used"), list):
        out["chunks_used"] = out.pop("context_chunks_used")
    chunks = out.get("chunks_used")
    if isinstance(chunks, list):
        out["chunks_used"] = [_chunk(c) for c in chunks]
    return out


def _chunk(raw: object) -> Any:
    if isinstance(raw, str):
        item, _, loc = raw.partition(":")
        return {"item_id": item.strip(), "location": loc.strip() or None}
    if isinstance(raw, Mapping):
        item = raw.get("item_id", raw.get("source_item_id"))
        return {"item_id": item, "location": raw.get("location")}
    return raw


# --------------------------------------------------------------------------- expectations


def load_expectations(path: str | Path) -> dict[str, Expectation]:
    """Expectations keyed by query id, from a ``test-queries.json``-shaped file."""
    path = Path(path)
    return expectations_from_data(
        parse_document(read_text(path, TezError), path, TezError), source=str(path)
    )


def expectations_from_data(
    data: object, *, source: str = "<expectations>"
) -> dict[str, Expectation]:
    if isinstance(data, Mapping) and isinstance(data.get("test_queries"), list):
        rows = data["test_queries"]
    elif isinstance(data, list):
        rows = data
    else:
        raise TezError(
            "expected a list of test queries or an object with 'test_queries'", file=source
        )
    out: dict[str, Expectation] = {}
    for index, row in enumerate(rows):
        if not isinstance(row, Mapping) or not isinstance(row.get("id"), str) or not row["id"]:
            raise TezError("test query has no string id", file=source, sample=index)
        if row["id"] in out:
            raise TezError("test query id repeats", file=source, sample=row["id"])
        try:
            out[row["id"]] = (
                _from_behavior(row)
                if isinstance(row.get("expected_behavior"), Mapping)
                else _from_criteria(row)
            )
        except (TypeError, ValueError) as exc:
            raise TezError(str(exc), file=source, sample=row["id"]) from None
    return out


def _strings(value: object, what: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise ValueError(f"'{what}' must be a string or a list of strings")


def _behavior(raw: object) -> Behavior:
    value = str(raw or "").strip().lower()
    if value in ("abstain", "abstention", "insufficient_context", "out_of_scope"):
        return "abstain"
    if value in ("partial", "partially_grounded"):
        return "partial"
    if value in ("answer", "grounded", "inferred"):
        return "answer"
    raise ValueError(f"unknown expected behaviour {raw!r}")


def _from_behavior(row: Mapping[str, Any]) -> Expectation:
    eb = row["expected_behavior"]
    phrases = _strings(eb.get("must_contain"), "must_contain")
    mode = str(eb.get("must_contain_mode", "all")).lower()
    if mode not in ("any", "all"):
        raise ValueError("'must_contain_mode' must be 'any' or 'all'")
    groups = ((phrases,) if phrases else ()) if mode == "any" else tuple((p,) for p in phrases)
    return Expectation(
        query_id=row["id"],
        behavior=_behavior(eb.get("type")),
        relevant_items=_unique(_strings(eb.get("must_cite"), "must_cite")),
        must_contain_groups=groups,
        must_not_contain=_strings(eb.get("must_not_contain"), "must_not_contain"),
    )


def _from_criteria(row: Mapping[str, Any]) -> Expectation:
    criteria = row.get("passing_criteria") or {}
    if not isinstance(criteria, Mapping):
        raise ValueError("'passing_criteria' must be a mapping")
    groups: list[tuple[str, ...]] = []
    if must := _strings(criteria.get("must_contain"), "must_contain"):
        groups += [(p,) for p in must]
    for key in sorted(k for k in criteria if re.fullmatch(r"must_contain_any(?:_\d+)?", k)):
        if phrases := _strings(criteria[key], key):
            groups.append(phrases)
    relevant = _strings(row.get("expected_citations"), "expected_citations")
    relevant += _strings(criteria.get("must_cite"), "must_cite")
    return Expectation(
        query_id=row["id"],
        behavior=_behavior(
            row.get("expected_classification") or criteria.get("classification_must_be")
        ),
        relevant_items=_unique(relevant),
        must_contain_groups=tuple(groups),
        must_not_contain=_strings(criteria.get("must_not_contain"), "must_not_contain"),
    )


def _unique(values: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(values))
