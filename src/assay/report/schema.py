"""The published JSON Schema of ``assay.report.v1``, generated from the pydantic report models.

The schema ships as ``assay/schemas/report.v1.json`` so that dashboards and CI jobs can validate
a report without importing assay. It is generated, never edited by hand: after changing
:mod:`assay.report.model`, run ``python -m assay.report.schema`` to rewrite the file (a test
fails while the shipped file and the models disagree).
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

from assay.report.model import REPORT_SCHEMA, Report

SCHEMA_FILE = "report.v1.json"
SCHEMA_ID = "urn:assay:schema:report.v1"


def generate_schema() -> dict[str, Any]:
    """The JSON Schema of a report as it is written (serialisation mode)."""
    schema = Report.model_json_schema(mode="serialization")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "$comment": f"{REPORT_SCHEMA}; generated from assay.report.model by assay.report.schema",
        **schema,
    }


def render_schema() -> str:
    """The schema document exactly as it is shipped (stable key order, trailing newline)."""
    return json.dumps(generate_schema(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def schema_path() -> Path:
    """Where the shipped schema lives in the source tree (the file ``write_schema`` writes)."""
    return Path(__file__).resolve().parent.parent / "schemas" / SCHEMA_FILE


def write_schema(path: str | Path | None = None) -> Path:
    """Regenerate the shipped schema file from the models; returns the path written."""
    target = Path(path) if path is not None else schema_path()
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(render_schema(), encoding="utf-8")
    return target


def load_schema() -> dict[str, Any]:
    """The shipped schema, read from the installed package (works from a wheel too)."""
    text = resources.files("assay").joinpath("schemas", SCHEMA_FILE).read_text(encoding="utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


if __name__ == "__main__":
    print(write_schema())
