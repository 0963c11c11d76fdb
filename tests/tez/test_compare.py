"""``assay tez compare``: two models' sessions over examples/tez's corpus, paired per query."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from assay.cli import main
from assay.compare.paired_tests import holm

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "tez"
BUNDLE = str(EXAMPLES / "novatech")
MODEL_A = str(EXAMPLES / "session.json")
MODEL_B = str(EXAMPLES / "session-model-b.json")
METRICS = ("groundedness", "relevance", "faithfulness")


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    out, err = capsys.readouterr()
    code = exited.value.code
    return (0 if code is None else int(code)), out, err


def scored(session: str, capsys: pytest.CaptureFixture[str]) -> dict[str, dict[str, float]]:
    """Per-query scores from ``assay tez score`` on one session alone."""
    code, out, _ = run(["tez", "score", BUNDLE, "--session", session, "--format", "json"], capsys)
    assert code == 0
    return {q["query_id"]: q["scores"] for q in json.loads(out)["queries"]}


def test_two_models_compare_with_paired_intervals(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["tez", "compare", BUNDLE, "-s", MODEL_A, "-s", MODEL_B, "-f", "json"]
    code, out, _ = run(argv, capsys)
    assert code == 0
    report: dict[str, Any] = json.loads(out)
    assert report["schema_version"] == "assay.tez-compare.v1"
    (pair,) = report["comparisons"]
    a, b = scored(MODEL_A, capsys), scored(MODEL_B, capsys)
    assert [q["query_id"] for q in pair["queries"]] == list(a)
    for q in pair["queries"]:
        for m in METRICS:
            assert q["difference"][m] == pytest.approx(b[q["query_id"]][m] - a[q["query_id"]][m])
    raw = [m["p_value"] for m in pair["metrics"]]
    assert [m["p_adjusted"] for m in pair["metrics"]] == pytest.approx(holm(raw))
    for stat in pair["metrics"]:
        diffs = [b[q][stat["metric"]] - a[q][stat["metric"]] for q in a]
        assert stat["delta"] == pytest.approx(sum(diffs) / len(diffs))
        assert stat["reference_mean"] == pytest.approx(sum(a[q][stat["metric"]] for q in a) / 6)
        assert stat["interval"]["low"] <= stat["delta"] <= stat["interval"]["high"]
    ground = pair["metrics"][0]
    assert ground["delta"] < 0 and ground["interval"]["high"] < 0  # model B cites less


def test_text_table_names_every_metric_and_a_verdict(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["tez", "compare", BUNDLE, "-s", MODEL_A, "-s", MODEL_B], capsys)
    assert code == 0
    verdicts = ("regressed", "improved", "no detectable change", "too few pairs")
    for metric in METRICS:
        (line,) = [row for row in out.splitlines() if row.startswith(metric)]
        assert "[" in line and any(line.endswith(v) for v in verdicts)


@pytest.mark.parametrize("case", ["missing", "other-queries", "same-session", "one"])
def test_bad_inputs_exit_2_with_one_line(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = json.loads(Path(MODEL_B).read_text())
    other["session_id"] = "model-c"
    other["turns"][0]["query_id"] = "not-in-the-reference"
    (tmp_path / "c.json").write_text(json.dumps(other))
    sessions = {
        "missing": [MODEL_A, str(tmp_path / "nope.json")],
        "other-queries": [MODEL_A, str(tmp_path / "c.json")],
        "same-session": [MODEL_A, MODEL_A],
        "one": [MODEL_A],
    }[case]
    argv = ["tez", "compare", BUNDLE] + [a for s in sessions for a in ("-s", s)]
    code, out, err = run(argv, capsys)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1
    if case == "other-queries":
        assert "not-in-the-reference" in err and "model-c" in err
