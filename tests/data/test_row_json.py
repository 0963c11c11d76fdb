"""A report row written once, as JSON, when its execution finishes
(assay.data.results.row_document).

The stored bytes are written into JSON reports as they are, so they must equal what the report
model itself serializes for the same row after full validation, for any scores, details, tags
and errors; and a result stored as its row must read back as the same result.
"""

from __future__ import annotations

import json
from typing import Any

import pydantic_core
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.data.executions import DetailRows
from assay.data.results import (
    SUT_STAGE,
    ExecutionResult,
    ScoreResult,
    row_document,
    row_documents,
    scored_rows,
    threshold_for,
)
from assay.report.model import Row
from assay.store.schema import encode_plain_rows, encode_scored_columns

_text = st.text(max_size=12)
_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**40), 2**40),
    st.floats(allow_nan=False, allow_infinity=False),
    _text,
)
_details = st.dictionaries(
    _text, st.recursive(_leaf, lambda inner: st.lists(inner, max_size=3), max_leaves=6), max_size=4
)
_outcome = st.one_of(
    st.builds(lambda v, d: ScoreResult(v, d), st.floats(0.0, 1.0), _details),
    st.builds(lambda e: ScoreResult(None, error=e), _text.filter(bool)),
    st.just(ScoreResult(None)),
)
METRICS = ["exact-match", "rouge-l", "ünïcode"]


@st.composite
def results(draw: st.DrawFn) -> ExecutionResult:
    names = draw(st.lists(st.sampled_from(METRICS), unique=True))
    scores = {name: draw(_outcome) for name in names}
    sut_error = draw(st.one_of(st.none(), _text))
    return ExecutionResult(draw(_text), draw(st.integers(0, 5)), scores, sut_error)


@settings(max_examples=300, deadline=None)
@given(
    result=results(),
    tags=st.lists(_text, max_size=3),
    thresholds=st.dictionaries(st.sampled_from(METRICS), st.floats(0.0, 1.0), max_size=3),
)
def test_row_bytes_equal_the_validated_model(
    result: ExecutionResult, tags: list[str], thresholds: dict[str, float]
) -> None:
    written = pydantic_core.to_json(row_document(result, tags, "h", METRICS, thresholds))
    validated = Row.model_validate(json.loads(written))
    assert written == validated.__pydantic_serializer__.to_json(validated)


def test_row_passes_by_threshold_and_lists_errors() -> None:
    result = ExecutionResult(
        "q1",
        0,
        {"a": ScoreResult(0.6), "b": ScoreResult(0.6), "c": ScoreResult(None, error="boom")},
    )
    row = row_document(result, ["t"], "h", ["a", "b", "c"], {"b": 0.7})
    assert row["scores"]["a"]["passed"] is True
    assert row["scores"]["b"]["passed"] is False
    assert row["errors"] == {"c": "boom"}
    assert row["passed"] is False


def test_a_result_stored_as_its_row_reads_back() -> None:
    result = ExecutionResult(
        "q1",
        2,
        {"a": ScoreResult(0.25, {"k": [1, "x"]}), "b": ScoreResult(None, error="bad")},
        sut_error=None,
    )
    row = json.loads(pydantic_core.to_json(row_document(result, [], "h", ["a", "b"])))
    back = ExecutionResult.from_json("q1", 2, row)
    assert back.scores["a"].value == 0.25 and back.scores["a"].details == {"k": [1, "x"]}
    assert back.scores["b"].value is None and back.scores["b"].error == "bad"
    failed = ExecutionResult("q2", 0, {}, sut_error="timeout")
    row = json.loads(pydantic_core.to_json(row_document(failed, [], "h", ["a"])))
    assert row["errors"] == {SUT_STAGE: "timeout"}
    assert ExecutionResult.from_json("q2", 0, row).sut_error == "timeout"


@settings(max_examples=100, deadline=None)
@given(
    batch=st.lists(st.tuples(results(), st.lists(_text, max_size=2)), max_size=6),
    thresholds=st.dictionaries(st.sampled_from(METRICS), st.floats(0.0, 1.0), max_size=3),
)
def test_rows_of_a_chunk_are_each_rows_document(
    batch: list[tuple[ExecutionResult, list[str]]], thresholds: dict[str, float]
) -> None:
    """The chunk path writes its rows in one call: each the validated model's bytes."""
    chunk = [r for r, _ in batch]
    tags = [t for _, t in batch]
    hashes = [f"h{i}" for i in range(len(batch))]
    rows = row_documents(chunk, tags, hashes, METRICS, thresholds)
    assert len(rows) == len(batch)
    for row, result, labels, row_hash in zip(rows, chunk, tags, hashes):
        written = pydantic_core.to_json(row)
        validated = Row.model_validate(json.loads(written))
        assert written == validated.__pydantic_serializer__.to_json(validated)
        assert row == row_document(result, labels, row_hash, METRICS, thresholds)


