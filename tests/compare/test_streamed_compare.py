"""The comparison pools each side's rows in one pass, so the rows can stream from a run store or
a report file: same comparison as from reports held whole, checked against a plain re-statement
of the pairing rules written here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assay.cli import main
from assay.compare import streamed_report
from assay.compare.baseline import load_report
from assay.compare.comparison import compare_reports
from assay.compare.streamed_report import stream_report_file, stream_stored_report
from assay.engine.rebuild import report_from_store
from assay.errors import InputError
from assay.report.model import Report, Row
from assay.store.runs import RunStore
from compare.factory import make_report

score = st.one_of(st.none(), st.sampled_from([0.0, 0.25, 0.5, 1.0]), st.floats(0.0, 1.0))


@st.composite
def sides(draw: Any) -> dict[str, Any]:
    names = draw(st.lists(st.sampled_from([f"s{i}" for i in range(12)]), min_size=1, unique=True))
    reps = draw(st.integers(1, 3))
    metrics = draw(st.lists(st.sampled_from(["m", "k"]), min_size=1, unique=True))
    return {
        name: {
            "tags": draw(st.lists(st.sampled_from(["a", "b"]), max_size=2, unique=True)),
            "scores": {m: [draw(score) for _ in range(reps)] for m in metrics},
            "sut_error": draw(st.sampled_from([[], [], [0]])),
        }
        for name in names
    }


def plain_views(report: Report) -> dict[str, dict[str, Any]]:
    """Per sample id: first tags, every score and pass per metric, every error (the rules)."""
    views: dict[str, dict[str, Any]] = {}
    for row in report.rows:
        view = views.setdefault(
            row.id, {"tags": row.tags, "scores": {}, "passes": {}, "err": set()}
        )
        for metric, value in row.scores.items():
            view["scores"].setdefault(metric, []).append(value.score)
            view["passes"].setdefault(metric, []).append(value.passed)
        view["err"] |= set(row.errors)
    return views


def outcome(view: dict[str, Any], metric: str) -> bool | None:
    passes = view["passes"].get(metric)
    return None if not passes else sum(passes) / len(passes) > 0.5


def passed_all(view: dict[str, Any], metrics: list[str]) -> bool:
    return not view["err"] and all(outcome(view, m) is not False for m in metrics)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(current=sides(), reference=sides())
def test_flips_and_new_failures_follow_the_rules(
    current: dict[str, Any], reference: dict[str, Any]
) -> None:
    cur, ref = make_report(current, run_id="cur"), make_report(reference, run_id="ref")
    comparison = compare_reports(cur, ref, resamples=50)
    mine, theirs = plain_views(cur), plain_views(ref)
    metrics = [m.name for m in cur.metrics if m.name in {r.name for r in ref.metrics}]
    joined = [key for key in mine if key in theirs]
    assert comparison.join_key == "row_hash"  # the factory hashes each id's content
    assert [f.sample_id for f in comparison.added] == [k for k in mine if k not in theirs]
    assert [f.sample_id for f in comparison.removed] == [k for k in theirs if k not in mine]
    expected_flips = [
        (key, metric, outcome(theirs[key], metric))
        for key in joined
        for metric in metrics
        if None not in (outcome(theirs[key], metric), outcome(mine[key], metric))
        and outcome(theirs[key], metric) != outcome(mine[key], metric)
    ]
    got = [(f.sample_id, f.metric, f.direction == "pass-to-fail") for f in comparison.flips]
    assert got == expected_flips
    for flip in comparison.flips:
        before = theirs[flip.sample_id]["scores"][flip.metric]
        after = mine[flip.sample_id]["scores"][flip.metric]
        assert (flip.before, flip.after) == (sum(before) / len(before), sum(after) / len(after))
    expected_new = [
        key
        for key in joined
        if passed_all(theirs[key], metrics) and not passed_all(mine[key], metrics)
    ]
    assert [n.sample_id for n in comparison.new_failures] == expected_new
    for item in comparison.metrics:  # overall cells: pairs where both sides scored
        paired = [
            k
            for k in joined
            if mine[k]["scores"].get(item.metric) and theirs[k]["scores"].get(item.metric)
        ]
        assert item.paired == len(paired)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(current=sides(), reference=sides())
def test_rows_given_apart_compare_as_rows_held(
    current: dict[str, Any], reference: dict[str, Any]
) -> None:
    cur, ref = make_report(current, run_id="cur"), make_report(reference, run_id="ref")
    held = compare_reports(cur, ref, resamples=50, seed=3)
    apart = compare_reports(
        cur.model_copy(update={"rows": []}),
        ref.model_copy(update={"rows": []}),
        resamples=50,
        seed=3,
        current_rows=iter(cur.rows),
        reference_rows=iter(ref.rows),
    )
    assert apart == held


def write_report(path: Path, report: Report) -> Path:
    path.write_text(report.model_dump_json(indent=1), encoding="utf-8")
    return path


def test_a_large_report_file_streams_its_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    report = make_report(
        {f"s{i}": {"tags": ["a"], "scores": {"m": [i % 3 / 2]}} for i in range(50)}
    )
    path = write_report(tmp_path / "big.json", report)
    monkeypatch.setattr(streamed_report, "SCAN_MIN_BYTES", 0)
    streamed = stream_report_file(path, load_report)
    assert streamed.report.rows == [] and streamed.report == report.model_copy(update={"rows": []})
    assert list(streamed.rows()) == report.rows == list(streamed.rows())  # every pass the same


def test_a_bad_row_in_a_streamed_report_names_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    report = make_report({f"s{i}": {"scores": {"m": [1.0]}} for i in range(5)})
    document = json.loads(report.model_dump_json())
    document["rows"][3]["scores"]["m"]["score"] = "high"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    monkeypatch.setattr(streamed_report, "SCAN_MIN_BYTES", 0)
    streamed = stream_report_file(path, load_report)
    with pytest.raises(InputError, match=r"rows\.3"):
        list(streamed.rows())


@pytest.mark.parametrize("streamed", [False, True])
@pytest.mark.parametrize("side", ["current", "reference"])
def test_a_report_with_two_rows_of_one_repetition_is_refused(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    streamed: bool,
    side: str,
) -> None:
    """Once pooled silently as if they were two repetitions; now exit 2, one line naming the
    file, the sample and the repetition, for a file read whole and one streamed."""
    report = make_report({f"s{i}": {"scores": {"m": [1.0, 0.0]}} for i in range(4)})
    good = write_report(tmp_path / "good.json", report)
    document = json.loads(report.model_dump_json())
    document["rows"].append(document["rows"][5])  # s2, repetition 1, a second time
    bad = tmp_path / "dup.json"
    bad.write_text(json.dumps(document), encoding="utf-8")
    if streamed:
        monkeypatch.setattr(streamed_report, "SCAN_MIN_BYTES", 0)
    pair = [bad, good] if side == "current" else [good, bad]
    with pytest.raises(SystemExit) as info:
        main(["compare", *map(str, pair)])
    lines = capsys.readouterr().err.strip().splitlines()
    assert info.value.code == 2 and len(lines) == 1, lines
    assert str(bad) in lines[0] and "sample 's2'" in lines[0] and "repetition 1" in lines[0]


@pytest.mark.parametrize(
    "text",
    ['{"schema_version": "assay.report.v1", "rows": []', '{"rows": [], "rows": []}', "[1]"],
)
def test_report_files_the_scan_does_not_take_are_read_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str
) -> None:
    path = tmp_path / "odd.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as whole:
        load_report(path)
    monkeypatch.setattr(streamed_report, "SCAN_MIN_BYTES", 0)
    with pytest.raises(InputError) as streamed:
        stream_report_file(path, load_report)
    assert str(streamed.value) == str(whole.value)


def run(tmp_path: Path, name: str, outputs: dict[str, str], *extra: str) -> Path:
    data = tmp_path / "data.jsonl"
    rows = [{"id": f"q{i}", "input": {}, "expected_output": f"answer {i % 7}"} for i in range(60)]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    saved = tmp_path / f"{name}.jsonl"
    saved.write_text("".join(json.dumps({"id": k, "output": v}) + "\n" for k, v in outputs.items()))
    report = tmp_path / f"{name}.report.json"
    args = ["run", str(data), "--outputs", str(saved), "-m", "exact-match", "-m", "rouge-l"]
    args += ["-f", "json", "-o", str(report), "-q", "--store", str(tmp_path / "runs.db"), *extra]
    with pytest.raises(SystemExit) as ended:
        main(args)
    assert ended.value.code in (0, 1)
    return report


def test_run_compare_streams_both_sides_and_matches_reports_held(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    before = run(tmp_path, "before", {f"q{i}": f"answer {i % 7}" for i in range(60)})
    monkeypatch.setattr(streamed_report, "SCAN_MIN_BYTES", 0)  # the reference file streams too
    worse = {f"q{i}": f"answer {i % 7}" if i % 3 else "something else" for i in range(60)}
    after = run(tmp_path, "after", worse, "--compare", str(before))
    capsys.readouterr()
    document = json.loads(after.read_text(encoding="utf-8"))
    expected = compare_reports(load_report(after), load_report(before))
    assert document["comparison"] == json.loads(expected.summary().model_dump_json())
    assert document["comparison"]["counts"]["pass_to_fail"] == 40  # 20 samples x 2 metrics


def test_a_stored_run_streams_its_rows(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run(tmp_path, "one", {f"q{i}": f"answer {i % 5}" for i in range(60)})
    capsys.readouterr()
    store = RunStore(tmp_path / "runs.db")
    run_id = store.db.execute("SELECT run_id FROM runs").fetchone()[0]
    whole = report_from_store(store, run_id)
    store.close()
    streamed = stream_stored_report(tmp_path / "runs.db", run_id)
    assert streamed.report == whole.model_copy(update={"rows": []})
    rows = list(streamed.rows())  # each row's JSON, as the store keeps it
    assert [Row.model_validate_json(row) for row in rows] == whole.rows


def test_compare_command_streams_report_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    before = run(tmp_path, "before", {f"q{i}": f"answer {i % 7}" for i in range(60)})
    after = run(tmp_path, "after", {f"q{i}": f"answer {i % 4}" for i in range(60)})
    capsys.readouterr()
    monkeypatch.setattr(streamed_report, "SCAN_MIN_BYTES", 0)
    with pytest.raises(SystemExit) as ended:
        main(["compare", str(after), str(before), "-f", "json"])
    assert ended.value.code in (0, None)
    printed = json.loads(capsys.readouterr().out)
    expected = compare_reports(load_report(after), load_report(before))
    assert printed == json.loads(expected.model_dump_json())
    assert printed["counts"]["pass_to_fail"] > 0


json_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(["", "1", "0.5", "true", "false", "null", "x", "1e3", " 2 "]),
)
json_value = st.recursive(
    json_leaf,
    lambda inner: st.one_of(
        st.lists(inner, max_size=2), st.dictionaries(st.sampled_from(["a", "score"]), inner)
    ),
    max_leaves=4,
)
row_paths = [
    ("id",),
    ("row_hash",),
    ("repetition",),
    ("tags",),
    ("passed",),
    ("scores",),
    ("errors",),
    ("scores", "m"),
    ("scores", "m", "score"),
    ("scores", "m", "passed"),
    ("scores", "m", "details"),
    ("errors", "k"),
    ("extra",),
    ("scores", "m", "extra"),
]


@settings(max_examples=300, deadline=None)
@given(changes=st.lists(st.tuples(st.sampled_from(row_paths), json_value), max_size=3))
def test_a_streamed_row_is_validated_as_a_whole_report_validates_it(
    changes: list[tuple[tuple[str, ...], Any]],
) -> None:
    """Validating a row from its JSON in one step gives the model, or the refusal and its
    words, that parsing first and validating the value gives (the whole-file path)."""
    from pydantic import ValidationError

    document: dict[str, Any] = {
        "id": "s1",
        "row_hash": "h",
        "repetition": 0,
        "tags": ["a"],
        "passed": True,
        "scores": {"m": {"score": 0.5, "passed": True, "details": {"n": 1}}},
        "errors": {},
    }
    for path, value in changes:
        target = document
        for key in path[:-1]:
            target = target.get(key) if isinstance(target.get(key), dict) else {}
        target[path[-1]] = value
    text = json.dumps(document)
    try:
        expected: Any = Row.model_validate(json.loads(text))
    except ValidationError as exc:
        expected = exc.errors()[0]["msg"]
    try:
        got: Any = streamed_report._row(text)
    except ValidationError as exc:
        got = exc.errors()[0]["msg"]
    assert got == expected


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(side=sides())
def test_rows_given_as_stored_json_pool_as_their_models_do(side: dict[str, Any]) -> None:
    """A run store's rows come to the comparison as their JSON: the same per-sample columns."""
    import pydantic_core

    from assay.compare.pairing import SampleTable

    rows = make_report(side).rows
    models = SampleTable.of(rows)
    stored = SampleTable.of([pydantic_core.to_json(row.model_dump()) for row in rows])
    assert (stored.ids, stored.hashes, stored.tags, stored.errors, stored.hashable) == (
        models.ids,
        models.hashes,
        models.tags,
        models.errors,
        models.hashable,
    )
    for metric in models.metrics:
        for column in ("counts", "score_means", "pass_fractions", "fails"):
            assert getattr(stored, column)(metric).tolist() == pytest.approx(
                getattr(models, column)(metric).tolist(), nan_ok=True
            )
