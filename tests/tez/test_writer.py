"""Writing eval records: schema-valid files, running means, zip round-trips, one id per bundle."""

from __future__ import annotations

import json
import re
import zipfile
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import numpy as np
import pytest

from assay.errors import TezError
from assay.tez import writer
from assay.tez.bundle import open_bundle
from assay.tez.evaluate import score_session
from assay.tez.extension import read_eval_state
from assay.tez.records import EvalMetricsRecord, SessionFile, SessionTurn
from assay.tez.session import load_expectations
from tez.helpers import queries_of, snapshot, zip_dir

VENDOR_DIR = "extensions/com.ragu.eval-metrics"
SEEDS = Path(__file__).resolve().parents[2] / ".." / "shared" / "seeds"


def shipped_schema(name: str) -> dict[str, Any]:
    return json.loads(
        resources.files("assay").joinpath("schemas", name).read_text(encoding="utf-8")
    )


VENDOR = shipped_schema("tez-eval-metrics.schema.json")
ENTERPRISE = shipped_schema("tez-enterprise-tip-eval.schema.json")
EXT_MANIFEST = shipped_schema("tez-extension-manifest.schema.json")


def assert_valid(doc: Any, schema: dict[str, Any]) -> None:
    jsonschema.Draft202012Validator(
        schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
    ).validate(doc)


def session_of(
    bundles_dir: Path,
    responses: dict[str, Any],
    picks: list[tuple[str, str]],
    sid: str = "tip-sess-4q",
) -> SessionFile:
    queries = queries_of(bundles_dir, "tip-compliance")
    turns = [
        SessionTurn(
            query_id=qid, query=queries[qid], response=responses["tip-compliance"][qid][kind]
        )
        for qid, kind in picks
    ]
    return SessionFile(session_id=sid, turns=turns)


FOUR = [
    ("grounded-01", "compliant"),
    ("grounded-02", "wrongly_cited"),
    ("abstention-01", "fabricated"),
    ("content-canary-01", "abstaining"),
]


def score_and_write(
    bundle_path: Path, session: SessionFile, bundles_dir: Path, **kw: Any
) -> list[str]:
    loaded = open_bundle(bundle_path)
    expectations = load_expectations(bundles_dir / "tip-compliance" / "test-queries.json")
    evaluation = score_session(loaded, session, expectations)
    plan = writer.plan_vendor(
        loaded, session.session_id, evaluation.scores, evaluation.evaluator, **kw
    )
    return writer.apply(loaded, plan)


# --------------------------------------------------------------------------- schemas


def test_shipped_vendor_schema_is_the_seed_schema() -> None:
    seeds = sorted(SEEDS.glob("004_*.txt"))
    if not seeds:
        pytest.skip("seed 004 not found beside the repository")
    text = seeds[0].read_text(encoding="utf-8")
    block = re.search(r"### JSON Schema: `eval-metrics.json`\s*```json\n(.*?)\n```", text, re.S)
    assert block is not None
    assert json.loads(block.group(1)) == VENDOR


def test_shipped_enterprise_schema_is_the_published_one(tez_data: Path) -> None:
    published = json.loads(
        (tez_data / "schemas" / "enterprise-tip-eval.schema.json").read_text(encoding="utf-8")
    )
    assert published == ENTERPRISE


def test_seed_examples_validate_and_added_metrics_do_not() -> None:
    example = {
        "session_id": "tip-sess-e5f6g7h8",
        "query_id": "q-004",
        "scores": {"groundedness": 0.61, "relevance": 0.78, "faithfulness": 0.72},
        "evaluator": {
            "model": "gpt-4o",
            "model_version": "2025-08-06",
            "evaluation_method": "nli_based",
        },
        "aggregate_session_scores": {
            "avg_groundedness": 0.79,
            "avg_relevance": 0.88,
            "avg_faithfulness": 0.85,
            "total_queries": 4,
        },
    }
    assert_valid(example, VENDOR)
    EvalMetricsRecord.model_validate(example)
    bad = json.loads(json.dumps(example))
    bad["scores"]["citation_accuracy"] = 0.9
    with pytest.raises(jsonschema.ValidationError):
        assert_valid(bad, VENDOR)


# --------------------------------------------------------------------------- vendor records


