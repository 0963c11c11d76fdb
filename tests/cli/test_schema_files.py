"""Every model-generated schema assay ships is, byte for byte, what its model generates today."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import jsonschema
import pytest

from assay.cli import schema_files

# Published by others and shipped unchanged (docs/tez.md); every other file is generated.
VENDORED = {"tez-eval-metrics.schema.json", "tez-enterprise-tip-eval.schema.json"}
# Published before and kept unchanged for documents written then (read as v2, see report.upgrade).
FROZEN = {"report.v1.json"}


@pytest.mark.parametrize("name", sorted(schema_files.SHIPPED))
def test_shipped_schema_is_current(name: str) -> None:
    generated = schema_files.generate(name)
    shipped = schema_files.source_path(name).read_text(encoding="utf-8")
    assert shipped == schema_files.render(generated), (
        f"{name} is stale: run `python -m assay.cli.schema_files`"
    )
    assert schema_files.load(name) == generated
    assert generated["$id"] == f"urn:assay:schema:{name.removesuffix('.json')}"
    jsonschema.Draft202012Validator.check_schema(generated)


def test_every_schema_file_is_generated_or_vendored() -> None:
    names = {
        entry.name
        for entry in resources.files("assay").joinpath("schemas").iterdir()
        if entry.name.endswith(".json")
    }
    assert names == set(schema_files.SHIPPED) | VENDORED | FROZEN


def test_write_renders_the_file(tmp_path: Path) -> None:
    target = schema_files.write("report.v2.json", tmp_path / "nested" / "x.json")
    assert target.read_text(encoding="utf-8") == schema_files.render(
        schema_files.generate("report.v2.json")
    )
