"""``assay tez score|show|validate``: outputs, exit codes 0/1/2, and nothing written on errors."""

from __future__ import annotations

import json
import zipfile
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from assay.cli import main
from tez.helpers import queries_of, snapshot, zip_dir

VENDOR_DIR = "extensions/com.ragu.eval-metrics"


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    out, err = capsys.readouterr()
    code = exited.value.code
    return (0 if code is None else int(code)), out, err


def schema(name: str) -> dict[str, Any]:
    return json.loads(
        resources.files("assay").joinpath("schemas", name).read_text(encoding="utf-8")
    )


def write_session(
    path: Path,
    bundles_dir: Path,
    responses: dict[str, Any],
    bundle: str,
    picks: list[tuple[str, str]],
) -> Path:
    queries = queries_of(bundles_dir, bundle)
    turns = [
        {"query_id": q, "query": queries[q], "response": responses[bundle][q][k]} for q, k in picks
    ]
    path.write_text(json.dumps({"session_id": "tip-sess-cli", "turns": turns}))
    return path


GOOD = [
    ("grounded-01", "compliant"),
    ("abstention-02", "compliant"),
    ("content-canary-02", "compliant"),
]
BAD = [
    ("grounded-01", "fabricated"),
    ("abstention-02", "fabricated"),
    ("content-canary-02", "abstaining"),
]


def test_score_json_report_is_schema_valid(
    tmp_path: Path, bundles_dir: Path, responses: dict[str, Any], capsys: Any
) -> None:
    session = write_session(tmp_path / "s.json", bundles_dir, responses, "interop-level-3", GOOD)
    bundle = bundles_dir / "interop-level-3"
    code, out, _ = run(
        [
            "tez",
            "score",
            str(bundle),
            "--session",
            str(session),
            "--expectations",
            str(bundle / "test-queries.json"),
            "--format",
            "json",
        ],
        capsys,
    )
    assert code == 0
    report = json.loads(out)
    jsonschema.Draft202012Validator(schema("tez-score-report.schema.json")).validate(report)
    assert report["schema_version"] == "assay.tez-score.v1"
    assert [q["query_id"] for q in report["queries"]] == [q for q, _ in GOOD]
    assert report["written"] == []
    assert report["session"]["abstention_rate"] == 1.0
    assert report["evaluator"]["evaluation_method"] == "automated_heuristic"


def test_score_write_then_show_and_validate(
    tmp_path: Path, bundle_copy: Any, bundles_dir: Path, responses: dict[str, Any], capsys: Any
) -> None:
    bundle = bundle_copy("interop-level-3")
    session = write_session(tmp_path / "s.json", bundles_dir, responses, "interop-level-3", GOOD)
    manifest = (bundle / "manifest.json").read_bytes()
    code, out, _ = run(
        [
            "tez",
            "score",
            str(bundle),
            "-s",
            str(session),
            "-e",
            str(bundle / "test-queries.json"),
            "--write",
        ],
        capsys,
    )
    assert code == 0
    assert "wrote:" in out and "session means over 3 queries" in out
    latest = json.loads((bundle / VENDOR_DIR / "eval-metrics.json").read_text())
    jsonschema.Draft202012Validator(schema("tez-eval-metrics.schema.json")).validate(latest)
    assert (bundle / "manifest.json").read_bytes() == manifest
    code, out, _ = run(["tez", "show", str(bundle), "--format", "json"], capsys)
    shown = json.loads(out)
    assert code == 0 and shown["eval_extensions"] == {"com.ragu.eval-metrics": ["directory"]}
    assert "content-canary-02" in shown["latest_eval"]
    code, out, _ = run(["tez", "validate", str(bundle)], capsys)
    assert code == 0 and ": ok" in out
    code, _, _ = run(["tez", "validate", str(bundle), "--strict"], capsys)
    assert code == 1  # the manifest's array-form extensions is a warning, a problem under --strict


def test_tezit_eval_extension_and_standalone_report(
    tmp_path: Path, bundle_copy: Any, bundles_dir: Path, responses: dict[str, Any], capsys: Any
) -> None:
    bundle = bundle_copy("interop-level-3")
    archive = zip_dir(bundle, tmp_path / "b.tez")
    session = write_session(tmp_path / "s.json", bundles_dir, responses, "interop-level-3", GOOD)
    out_file = tmp_path / "report.json"
    code, _, _ = run(
        [
            "tez",
            "score",
            str(archive),
            "-s",
            str(session),
            "--write",
            "--extension",
            "tezit-eval",
            "--tezit-eval-out",
            str(out_file),
        ],
        capsys,
    )
    assert code == 0
    validator = jsonschema.Draft202012Validator(
        schema("tez-enterprise-tip-eval.schema.json"),
        format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER,
    )
    validator.validate(json.loads(out_file.read_text()))
    with zipfile.ZipFile(archive) as zf:
        validator.validate(json.loads(zf.read("extensions/tezit-eval/tezit-eval.json")))
        assert not any(n.startswith(VENDOR_DIR) for n in zf.namelist())
    # a second evaluation compares with the report already in the bundle
    worse = write_session(tmp_path / "w.json", bundles_dir, responses, "interop-level-3", BAD)
    code, out, _ = run(["tez", "score", str(archive), "-s", str(worse), "--gate"], capsys)
    assert code == 1
    assert "alert: faithfulness fell" in out


