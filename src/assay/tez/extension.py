"""Reading the eval extensions already inside a bundle (both ids recognised).

Eval metrics are informational: a malformed record is a warning, never a load failure. The
vendor id keeps its files in ``extensions/com.ragu.eval-metrics/`` (``eval-metrics.json`` and
assay's per-query ``records/<query_id>.json``); ``tezit-eval`` is found either as a directory
(``extensions/tezit-eval/tezit-eval.json``, what assay writes) or inline in
``manifest.extensions["tezit-eval"]`` (the Addendum's placement).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from assay.data.bounded import loads_json
from assay.errors import TezError
from assay.tez.bundle import Bundle
from assay.tez.records import STANDARD_EXTENSION_ID, VENDOR_EXTENSION_ID
from assay.tez.schemas import (
    ENTERPRISE_SCHEMA,
    EXTENSION_MANIFEST_SCHEMA,
    JSON,
    VENDOR_SCHEMA,
    schema_errors,
)

VENDOR_DIR = f"extensions/{VENDOR_EXTENSION_ID}"
STANDARD_DIR = f"extensions/{STANDARD_EXTENSION_ID}"
VENDOR_FILE = "eval-metrics.json"
STANDARD_FILE = "tezit-eval.json"
RECORDS_DIR = "records"


@dataclass(slots=True)
class EvalState:
    """What the bundle already holds; ``warnings`` lists every schema problem found."""

    vendor_latest: dict[str, Any] | None = None
    vendor_records: dict[str, dict[str, Any]] = field(default_factory=dict)
    vendor_invalid: list[str] = field(default_factory=list)
    tezit_report: dict[str, Any] | None = None
    tezit_inline: dict[str, Any] | None = None
    warnings: list[str] = field(default_factory=list)

    @property
    def preferred(self) -> str | None:
        """The id a reader should use: tezit-eval when present (migration rule 5)."""
        if self.tezit_report is not None or self.tezit_inline is not None:
            return STANDARD_EXTENSION_ID
        if self.vendor_latest is not None or self.vendor_records:
            return VENDOR_EXTENSION_ID
        return None


def _load_json(bundle: Bundle, rel: str, state: EvalState) -> Any:
    try:
        label = f"{bundle.source}:{rel}"
        return loads_json(bundle.read_text(rel), lambda m: TezError(m, file=label))
    except TezError as exc:
        state.warnings.append(str(exc))
    return None


def _checked(doc: JSON, schema: str, rel: str, state: EvalState) -> bool:
    problems = schema_errors(doc, schema)
    for problem in problems[:3]:
        state.warnings.append(f"{rel}: fails {schema}: {problem}")
    return not problems


def read_eval_state(bundle: Bundle) -> EvalState:
    """Load and schema-check every eval document in the bundle (never raises for content)."""
    state = EvalState()
    files = set(bundle.files)
    for ext_dir in (VENDOR_DIR, STANDARD_DIR):
        rel = f"{ext_dir}/manifest.json"
        if rel in files and (doc := _load_json(bundle, rel, state)) is not None:
            _checked(doc, EXTENSION_MANIFEST_SCHEMA, rel, state)
    rel = f"{VENDOR_DIR}/{VENDOR_FILE}"
    if (
        rel in files
        and (doc := _load_json(bundle, rel, state)) is not None
        and _checked(doc, VENDOR_SCHEMA, rel, state)
    ):
        state.vendor_latest = doc
    prefix = f"{VENDOR_DIR}/{RECORDS_DIR}/"
    for name in sorted(f for f in files if f.startswith(prefix) and f.endswith(".json")):
        doc = _load_json(bundle, name, state)
        if doc is not None and _checked(doc, VENDOR_SCHEMA, name, state):
            state.vendor_records[name[len(prefix) : -len(".json")]] = doc
        else:
            state.vendor_invalid.append(name)
    rel = f"{STANDARD_DIR}/{STANDARD_FILE}"
    if (
        rel in files
        and (doc := _load_json(bundle, rel, state)) is not None
        and _checked(doc, ENTERPRISE_SCHEMA, rel, state)
    ):
        state.tezit_report = doc
    inline = bundle.manifest.get("extensions")
    if isinstance(inline, dict) and isinstance(inline.get(STANDARD_EXTENSION_ID), dict):
        state.tezit_inline = inline[STANDARD_EXTENSION_ID]
    return state
