"""A JSONL dataset read whole builds its plain-shaped samples without the model's walk over
each value: the dataset must be the one the model validates, field for field, and anything
that is not plain (or not valid) must read, or fail, exactly as before."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.data.dataset import Dataset, dataset_from_data, read_dataset
from assay.errors import DatasetError

_leaf = st.one_of(st.none(), st.booleans(), st.integers(-9, 9), st.text(max_size=5))
_value = st.recursive(
    _leaf,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)
_plain = st.fixed_dictionaries(
    {
        "id": st.one_of(st.text(min_size=1, max_size=4), st.integers(0, 10**6)),
        "input": st.dictionaries(st.text(max_size=4), _value, max_size=3),
        "expected_output": _value,
    },
    optional={"metadata": st.dictionaries(st.text(max_size=4), _value, max_size=3)},
)


def _write(tmp_path: Path, rows: list[Any]) -> Path:
    path = tmp_path / "data.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def _same(got: Dataset, expected: Dataset) -> None:
    assert got.model_dump() == expected.model_dump()
    assert [s.model_fields_set for s in got.samples] == [
        s.model_fields_set for s in expected.samples
    ]
    assert [s.row_hash for s in got.samples] == [s.row_hash for s in expected.samples]


@settings(max_examples=150, deadline=None)
@given(rows=st.lists(_plain, min_size=1, max_size=6, unique_by=lambda row: str(row["id"])))
def test_plain_samples_read_as_the_model_validates_them(
    tmp_path_factory: pytest.TempPathFactory, rows: list[dict[str, Any]]
) -> None:
    path = _write(tmp_path_factory.mktemp("plain"), rows)
    expected = dataset_from_data({"name": "data", "samples": rows}, source=str(path))
    _same(read_dataset(path), expected)


def test_a_file_with_one_sample_of_another_shape_goes_through_the_model(tmp_path: Path) -> None:
    rows = [
        {"id": "a", "input": {"q": 1}, "expected_output": "x"},
        {"id": "c", "turns": [{"user": "hi", "expected_output": "hello"}]},
    ]
    dataset = read_dataset(_write(tmp_path, rows))
    assert [s.id for s in dataset.samples] == ["a", "c#1"]  # the conversation expanded


@pytest.mark.parametrize(
    ("rows", "words"),
    [
        (
            [{"id": "a", "input": {}, "expected_output": 1}] * 2,
            ["duplicate id 'a'", "#0", "#1"],
        ),
        (
            [
                {"id": 7, "input": {}, "expected_output": 1},
                {"id": "7", "input": {}, "expected_output": 2},
            ],
            ["duplicate id '7'"],
        ),
        (
            [{"id": "a", "input": {}, "expected_output": 1}, {"id": "b", "input": {}}],
            ["expected_output"],
        ),
    ],
)
def test_problems_read_as_before(tmp_path: Path, rows: list[Any], words: list[str]) -> None:
    with pytest.raises(DatasetError) as info:
        read_dataset(_write(tmp_path, rows))
    assert all(word in str(info.value) for word in words), str(info.value)
