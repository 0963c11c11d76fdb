"""The model-derived tez schemas shipped in the package match the models."""

from __future__ import annotations

from importlib import resources

import jsonschema
import pytest

from assay.errors import TezError
from assay.tez.records import STANDARD_MANIFEST, VENDOR_MANIFEST, SessionFile
from assay.tez.schemas import (
    check_document,
    load_schema,
    schema_errors,
)

# That the generated tez schemas match their models: tests/cli/test_schema_files.py.


def test_every_shipped_tez_schema_is_a_valid_2020_12_schema() -> None:
    names = [
        p.name
        for p in resources.files("assay").joinpath("schemas").iterdir()
        if p.name.startswith("tez-")
    ]
    assert {"tez-eval-metrics.schema.json", "tez-enterprise-tip-eval.schema.json"} <= set(names)
    for name in names:
        jsonschema.Draft202012Validator.check_schema(load_schema(name))


def test_extension_manifests_validate() -> None:
    for manifest in (VENDOR_MANIFEST, STANDARD_MANIFEST):
        assert (
            schema_errors(manifest.model_dump(mode="json"), "tez-extension-manifest.schema.json")
            == []
        )


def test_session_schema_accepts_what_the_model_accepts() -> None:
    doc = {
        "schema_version": "assay.tez-session.v1",
        "session_id": "s",
        "turns": [
            {"query_id": "q", "query": "Q", "response": "R", "chunks_used": [{"item_id": "a"}]}
        ],
    }
    SessionFile.model_validate(doc)
    assert schema_errors(doc, "tez-session.schema.json") == []


def test_check_document_names_the_first_problem() -> None:
    with pytest.raises(TezError, match=r"x\.json.*\$\.evaluated_at"):
        check_document(
            {
                "session_id": "s",
                "evaluated_at": "yesterday",
                "metrics": dict.fromkeys(
                    [
                        "relevance",
                        "faithfulness",
                        "citation_accuracy",
                        "completeness",
                        "abstention_rate",
                    ],
                    1.0,
                ),
            },
            "tez-enterprise-tip-eval.schema.json",
            target="x.json",
        )


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("2026-02-05T14:30:00Z", True),
        ("2026-02-05T14:30:00.123+02:00", True),
        ("2026-02-30T00:00:00Z", False),
        ("2026-02-05", False),
        ("yesterday", False),
        ("2026-02-05T14:30:00", False),
    ],
)
def test_date_time_format(value: str, ok: bool) -> None:
    from assay.tez.schemas import is_date_time

    assert is_date_time(value) is ok