def test_gate_fails_on_threshold_alerts(
    tmp_path: Path, bundles_dir: Path, responses: dict[str, Any], capsys: Any
) -> None:
    bundle = bundles_dir / "interop-level-3"
    session = write_session(tmp_path / "s.json", bundles_dir, responses, "interop-level-3", BAD)
    argv = [
        "tez",
        "score",
        str(bundle),
        "-s",
        str(session),
        "-e",
        str(bundle / "test-queries.json"),
    ]
    code, out, _ = run(argv, capsys)
    assert code == 0 and "alert: faithfulness" in out  # advisory without --gate
    code, _, _ = run([*argv, "--gate"], capsys)
    assert code == 1


def test_previous_evaluation_drop_alert(
    tmp_path: Path, bundles_dir: Path, responses: dict[str, Any], capsys: Any
) -> None:
    bundle = bundles_dir / "interop-level-3"
    good = write_session(tmp_path / "g.json", bundles_dir, responses, "interop-level-3", GOOD)
    first = tmp_path / "first.json"
    code, _, _ = run(
        ["tez", "score", str(bundle), "-s", str(good), "--format", "json", "--out", str(first)],
        capsys,
    )
    assert code == 0 and json.loads(first.read_text())["session"]["faithfulness"] == 1.0
    bad = write_session(tmp_path / "b.json", bundles_dir, responses, "interop-level-3", BAD)
    code, out, _ = run(
        ["tez", "score", str(bundle), "-s", str(bad), "--previous", str(first), "--format", "json"],
        capsys,
    )
    alerts = json.loads(out)["alerts"]
    assert any(a["kind"] == "dropped" and a["metric"] == "faithfulness" for a in alerts)


# ---------------------------------------------------------------- errors -> exit 2, nothing written


def _hostile_zip(bundles_dir: Path, path: Path) -> Path:
    root = bundles_dir / "interop-level-3"
    with zipfile.ZipFile(path, "w") as zf:
        for p in sorted(root.rglob("*")):
            if p.is_file():
                zf.write(p, p.relative_to(root).as_posix())
        zf.writestr("../../escape.txt", "gotcha")
    return path


def test_hostile_bundles_exit_2_with_one_line_and_write_nothing(
    tmp_path: Path, bundle_copy: Any, bundles_dir: Path, responses: dict[str, Any], capsys: Any
) -> None:
    session = write_session(tmp_path / "s.json", bundles_dir, responses, "interop-level-3", GOOD)
    slip = _hostile_zip(bundles_dir, tmp_path / "slip.tez")
    bad_utf8 = bundle_copy("interop-level-3")
    (bad_utf8 / "context" / "founder-memo.md").write_bytes(b"# memo\n\xff\xfe")
    huge = tmp_path / "huge"
    huge_src = bundle_copy("tip-compliance")
    huge_src.rename(huge)
    with (huge / "context" / "customer-data.md").open("r+b") as handle:
        handle.truncate(64 * 1024 * 1024)
    missing = tmp_path / "missing-item"
    bundle_copy("interop-level-3").rename(missing)
    (missing / "context" / "ops-runbook.md").unlink()
    cases = [
        (slip, "zip slip"),
        (bad_utf8, "not valid UTF-8"),
        (huge, "per-file limit"),
        (missing, "ops-runbook' points to 'context/ops-runbook.md', which is missing"),
    ]
    for target, needle in cases:
        before = snapshot(target)
        code, out, err = run(["tez", "score", str(target), "-s", str(session), "--write"], capsys)
        assert code == 2, target
        assert err.count("\n") == 1 and err.startswith("assay: error: ") and needle in err, err
        assert "Traceback" not in err and out == ""
        assert snapshot(target) == before
    assert not (tmp_path.parent / "escape.txt").exists()


