"""A key given twice in one object of a dataset or saved-outputs file is refused, in YAML, JSON
and JSONL alike, whether the file is loaded whole or kept on disk: never "the last one wins"."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.data import dataset_stream, outputs_stream
from assay.data.documents import parse_jsonl_line
from assay.data.loading import load_dataset, load_outputs
from assay.errors import DatasetError, OutputsError
from engine.procs import run_assay


def sample(number: int) -> str:
    """A valid sample line of id ``s<number>``."""
    return '{"id": "s' + str(number) + '", "input": {"q": "x"}, "expected_output": "a"}'


def document(*samples: str, after: str = "") -> str:
    """A JSON dataset document of ``samples`` (their texts), with members ``after`` them."""
    return '{"name": "t", "samples": [' + ",".join(samples) + "]" + after + "}"


# Each: a sample line with a key twice (the key the message must name).
REPEATED = [
    (
        '{"id": "s9", "input": {"q": "x"}, "expected_output": "a", "expected_output": "b"}',
        "expected_output",
    ),
    ('{"id": "s9", "input": {"q": "x", "q": "y"}, "expected_output": "a"}', "q"),
    ('{"id": "s9", "input": {"q": "x"}, "expected_output": {"k": [{"z": 1, "z": 2}]}}', "z"),
    ('{"id": "s9", "input": {"\\u0061": 1, "a": 2}, "expected_output": "a"}', "a"),  # same key
]


@pytest.fixture(params=["whole", "streamed"])
def mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Small files are loaded whole; large ones are kept on disk (threshold moved to 0)."""
    size = 0 if request.param == "streamed" else 1 << 62
    monkeypatch.setattr(dataset_stream, "STREAM_MIN_BYTES", size)
    monkeypatch.setattr(outputs_stream, "STREAM_MIN_BYTES", size)
    return str(request.param)


@pytest.mark.parametrize(("line", "key"), REPEATED)
def test_a_jsonl_dataset_line_with_a_key_twice_is_named(
    tmp_path: Path, mode: str, line: str, key: str
) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text("\n".join([sample(1), sample(2), line]) + "\n", encoding="utf-8")
    with pytest.raises(DatasetError) as raised:
        load_dataset(path)
    assert str(raised.value) == f"{path}: line 3: key {key!r} is given twice"


@pytest.mark.parametrize(("line", "key"), REPEATED)
def test_a_json_dataset_document_with_a_key_twice_is_named(
    tmp_path: Path, mode: str, line: str, key: str
) -> None:
    path = tmp_path / "d.json"
    path.write_text(document(sample(1), line, sample(2)), encoding="utf-8")
    with pytest.raises(DatasetError) as raised:
        load_dataset(path)
    message = f"{path}: not valid JSON: key {key!r} is given twice (line 1, column "
    assert str(raised.value).startswith(message)


def test_a_document_member_given_twice_is_named(tmp_path: Path, mode: str) -> None:
    path = tmp_path / "d.json"
    path.write_text(document(sample(1), after=', "name": "u"'), encoding="utf-8")
    with pytest.raises(DatasetError, match="key 'name' is given twice"):
        load_dataset(path)


@pytest.mark.parametrize(
    ("name", "text", "key"),
    [
        (
            "o.jsonl",
            '{"id": "s1", "output": "a"}\n{"id": "s2", "output": "a", "output": "b"}\n',
            "output",
        ),
        ("o.json", '{"outputs": {"s1": "a", "s2": "b", "s1": "c"}}', "s1"),
        ("o.json", '{"outputs": {"s1": {"output": "a", "output": "b"}, "s2": "b"}}', "output"),
    ],
)
def test_saved_outputs_with_a_key_twice_are_refused(
    tmp_path: Path, mode: str, name: str, text: str, key: str
) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(OutputsError, match=f"key '{key}' is given twice"):
        load_outputs(path)


def test_the_command_exits_2_naming_the_file_and_the_key(tmp_path: Path) -> None:
    documents = {
        "d.yml": "name: t\nsamples:\n  - {id: s1, input: {q: x}, expected_output: a, "
        "expected_output: b}\n",
        "d.json": document(REPEATED[0][0]),
        "d.jsonl": REPEATED[0][0] + "\n",
    }
    for name, text in documents.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
        result = run_assay(["validate", name], cwd=tmp_path)
        assert result.returncode == 2, result.stderr
        (line,) = result.stderr.strip().splitlines()
        assert (
            line.startswith(f"assay: error: {name}: ")
            and "'expected_output' is given twice" in line
        )


# Values as JSON has them: no NaN (it never equals itself), keys unique (a dict's are).
JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=20,
)


def _same(left: Any, right: Any) -> bool:
    """Equal, and of the same types throughout (1 and 1.0, -0.0 and 0.0 told apart)."""
    if type(left) is not type(right):
        return False
    if isinstance(left, float):
        return math.copysign(1.0, left) == math.copysign(1.0, right) and left == right
    if isinstance(left, list):
        return len(left) == len(right) and all(map(_same, left, right))
    if isinstance(left, dict):
        return list(left) == list(right) and all(_same(left[k], right[k]) for k in left)
    return bool(left == right)


@settings(max_examples=300, deadline=None)
@given(JSON_VALUES, st.booleans())
def test_a_jsonl_line_reads_as_the_stdlib_reads_it(value: Any, ascii_only: bool) -> None:
    line = json.dumps(value, ensure_ascii=ascii_only)
    assert _same(parse_jsonl_line(line, 1, Path("x.jsonl"), DatasetError), json.loads(line))