def test_four_query_session_aggregates_are_running_means(
    bundle_copy: Any, bundles_dir: Path, responses: dict[str, Any]
) -> None:
    path = bundle_copy()
    before = (path / "manifest.json").read_bytes()
    written = score_and_write(path, session_of(bundles_dir, responses, FOUR), bundles_dir)
    ext = path / VENDOR_DIR
    assert sorted(written) == sorted(
        [f"{VENDOR_DIR}/manifest.json", f"{VENDOR_DIR}/eval-metrics.json"]
        + [f"{VENDOR_DIR}/records/{q}.json" for q, _ in FOUR]
    )
    records = [json.loads((ext / "records" / f"{q}.json").read_text()) for q, _ in FOUR]
    latest = json.loads((ext / "eval-metrics.json").read_text())
    for doc in [*records, latest]:
        assert_valid(doc, VENDOR)
    manifest = json.loads((ext / "manifest.json").read_text())
    assert_valid(manifest, EXT_MANIFEST)
    assert manifest == {
        "extension_id": "com.ragu.eval-metrics",
        "extension_version": "1.0.0",
        "name": "Eval Metrics",
        "description": (
            "Captures interrogation quality metrics including groundedness, relevance, "
            "and faithfulness scores"
        ),
        "author": "Ragu Platform",
        "url": "https://github.com/tezit-protocol/spec/extensions/vendor/com.ragu/eval-metrics",
    }
    assert latest == records[-1]
    for key in ("groundedness", "relevance", "faithfulness"):
        values = np.array([r["scores"][key] for r in records])
        expected = np.cumsum(values) / np.arange(1, len(values) + 1)
        got = [r["aggregate_session_scores"][f"avg_{key}"] for r in records]
        np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)
        assert latest["aggregate_session_scores"][f"avg_{key}"] == pytest.approx(
            values.mean(), abs=1e-12
        )
    assert [r["aggregate_session_scores"]["total_queries"] for r in records] == [1, 2, 3, 4]
    assert len({r["scores"]["groundedness"] for r in records}) > 1  # a session with real spread
    for record in records:
        for claim in record["per_claim_scores"]:
            assert claim["grounded"] == bool(claim["source_citations"])
        claims = record["per_claim_scores"]
        if claims:
            assert record["scores"]["groundedness"] == sum(c["grounded"] for c in claims) / len(
                claims
            )
    assert (path / "manifest.json").read_bytes() == before  # never rewritten


def test_continuing_a_session_extends_the_running_mean(
    bundle_copy: Any, bundles_dir: Path, responses: dict[str, Any]
) -> None:
    path = bundle_copy()
    score_and_write(path, session_of(bundles_dir, responses, FOUR[:2]), bundles_dir)
    score_and_write(path, session_of(bundles_dir, responses, FOUR[2:]), bundles_dir)
    ext = path / VENDOR_DIR
    records = [json.loads((ext / "records" / f"{q}.json").read_text()) for q, _ in FOUR]
    assert [r["aggregate_session_scores"]["total_queries"] for r in records] == [1, 2, 3, 4]
    latest = json.loads((ext / "eval-metrics.json").read_text())
    assert latest["query_id"] == "content-canary-01"
    values = np.array([r["scores"]["faithfulness"] for r in records])
    assert latest["aggregate_session_scores"]["avg_faithfulness"] == pytest.approx(
        values.mean(), abs=1e-12
    )


def test_another_session_needs_replace(
    bundle_copy: Any, bundles_dir: Path, responses: dict[str, Any]
) -> None:
    path = bundle_copy()
    score_and_write(path, session_of(bundles_dir, responses, FOUR), bundles_dir)
    before = snapshot(path)
    other = session_of(bundles_dir, responses, FOUR[:1], sid="tip-sess-other")
    with pytest.raises(TezError, match="--replace"):
        score_and_write(path, other, bundles_dir)
    assert snapshot(path) == before
    score_and_write(path, other, bundles_dir, replace=True)
    assert sorted(p.name for p in (path / VENDOR_DIR / "records").iterdir()) == ["grounded-01.json"]
    latest = json.loads((path / VENDOR_DIR / "eval-metrics.json").read_text())
    assert latest["session_id"] == "tip-sess-other"
    assert latest["aggregate_session_scores"]["total_queries"] == 1


# --------------------------------------------------------------------------- zip


