"""Every model-generated schema assay ships equals what its model generates today."""

from __future__ import annotations

import jsonschema
import pytest

from assay import schema_files

GENERATORS = schema_files.generators()


@pytest.mark.parametrize("name", sorted(GENERATORS))
def test_shipped_schema_is_current(name: str) -> None:
    generated = GENERATORS[name]()
    assert schema_files.load(name) == generated, (
        f"{name} is stale: run `python -m assay.schema_files`"
    )
    assert generated["$id"] == f"urn:assay:schema:{name.removesuffix('.json')}"
    jsonschema.Draft202012Validator.check_schema(generated)


def test_write_renders_the_file(tmp_path) -> None:
    target = schema_files.write(
        GENERATORS["report.v1.json"](), "report.v1.json", tmp_path / "x.json"
    )
    assert target.read_text(encoding="utf-8") == schema_files.render(GENERATORS["report.v1.json"]())
