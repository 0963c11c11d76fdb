"""DetailRows stands for the list of per-row details dicts a metric batch's columns give:
it reads, iterates, slices and compares as that list does."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from assay.data.executions import DetailRows, PlainScores

_cell = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text())


@given(
    keys=st.lists(st.text(max_size=4), unique=True, max_size=3),
    size=st.integers(0, 5),
    data=st.data(),
)
def test_detail_rows_read_as_the_list_of_dicts(keys: list[str], size: int, data: Any) -> None:
    columns = [data.draw(st.lists(_cell, min_size=size, max_size=size)) for _ in keys]
    rows = DetailRows(keys, list(columns), size)
    expected = [{key: column[i] for key, column in zip(keys, columns)} for i in range(size)]
    assert list(rows) == expected
    assert len(rows) == size
    assert [rows[i] for i in range(-size, size)] == expected + expected
    assert rows[1:] == expected[1:]
    assert rows == expected and expected == rows
    assert PlainScores([0.5] * size, rows) == PlainScores([0.5] * size, expected)


def test_detail_rows_out_of_range_and_unhashable() -> None:
    rows = DetailRows(["k"], [[1, 2]], 2)
    with pytest.raises(IndexError):
        rows[2]
    with pytest.raises(TypeError):
        hash(rows)
    assert rows != [{"k": 1}]
    assert rows != "kk"