_scalar = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),  # past 64 bits too
    st.floats(-1e16, 1e16, exclude_min=True, exclude_max=True),  # what a plain column holds
    st.text(max_size=12),
    st.sampled_from(["1e5", ":12e3", "[7e1", "caf\u00e9", "\u2028"]),  # exponents in strings
)
_plain_details = st.dictionaries(st.text(max_size=6), _scalar, max_size=3)


@settings(max_examples=200, deadline=None)
@given(
    columns=st.lists(
        st.tuples(st.floats(0.0, 1.0), _plain_details), min_size=1, max_size=5
    ).flatmap(
        lambda first: st.lists(
            st.lists(
                st.tuples(st.floats(0.0, 1.0), _plain_details),
                min_size=len(first),
                max_size=len(first),
            ),
            max_size=len(METRICS) - 1,
        ).map(lambda rest: [first, *rest])
    ),
    thresholds=st.dictionaries(st.sampled_from(METRICS), st.floats(0.0, 1.0), max_size=3),
)
def test_rows_built_from_plain_columns_are_each_rows_document(
    columns: list[list[tuple[float, dict[str, Any]]]], thresholds: dict[str, float]
) -> None:
    """scored_rows (a clean chunk's columns) gives row_document's rows, and encode_plain_rows
    gives pydantic-core's bytes for them (big integers and number-like strings included)."""
    names = METRICS[: len(columns)]
    size = len(columns[0])
    ids, repetitions = [f"s{i}" for i in range(size)], [i % 3 for i in range(size)]
    tags, hashes = [["t"] if i % 2 else [] for i in range(size)], [f"h{i}" for i in range(size)]
    spec = [
        (name, threshold_for(thresholds, name), [v for v, _ in col], [d for _, d in col])
        for name, col in zip(names, columns)
    ]
    rows = scored_rows(ids, repetitions, tags, hashes, spec)
    for index, row in enumerate(rows):
        scores = {name: ScoreResult(*col[index]) for name, col in zip(names, columns)}
        result = ExecutionResult(ids[index], repetitions[index], scores)
        assert row == row_document(result, tags[index], hashes[index], METRICS, thresholds)
    assert encode_plain_rows(rows) == [pydantic_core.to_json(row) for row in rows]


_cell_text = st.one_of(
    st.text(max_size=8), st.sampled_from(["a,b", "%s", '"q"', "%b,%%", "\u2028"])
)


@st.composite
def _detail_column_set(draw: st.DrawFn, size: int) -> DetailRows | list[dict[str, Any]]:
    """A metric's details over ``size`` rows: columns of one scalar kind each (DetailRows),
    or a dict per row with keys that differ from row to row."""
    if draw(st.booleans()):
        return [draw(_plain_details) for _ in range(size)]
    keys = draw(st.lists(_cell_text, unique=True, max_size=3))
    kinds = [st.none(), st.booleans(), st.integers(-(2**70), 2**70), _cell_text]
    columns = []
    for _ in keys:
        kind = draw(
            st.sampled_from(
                [*kinds, st.floats(-1e16, 1e16, exclude_min=True, exclude_max=True), _scalar]
            )
        )
        columns.append([draw(kind) for _ in range(size)])
    return DetailRows(keys, columns, size)


@settings(max_examples=300, deadline=None)
@given(data=st.data(), size=st.integers(0, 6), count=st.integers(0, 3))
def test_rows_encoded_from_columns_are_pydantic_cores_bytes(
    data: st.DataObject, size: int, count: int
) -> None:
    """encode_scored_columns writes the bytes pydantic-core writes for scored_rows' rows (the
    stored rows a report copies as they are), from columns of any scalars: strings with commas,
    quotes and percent signs, integers past 64 bits, floats, ids and tags of any text."""
    names = data.draw(st.lists(_cell_text, unique=True, min_size=count, max_size=count))
    names = [name.replace("%", "%%") if data.draw(st.booleans()) else name for name in names]
    ids = data.draw(st.lists(_cell_text, min_size=size, max_size=size))
    repetitions = data.draw(st.lists(st.integers(0, 9), min_size=size, max_size=size))
    tags = data.draw(st.lists(st.lists(_cell_text, max_size=2), min_size=size, max_size=size))
    hashes = data.draw(st.lists(_cell_text, min_size=size, max_size=size))
    spec = [
        (
            name,
            data.draw(st.floats(0.0, 1.0)),
            data.draw(st.lists(st.floats(0.0, 1.0), min_size=size, max_size=size)),
            data.draw(_detail_column_set(size)),
        )
        for name in names
    ]
    expected = [
        pydantic_core.to_json(row) for row in scored_rows(ids, repetitions, tags, hashes, spec)
    ]
    assert encode_scored_columns(ids, repetitions, tags, hashes, spec) == expected