def test_zip_round_trip(
    bundle_copy: Any, bundles_dir: Path, responses: dict[str, Any], tmp_path: Path
) -> None:
    source = bundle_copy()
    archive = zip_dir(source, tmp_path / "bundle.tez")
    from_zip, from_dir = open_bundle(archive), open_bundle(source)
    assert from_zip.kind == "zip" and from_dir.kind == "directory"
    assert {i.id: i.sha256 for i in from_zip.items.values()} == {
        i.id: i.sha256 for i in from_dir.items.values()
    }
    assert from_zip.synthesis_text == from_dir.synthesis_text
    assert from_zip.warnings == from_dir.warnings
    originals = {
        name: zipfile.ZipFile(archive).read(name) for name in zipfile.ZipFile(archive).namelist()
    }

    score_and_write(archive, session_of(bundles_dir, responses, FOUR), bundles_dir)
    with zipfile.ZipFile(archive) as zf:
        names = set(zf.namelist())
        for name, data in originals.items():
            assert zf.read(name) == data  # manifest, synthesis and context untouched
        latest = json.loads(zf.read(f"{VENDOR_DIR}/eval-metrics.json"))
        assert_valid(latest, VENDOR)
        assert_valid(json.loads(zf.read(f"{VENDOR_DIR}/manifest.json")), EXT_MANIFEST)
        for q, _ in FOUR:
            assert_valid(json.loads(zf.read(f"{VENDOR_DIR}/records/{q}.json")), VENDOR)
        assert zf.testzip() is None
    assert names == set(originals) | {
        f"{VENDOR_DIR}/{n}" for n in ["manifest.json", "eval-metrics.json"]
    } | {f"{VENDOR_DIR}/records/{q}.json" for q, _ in FOUR}
    # unzip and read back: the same bundle, now carrying the extension
    out = tmp_path / "unzipped"
    with zipfile.ZipFile(archive) as zf:
        zf.extractall(out)
    reread = open_bundle(out)
    assert reread.eval_extensions == {"com.ragu.eval-metrics": ["directory"]}
    assert read_eval_state(reread).vendor_latest == latest
    assert {i.id: i.sha256 for i in reread.items.values()} == {
        i.id: i.sha256 for i in from_dir.items.values()
    }


def test_zip_with_a_top_level_folder_is_read_and_written_in_place(
    bundle_copy: Any, bundles_dir: Path, responses: dict[str, Any], tmp_path: Path
) -> None:
    source = bundle_copy()
    archive = tmp_path / "nested.tez"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(source.rglob("*")):
            if path.is_file():
                zf.write(path, "tip-compliance/" + path.relative_to(source).as_posix())
    assert open_bundle(archive).root_prefix == "tip-compliance"
    score_and_write(archive, session_of(bundles_dir, responses, FOUR[:1]), bundles_dir)
    assert f"tip-compliance/{VENDOR_DIR}/eval-metrics.json" in zipfile.ZipFile(archive).namelist()


# --------------------------------------------------------------------------- both ids, enterprise


def test_tezit_eval_report_validates_and_excludes_vendor(
    bundle_copy: Any, bundles_dir: Path, responses: dict[str, Any]
) -> None:
    path = bundle_copy()
    loaded = open_bundle(path)
    session = session_of(bundles_dir, responses, FOUR)
    expectations = load_expectations(bundles_dir / "tip-compliance" / "test-queries.json")
    evaluation = score_session(loaded, session, expectations)
    plan = writer.plan_tezit(
        loaded, session.session_id, evaluation.scores, model="assay-tez-heuristic"
    )
    writer.apply(loaded, plan)
    report = json.loads((path / "extensions/tezit-eval/tezit-eval.json").read_text())
    assert_valid(report, ENTERPRISE)
    assert_valid(
        json.loads((path / "extensions/tezit-eval/manifest.json").read_text()), EXT_MANIFEST
    )
    assert [r["query_id"] for r in report["per_query_results"]] == [q for q, _ in FOUR]
    # one abstention-appropriate query (abstention-01) answered with fabrication: rate 0
    assert report["metrics"]["abstention_rate"] == 0.0
    reloaded = open_bundle(path)
    assert reloaded.eval_extensions == {"tezit-eval": ["directory"]}
    before = snapshot(path)
    with pytest.raises(TezError, match="both"):
        writer.plan_vendor(reloaded, session.session_id, evaluation.scores, evaluation.evaluator)
    assert snapshot(path) == before


def test_vendor_present_refuses_tezit_eval(
    bundle_copy: Any, bundles_dir: Path, responses: dict[str, Any]
) -> None:
    path = bundle_copy()
    score_and_write(path, session_of(bundles_dir, responses, FOUR[:1]), bundles_dir)
    loaded = open_bundle(path)
    before = snapshot(path)
    with pytest.raises(TezError, match="must not hold both"):
        writer.plan_tezit(loaded, "tip-sess-4q", [], model="m")
    assert snapshot(path) == before


