"""The published JSON Schema of ``assay.report.v1``, generated from the pydantic report models.

The schema ships as ``assay/schemas/report.v1.json`` so that dashboards and CI jobs can validate
a report without importing assay. It is generated, never edited by hand: after changing
:mod:`assay.report.model`, run ``python -m assay.schema_files`` to rewrite it (a test
fails while the shipped file and the models disagree).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from assay import schema_files
from assay.report.model import REPORT_SCHEMA, Report

SCHEMA_FILE = "report.v1.json"


def generate_schema() -> dict[str, Any]:
    """The JSON Schema of a report as it is written (serialisation mode)."""
    return schema_files.generate(
        Report,
        SCHEMA_FILE,
        comment=f"{REPORT_SCHEMA}; generated from assay.report.model by assay.schema_files",
    )


def render_schema() -> str:
    """The schema document exactly as it is shipped."""
    return schema_files.render(generate_schema())


def schema_path() -> Path:
    """Where the shipped schema lives in the source tree (the file ``write_schema`` writes)."""
    return schema_files.source_path(SCHEMA_FILE)


def write_schema(path: str | Path | None = None) -> Path:
    """Regenerate the shipped schema file from the models; returns the path written."""
    return schema_files.write(generate_schema(), SCHEMA_FILE, path)


def load_schema() -> dict[str, Any]:
    """The shipped schema, read from the installed package (works from a wheel too)."""
    return schema_files.load(SCHEMA_FILE)
