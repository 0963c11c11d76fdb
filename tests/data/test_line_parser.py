"""A file's JSONL lines read through LineParser give exactly what the checked parse gives:
the same value, or the same error, line by line. Its shortcut (no repeated-key check on a line
whose colons and brackets prove it cannot hold one) must never let a repeated key, a line
nested too deep, or a changed value through."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.data.bounded import MAX_DEPTH
from assay.data.documents import LineParser, parse_jsonl_line
from assay.errors import DatasetError, InputError

PATH = Path("lines.jsonl")
IDS = json.dumps([f"doc-{n}" for n in range(40)])  # long enough for the shortcut (256 chars)

keys = st.sampled_from(["id", "a", "b", "q:x", "[k", "\\u0061"])
strings = st.sampled_from(['"doc-1"', '"x: y"', '"[["', '"\\":"', '"\\u00e9"', '"{"', '""'])
scalars = st.one_of(strings, st.sampled_from(["1", "-2.5e3", "true", "null", "1e999"]))


def render(pairs: list[tuple[str, str]]) -> str:
    """An object's text from ``(key, value text)`` pairs, repeats kept as written."""
    return "{" + ", ".join(f'"{key}": {value}' for key, value in pairs) + "}"


values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4).map(lambda items: "[" + ", ".join(items) + "]"),
        st.lists(st.tuples(keys, inner), max_size=4).map(render),
    ),
    max_leaves=12,
)
lines = st.lists(st.tuples(keys, values), min_size=1, max_size=5).map(
    lambda pairs: render([*pairs, ("ids", IDS)])
)


def outcome(read: Any, line: str, number: int) -> tuple[str, Any]:
    """What reading ``line`` gave: its value, or its error's message."""
    try:
        return "value", read(line, number)
    except InputError as exc:
        return "error", str(exc)


def checked(line: str, number: int) -> Any:
    return parse_jsonl_line(line, number, PATH, DatasetError)


def same(a: tuple[str, Any], b: tuple[str, Any]) -> bool:
    """Equal outcomes, NaN-free values compared through their JSON (1e999 is inf in both)."""
    if a[0] != b[0] or a[0] == "error":
        return a == b
    return json.dumps(a[1], sort_keys=True) == json.dumps(b[1], sort_keys=True)


@settings(max_examples=300, deadline=None)
@given(st.lists(lines, min_size=1, max_size=6))
def test_every_line_reads_as_the_checked_parse_reads_it(file_lines: list[str]) -> None:
    parse = LineParser(PATH, DatasetError)
    for number, line in enumerate(file_lines, start=1):
        assert same(outcome(parse, line, number), outcome(checked, line, number)), line


def repeats_a_key(line: str) -> bool:
    """The stdlib's reading: whether any object in ``line`` gives a key twice."""
    found = False

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        nonlocal found
        found |= len({key for key, _ in items}) != len(items)
        return dict(items)

    json.loads(line, object_pairs_hook=pairs)
    return found


@settings(max_examples=300, deadline=None)
@given(lines)
def test_a_repeated_key_is_refused_whatever_the_line_holds(line: str) -> None:
    parse = LineParser(PATH, DatasetError)
    kind, value = outcome(parse, line, 1)
    assert (kind == "error") == repeats_a_key(line)
    if kind == "value":  # and the value is the stdlib's reading of the line
        assert same((kind, value), ("value", json.loads(line)))


@pytest.mark.parametrize(
    "line",
    [
        # a repeat inside an object in a list: its colons are not the value's members
        '{"id": "s", "r": [{"z": 1, "z": 2}], "ids": ' + IDS + "}",
        # a repeat beside a colon in a string: the two never cancel out
        '{"id": "a:b", "id": "c", "ids": ' + IDS + "}",
        # a repeat in an inner object
        '{"id": "s", "m": {"k": 1, "k": 2}, "ids": ' + IDS + "}",
    ],
)
def test_a_long_line_with_a_repeated_key_is_refused(line: str) -> None:
    with pytest.raises(DatasetError, match="is given twice"):
        LineParser(PATH, DatasetError)(line, 3)


def test_a_long_line_nested_past_the_limit_is_refused_as_the_checked_parse_refuses_it() -> None:
    deep = "[" * (MAX_DEPTH + 20) + "]" * (MAX_DEPTH + 20)  # jiter itself allows ~200 levels
    line = '{"id": "s", "deep": ' + deep + ', "ids": ' + IDS + "}"
    assert outcome(LineParser(PATH, DatasetError), line, 4) == outcome(checked, line, 4)
    assert outcome(checked, line, 4)[0] == "error"


def test_a_ranking_line_reads_through_the_shortcut_with_its_value_intact() -> None:
    line = json.dumps({"id": "q1", "output": "", "retrieved": json.loads(IDS)})
    parse = LineParser(PATH, DatasetError)
    assert parse(line, 1) == json.loads(line)
    defeated = '{"id": "q2", "output": "note: x", "retrieved": ' + IDS + "}"
    assert parse(defeated, 2) == json.loads(defeated)  # a colon in its text: checked parse
    assert parse(line, 3) == json.loads(line)
