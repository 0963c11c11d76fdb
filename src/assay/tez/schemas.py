"""The JSON Schemas the tez package ships, and validation of documents against them.

``tez-eval-metrics.schema.json`` is the schema of seed 004 (``com.ragu.eval-metrics`` 1.0.0) and
``tez-enterprise-tip-eval.schema.json`` the published ``tezit-eval`` schema (tezit-protocol/spec,
CC BY 4.0), both unchanged. The others are generated from assay's pydantic models by
``python -m assay.cli.schema_files``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from functools import cache
from importlib import resources
from typing import Any, TypeAlias

from assay.errors import TezError

JSON: TypeAlias = str | int | float | bool | Mapping[str, "JSON"] | Sequence["JSON"] | None
"""A JSON document as the schema validator reads it."""

VENDOR_SCHEMA = "tez-eval-metrics.schema.json"
ENTERPRISE_SCHEMA = "tez-enterprise-tip-eval.schema.json"
EXTENSION_MANIFEST_SCHEMA = "tez-extension-manifest.schema.json"
SESSION_SCHEMA = "tez-session.schema.json"
SCORE_REPORT_SCHEMA = "tez-score-report.schema.json"


@cache
def load_schema(name: str) -> dict[str, Any]:
    """A shipped schema by file name (package data under ``assay/schemas``)."""
    text = resources.files("assay").joinpath("schemas", name).read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


_DATE_TIME = re.compile(
    r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[Zz]|[+-]\d{2}:\d{2})$"
)


def is_date_time(value: object) -> bool:
    """RFC 3339 ``date-time`` (checked here so validation never depends on optional packages)."""
    if not isinstance(value, str):
        return True  # format applies to strings only
    if not _DATE_TIME.match(value):
        return False
    try:
        datetime.fromisoformat(re.sub(r"[Zz]$", "+00:00", value.replace("t", "T", 1)))
    except ValueError:
        return False
    return True


def schema_errors(document: JSON, name: str) -> list[str]:
    """Every violation of ``document`` against shipped schema ``name`` (empty when valid)."""
    import jsonschema

    schema = load_schema(name)
    validator_cls = jsonschema.validators.validator_for(schema)
    checker = jsonschema.FormatChecker()
    checker.checks("date-time")(is_date_time)
    validator = validator_cls(schema, format_checker=checker)
    errors = sorted(validator.iter_errors(document), key=lambda e: list(e.absolute_path))
    return [f"{_path(e.absolute_path)}: {e.message}" for e in errors]


def check_document(document: JSON, name: str, *, target: str) -> None:
    """Raise :class:`TezError` unless ``document`` is valid; called before every write."""
    problems = schema_errors(document, name)
    if problems:
        raise TezError(
            f"refusing to write: document fails {name}: {problems[0]}"
            + (f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""),
            file=target,
        )


def _path(parts: Iterable[str | int]) -> str:
    out = "$"
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out
