"""The JSON Schemas assay ships, generated from its pydantic models.

Every document assay writes has a schema under ``assay/schemas/`` so dashboards and CI jobs can
validate it without importing assay. Schemas are generated, never edited by hand: after changing
a model, run ``python -m assay.schema_files`` to rewrite every shipped file (tests fail while a
shipped file and its model disagree).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

DRAFT = "https://json-schema.org/draft/2020-12/schema"


def generate(
    model: type[BaseModel],
    file_name: str,
    *,
    mode: Literal["validation", "serialization"] = "serialization",
    comment: str | None = None,
    drop: tuple[str, ...] = (),
) -> dict[str, Any]:
    """A model's schema with a draft 2020-12 header and ``$id`` ``urn:assay:schema:<file stem>``."""
    schema = model.model_json_schema(mode=mode)
    for name in drop:
        schema.get("properties", {}).pop(name, None)
    head: dict[str, Any] = {
        "$schema": DRAFT,
        "$id": f"urn:assay:schema:{file_name.removesuffix('.json')}",
    }
    if comment:
        head["$comment"] = comment
    return {**head, **schema}


def render(schema: dict[str, Any]) -> str:
    """The file text: stable key order, two-space indent, trailing newline."""
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def source_path(file_name: str) -> Path:
    """Where a shipped schema lives in the source tree."""
    return Path(__file__).resolve().parent / "schemas" / file_name


def load(file_name: str) -> dict[str, Any]:
    """A shipped schema, read from the installed package (works from a wheel too)."""
    text = resources.files("assay").joinpath("schemas", file_name).read_text(encoding="utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def write(schema: dict[str, Any], file_name: str, path: str | Path | None = None) -> Path:
    target = Path(path) if path is not None else source_path(file_name)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(render(schema), encoding="utf-8")
    return target


def generators() -> dict[str, Callable[[], dict[str, Any]]]:
    """Every model-generated schema assay ships, by file name."""
    from assay import baseline, comparison, gate
    from assay.adversarial import brief, history
    from assay.calibration import result
    from assay.providers import settings
    from assay.report import schema as report_schema
    from assay.systems import model as systems_model
    from assay.tez import schemas as tez_schemas

    found: dict[str, Callable[[], dict[str, Any]]] = {
        "report.v1.json": report_schema.generate_schema,
        "gate.v1.json": gate.json_schema,
        "baseline.v1.json": baseline.json_schema,
        "comparison.v1.json": comparison.json_schema,
        "calibration.v1.json": result.json_schema,
        "providers.v1.json": settings.providers_block_schema,
        "brief.v1.json": brief.json_schema,
        "adversarial-runs.v1.json": history.json_schema,
        "systems.v1.json": systems_model.json_schema,
    }
    for name, model in tez_schemas.GENERATED.items():
        found[name] = lambda model=model, name=name: tez_schemas.generated_schema(model, name)
    return found


def main() -> None:
    for name, build in generators().items():
        print(write(build(), name))


if __name__ == "__main__":
    main()
