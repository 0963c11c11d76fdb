"""Shared helpers: validate every report a test produces against the shipped JSON Schema."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import jsonschema

from assay.cli.schema_files import load
from assay.report.model import Report


@cache
def _validator() -> jsonschema.Draft202012Validator:
    schema = load("report.v2.json")
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def check_report(report: Report | str | dict[str, Any]) -> dict[str, Any]:
    """The report as JSON data, after asserting it is valid against report.v2.json."""
    if isinstance(report, Report):
        data = json.loads(report.model_dump_json())
    elif isinstance(report, str):
        data = json.loads(report)
    else:
        data = report
    errors = sorted(_validator().iter_errors(data), key=lambda e: list(e.absolute_path))
    assert not errors, "; ".join(f"{list(e.absolute_path)}: {e.message}" for e in errors[:5])
    return data
