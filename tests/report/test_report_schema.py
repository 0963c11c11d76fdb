"""The shipped report JSON Schema: generated from the models, and every report validates.

Also: reports carry no sample input, expected output or metadata (safe as CI artifacts).
"""

from __future__ import annotations

import copy
from pathlib import Path

import jsonschema
import pytest

from assay.cli.schema_files import load
from assay.data.dataset import Dataset, Sample
from assay.data.loading import load_dataset, load_outputs
from assay.data.outputs import Output, Retrieved
from assay.engine.evaluation import RunOptions, run_samples
from assay.engine.sut import SavedOutputs
from assay.metrics.registry import resolve_scoped
from assay.report.markdown import render_markdown
from assay.report.model import Report

from .reports import check_report

QUICKSTART = Path(__file__).resolve().parents[2] / "examples" / "quickstart"


def quickstart_report() -> Report:
    dataset = load_dataset(QUICKSTART / "dataset.yml")
    outputs = load_outputs(QUICKSTART / "outputs.json")
    metrics, scopes = resolve_scoped(dataset.metrics)
    return run_samples(
        dataset, sut=SavedOutputs(outputs, "outputs.json"), metrics=metrics, scopes=scopes
    )


def test_shipped_schema_is_a_valid_draft_2020_12_schema() -> None:
    """(That the shipped file is what the models generate: tests/cli/test_schema_files.py.)"""
    schema = load("report.v2.json")
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["properties"]["schema_version"]["const"] == "assay.report.v2"
    assert schema["additionalProperties"] is False


def test_quickstart_report_validates_and_round_trips() -> None:
    report = quickstart_report()
    data = check_report(report)
    assert data["schema_version"] == "assay.report.v2"
    # the builder assembles the report without validation; the model must accept it back
    assert Report.model_validate(data).model_dump(mode="json") == data
    assert data["summary"]["total_samples"] == len(load_dataset(QUICKSTART / "dataset.yml").samples)


def test_schema_rejects_broken_reports() -> None:
    data = check_report(quickstart_report())
    validator = jsonschema.Draft202012Validator(load("report.v2.json"))
    variants = []
    missing = copy.deepcopy(data)
    del missing["summary"]
    variants.append(missing)
    extra = copy.deepcopy(data)
    extra["rows"][0]["input"] = {"question": "leak"}
    variants.append(extra)
    wrong_version = copy.deepcopy(data)
    wrong_version["schema_version"] = "assay.report.v3"
    variants.append(wrong_version)
    bad_type = copy.deepcopy(data)
    bad_type["metrics"][0]["scored"] = "many"
    variants.append(bad_type)
    bad_stage = copy.deepcopy(data)
    bad_stage["failures"] = [
        {"sample_id": "x", "repetition": 0, "stage": "elsewhere", "metric": None, "message": "m"}
    ]
    variants.append(bad_stage)
    for variant in variants:
        assert not validator.is_valid(variant)


SECRETS = {
    "input": "INPUT-sk-live-4f9a8b7c6d5e",
    "expected": "EXPECTED-secret-7d6c5b4a",
    "metadata": "METADATA-sk-proj-0123456789abcdef",
    "evidence": "EVIDENCE-internal-memo-quote",
}


def secret_dataset() -> tuple[Dataset, dict[str, Output]]:
    samples = [
        Sample(
            id="q1",
            input={"question": SECRETS["input"], "api_key": SECRETS["input"]},
            expected_output=SECRETS["expected"],
            metadata={
                "tags": ["t"],
                "owner_token": SECRETS["metadata"],
                "notes": {"deep": [SECRETS["metadata"]]},
            },
        ),
        Sample(
            id="q2",
            input={"question": "plain"},
            expected_output="Paris",
            metadata={
                "tags": ["t", "cited"],
                "citation_evidence": [{"citation": "[1]", "quote": SECRETS["evidence"]}],
                "secret": SECRETS["metadata"],
            },
        ),
        Sample(
            id="q3",
            input={"question": SECRETS["input"]},
            expected_output=["d1", "d2"],
            metadata={"k": 2, "tags": ["rag"]},
        ),
    ]
    outputs = {
        "q1": Output("an answer that does not contain it"),
        "q2": Output(f"Paris [1] {SECRETS['evidence']}"),
        "q3": Output("retrieved", (Retrieved("d2"), Retrieved("d9"))),
    }
    return Dataset(name="secrets", samples=samples), outputs


@pytest.mark.parametrize("fmt", ["json", "md"])
def test_redacted_reports_carry_no_input_expected_metadata_or_evidence(fmt: str) -> None:
    dataset, outputs = secret_dataset()
    metrics, scopes = resolve_scoped(
        [
            {"name": "exact-match", "tags": ["t"]},
            {"name": "rouge-l", "tags": ["t"]},
            {"name": "citation-groundedness", "tags": ["cited"]},
            {"name": "retrieval-recall-at-k", "tags": ["rag"]},
        ]
    )
    report = run_samples(
        dataset,
        sut=SavedOutputs(outputs, "o.json"),
        metrics=metrics,
        scopes=scopes,
        options=RunOptions(redact=True),
    )
    data = check_report(report)
    assert data["summary"]["errored_rows"] == 0  # the secrets are not hidden inside failures either
    assert data["redacted"] and data["failing_rows"]
    assert all(r["input"] is None and r["actual"] is None for r in data["failing_rows"])
    text = report.model_dump_json() if fmt == "json" else render_markdown(report)
    for label, secret in SECRETS.items():
        assert secret not in text, label
    for row in data["rows"]:
        assert set(row) == {"id", "row_hash", "repetition", "tags", "passed", "scores", "errors"}
    # and the scores are there, so the test is looking at a real report
    assert data["rows"][1]["scores"]["citation-groundedness"]["score"] == 1.0
    assert data["rows"][2]["scores"]["retrieval-recall-at-k"]["score"] == 0.5


@pytest.mark.parametrize("fmt", ["json", "md"])
def test_failing_rows_show_their_texts_but_never_metadata(fmt: str) -> None:
    dataset, outputs = secret_dataset()
    metrics, scopes = resolve_scoped([{"name": "exact-match", "tags": ["t"]}])
    report = run_samples(
        dataset, sut=SavedOutputs(outputs, "o.json"), metrics=metrics, scopes=scopes
    )
    text = report.model_dump_json() if fmt == "json" else render_markdown(report)
    assert SECRETS["input"] in text and SECRETS["expected"] in text  # q1 failed: shown
    assert "an answer that does not contain it" in text
    assert SECRETS["metadata"] not in text  # metadata is never copied into a report