def test_inline_tezit_eval_in_manifest_is_recognised_and_blocks_vendor(
    bundle_copy: Any, bundles_dir: Path, responses: dict[str, Any]
) -> None:
    path = bundle_copy()
    manifest = json.loads((path / "manifest.json").read_text())
    manifest["extensions"] = {"tezit-eval": {"version": "1.0", "metrics": {"relevance": 0.9}}}
    (path / "manifest.json").write_text(json.dumps(manifest))
    loaded = open_bundle(path)
    assert loaded.eval_extensions == {"tezit-eval": ["manifest"]}
    assert read_eval_state(loaded).preferred == "tezit-eval"
    before = snapshot(path)
    with pytest.raises(TezError):
        score_and_write(path, session_of(bundles_dir, responses, FOUR[:1]), bundles_dir)
    assert snapshot(path) == before


def test_both_ids_present_are_both_read_with_a_warning(
    bundle_copy: Any, bundles_dir: Path, responses: dict[str, Any]
) -> None:
    path = bundle_copy()
    score_and_write(path, session_of(bundles_dir, responses, FOUR[:1]), bundles_dir)
    report_dir = path / "extensions" / "tezit-eval"
    report_dir.mkdir()
    metrics = dict.fromkeys(
        ["relevance", "faithfulness", "citation_accuracy", "completeness", "abstention_rate"], 0.9
    )
    (report_dir / "tezit-eval.json").write_text(
        json.dumps({"session_id": "s", "evaluated_at": "2026-02-05T14:30:00Z", "metrics": metrics})
    )
    loaded = open_bundle(path)
    assert set(loaded.eval_extensions) == {"com.ragu.eval-metrics", "tezit-eval"}
    assert any("both" in w for w in loaded.warnings)
    state = read_eval_state(loaded)
    assert state.vendor_latest is not None and state.tezit_report is not None
    assert state.preferred == "tezit-eval"


# ------------------------------------------------------------------------- validation and atomicity


def test_invalid_document_is_refused_before_anything_is_written(bundle_copy: Any) -> None:
    path = bundle_copy()
    loaded = open_bundle(path)
    before = snapshot(path)
    record = {
        "session_id": "s",
        "query_id": "q",
        "scores": {"groundedness": 1.5, "relevance": 1, "faithfulness": 1},
        "evaluator": {"model": "m", "model_version": "v", "evaluation_method": "x"},
    }
    plan = writer.WritePlan(
        "com.ragu.eval-metrics",
        {"manifest.json": writer.VENDOR_MANIFEST.model_dump(), "eval-metrics.json": record},
    )
    with pytest.raises(TezError, match=r"fails tez-eval-metrics\.schema\.json"):
        writer.apply(loaded, plan)
    assert snapshot(path) == before


def test_failed_swap_keeps_the_previous_extension(
    bundle_copy: Any, bundles_dir: Path, responses: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = bundle_copy()
    score_and_write(path, session_of(bundles_dir, responses, FOUR[:2]), bundles_dir)
    before = snapshot(path)
    real_rename = writer.os.rename
    calls = {"n": 0}

    def flaky(src: Any, dst: Any) -> None:
        calls["n"] += 1
        if calls["n"] == 2:  # old folder moved aside, staging not yet in place
            raise OSError("disk full")
        real_rename(src, dst)

    monkeypatch.setattr(writer.os, "rename", flaky)
    with pytest.raises(OSError):
        score_and_write(path, session_of(bundles_dir, responses, FOUR[2:]), bundles_dir)
    monkeypatch.setattr(writer.os, "rename", real_rename)
    assert snapshot(path) == before
    assert [p.name for p in (path / "extensions").iterdir()] == ["com.ragu.eval-metrics"]


def test_write_json_atomic_replaces_whole_file(tmp_path: Path) -> None:
    target = tmp_path / "r.json"
    target.write_text("old")
    writer.write_json_atomic(target, {"a": 1})
    assert json.loads(target.read_text()) == {"a": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]


def test_symlink_inside_the_extension_folder_is_refused(
    bundle_copy: Any, bundles_dir: Path, responses: dict[str, Any], tmp_path: Path
) -> None:
    path = bundle_copy()
    outside = tmp_path / "outside.json"
    outside.write_text("{}")
    ext = path / VENDOR_DIR
    ext.mkdir(parents=True)
    (ext / "eval-metrics.json").symlink_to(outside)
    with pytest.raises(TezError, match="symlink"):
        score_and_write(path, session_of(bundles_dir, responses, FOUR[:1]), bundles_dir)
    assert outside.read_text() == "{}"
    assert sorted(p.name for p in (path / "extensions").iterdir()) == ["com.ragu.eval-metrics"]
