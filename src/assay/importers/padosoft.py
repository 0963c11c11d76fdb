"""padosoft/eval-harness calibration cases (``eval-harness.calibration.v1``) as an assay dataset
for ``assay calibrate --metric llm-as-judge``.

The harness's cases file is ``{schema_version?, cases: [{id, input, expected, actual,
human_verdict: pass|fail}]}``: one answer per case with a person's pass/fail verdict on it. Each
case becomes a sample with the same id, input and expected output, the answer as
``metadata.answer`` and the verdict as ``metadata.human_pass`` (and ``human_score`` 1 or 0, the
score the harness's own 0.5 pass threshold turns back into that verdict).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from assay.errors import ForeignFileError
from assay.importers.common import Imported, notes, parse_model, read_foreign, unknown_keys

CALIBRATION_SCHEMA: Final = "eval-harness.calibration.v1"


class Case(BaseModel):
    """One calibration case."""

    model_config = ConfigDict(extra="allow")

    id: str = Field(min_length=1)
    input: dict[str, Any]
    expected: str
    actual: str
    human_verdict: Literal["pass", "fail"]

    @field_validator("id", mode="before")
    @classmethod
    def _id_string(cls, value: object) -> Any:
        return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


class CasesFile(BaseModel):
    """The whole cases file."""

    model_config = ConfigDict(extra="allow")

    schema_version: Literal["eval-harness.calibration.v1"] = CALIBRATION_SCHEMA
    name: str | None = None
    cases: list[Any] = Field(min_length=1)


def import_cases(path: Path) -> Imported:
    """The cases file at ``path`` as an ``assay.dataset.v1`` document."""
    source = str(path)
    data = parse_model(CasesFile, read_foreign(path), source)
    unmapped = unknown_keys(data, "file")
    samples: list[dict[str, Any]] = []
    seen: set[str] = set()
    for index, raw in enumerate(data.cases):
        case = parse_model(Case, raw, source, _label(raw, index))
        if case.id in seen:
            raise ForeignFileError("duplicate case id", file=source, sample=case.id, field="id")
        seen.add(case.id)
        unmapped += unknown_keys(case, f"case '{case.id}'")
        passed = case.human_verdict == "pass"
        samples.append(
            {
                "id": case.id,
                "input": case.input,
                "expected_output": case.expected,
                "metadata": {
                    "answer": case.actual,
                    "human_pass": passed,
                    "human_score": 1.0 if passed else 0.0,
                },
            }
        )
    document = {
        "schema_version": "assay.dataset.v1",
        "name": data.name or path.stem,
        "samples": samples,
    }
    return Imported("dataset", document, notes(unmapped))


def _label(raw: object, index: int) -> str | int:
    """A case's id for an error message when it has a usable one, else its index."""
    if isinstance(raw, dict) and isinstance(raw.get("id"), str) and raw["id"]:
        return str(raw["id"])
    return index