def test_citation_to_a_missing_item(
    tmp_path: Path, bundle_copy: Any, bundles_dir: Path, capsys: Any
) -> None:
    bundle = bundle_copy("interop-level-3")
    with (bundle / "tez.md").open("a", encoding="utf-8") as handle:
        handle.write("\nAn extra claim [[ghost-item:p1]].\n")
    before = snapshot(bundle)
    code, out, _ = run(["tez", "validate", str(bundle)], capsys)
    assert code == 1
    assert (
        "problem: tez.md: citation [[ghost-item:p1]]: no context item 'ghost-item' in the manifest"
        in out
    )
    # a response citing it: scored as an unverifiable citation, named in the report
    session = tmp_path / "s.json"
    session.write_text(
        json.dumps(
            {
                "session_id": "s",
                "turns": [
                    {
                        "query_id": "q",
                        "query": "size?",
                        "response": "The market is $18.7 billion [[ghost-item]].",
                    }
                ],
            }
        )
    )
    code, out, _ = run(["tez", "score", str(bundle), "-s", str(session)], capsys)
    assert code == 0
    assert "q: citation [[ghost-item]]: no context item 'ghost-item' in the manifest" in out
    assert snapshot(bundle) == before


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["tez", "score", "{bundle}", "-s", "{missing}"], "cannot read file"),
        (["tez", "score", "{bundle}", "-s", "{bad}"], "not valid JSON"),
        (["tez", "show", "{missing}"], "no such bundle"),
    ],
)
def test_bad_input_exit_2(
    argv: list[str], needle: str, tmp_path: Path, bundles_dir: Path, capsys: Any
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    values = {
        "bundle": str(bundles_dir / "interop-level-3"),
        "missing": str(tmp_path / "nope.json"),
        "bad": str(bad),
    }
    code, _, err = run([a.format(**values) for a in argv], capsys)
    assert code == 2 and needle in err


def test_official_tip_bundle_validate_reports_its_placeholder_citation(
    bundles_dir: Path, capsys: Any
) -> None:
    code, out, _ = run(
        ["tez", "validate", str(bundles_dir / "tip-compliance"), "--format", "json"], capsys
    )
    data = json.loads(out)
    assert code == 1 and data["citations"] == 127 and data["distinct_citations"] == 37
    assert data["problems"] == [
        "tez.md: citation [[citations]]: no context item 'citations' in the manifest"
    ]
    assert any("transcript" in w for w in data["warnings"])


def test_score_with_the_judge_method_through_the_provider(
    tmp_path: Path,
    bundle_copy: Any,
    bundles_dir: Path,
    responses: dict[str, Any],
    capsys: Any,
    openai_server: Any,
    provider_settings: Any,
) -> None:
    openai_server.chat_reply = lambda request: (
        '{"relevance": 0.8}'
        if "Rate how directly" in request["messages"][-1]["content"]
        else '{"supported_by": [1], "faithful": true}'
    )
    bundle = bundle_copy("interop-level-3")
    session = write_session(tmp_path / "s.json", bundles_dir, responses, "interop-level-3", GOOD)
    code, out, _ = run(
        [
            "tez",
            "score",
            str(bundle),
            "-s",
            str(session),
            "--method",
            "llm_as_judge",
            "--write",
            "--format",
            "json",
        ],
        capsys,
    )
    assert code == 0
    report = json.loads(out)
    assert report["evaluator"] == {
        "model": "judge-test",
        "model_version": "judge-test",
        "evaluation_method": "llm_as_judge",
    }
    latest = json.loads((bundle / VENDOR_DIR / "eval-metrics.json").read_text())
    jsonschema.Draft202012Validator(schema("tez-eval-metrics.schema.json")).validate(latest)
    assert latest["evaluator"]["evaluation_method"] == "llm_as_judge"
    assert (
        latest["scores"]["relevance"] == 0.8
    )  # content-canary-02: answered, so the judge rated it
    assert openai_server.total_calls() > 0
    assert (
        report["usage"]["calls"] == openai_server.total_calls()
        and report["usage"]["cached_calls"] == 0
    )


def test_invalid_eval_record_is_a_validate_problem_and_a_warning_on_write(
    tmp_path: Path, bundle_copy: Any, bundles_dir: Path, responses: dict[str, Any], capsys: Any
) -> None:
    bundle = bundle_copy("interop-level-3")
    ext = bundle / VENDOR_DIR
    ext.mkdir(parents=True)
    (ext / "eval-metrics.json").write_text(
        json.dumps({"session_id": "s", "query_id": "q", "scores": {"groundedness": 2}})
    )
    code, out, _ = run(["tez", "validate", str(bundle)], capsys)
    assert code == 1 and "eval-metrics.json: fails tez-eval-metrics.schema.json" in out
    code, out, _ = run(["tez", "show", str(bundle)], capsys)
    assert code == 0 and "warning: extensions/com.ragu.eval-metrics/eval-metrics.json: fails" in out
    session = write_session(tmp_path / "s.json", bundles_dir, responses, "interop-level-3", GOOD)
    code, out, _ = run(["tez", "score", str(bundle), "-s", str(session), "--write"], capsys)
    assert code == 0 and "warning: extensions/com.ragu.eval-metrics/eval-metrics.json: fails" in out
    jsonschema.Draft202012Validator(schema("tez-eval-metrics.schema.json")).validate(
        json.loads((ext / "eval-metrics.json").read_text())
    )
