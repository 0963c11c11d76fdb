"""Saved-outputs files: padosoft's wrapper (mapping and list, JSON and YAML), JSONL, and errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assay.data.loading import load_dataset, load_outputs
from assay.data.outputs import Output, Retrieved, check_outputs_cover, coerce_output
from assay.errors import OutputsError, SystemUnderTestError

DATA = Path(__file__).parent / "files"


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def outputs_error(path: Path) -> OutputsError:
    with pytest.raises(OutputsError) as info:
        load_outputs(path)
    assert str(path) in str(info.value)
    return info.value


def texts(outputs: dict[str, Output]) -> dict[str, str]:
    return {key: value.text for key, value in outputs.items()}


# --------------------------------------------------------------------------- shapes


def test_mapping_form_json(tmp_path: Path) -> None:
    path = write(tmp_path, "o.json", json.dumps({"outputs": {"a": "alpha", "007": "bond"}}))
    assert texts(load_outputs(path)) == {"a": "alpha", "007": "bond"}


def test_list_form_json(tmp_path: Path) -> None:
    doc = {"outputs": [{"id": "a", "actual_output": "alpha"}, {"id": 7, "actual_output": "seven"}]}
    assert texts(load_outputs(write(tmp_path, "o.json", json.dumps(doc)))) == {
        "a": "alpha",
        "7": "seven",
    }


def test_mapping_form_yaml_keeps_numeric_looking_keys(tmp_path: Path) -> None:
    text = "outputs:\n  a: alpha\n  007: bond\n  0042: code\n  42: answer\n  1.50: price\n"
    assert texts(load_outputs(write(tmp_path, "o.yml", text))) == {
        "a": "alpha",
        "007": "bond",
        "0042": "code",
        "42": "answer",
        "1.50": "price",
    }


def test_list_form_yaml(tmp_path: Path) -> None:
    text = (
        "outputs:\n  - {id: 007, actual_output: bond}\n"
        "  - id: b\n    actual_output: |\n      two\n      lines\n"
    )
    assert texts(load_outputs(write(tmp_path, "o.yaml", text))) == {
        "007": "bond",
        "b": "two\nlines\n",
    }


def test_jsonl_id_output_lines(tmp_path: Path) -> None:
    text = '{"id": "a", "output": "alpha"}\n\n{"id": 7, "output": "seven"}\n'
    assert texts(load_outputs(write(tmp_path, "o.jsonl", text))) == {"a": "alpha", "7": "seven"}


def test_output_mapping_with_retrieved(tmp_path: Path) -> None:
    doc = {
        "outputs": {
            "a": {"output": "alpha", "retrieved": ["d1", {"id": "d2", "text": "Doc two"}, "d1"]},
            "b": {"output": "beta", "retrieved": []},
        }
    }
    loaded = load_outputs(write(tmp_path, "o.json", json.dumps(doc)))
    # duplicates keep their best rank; text kept when given
    assert loaded["a"] == Output("alpha", (Retrieved("d1"), Retrieved("d2", "Doc two")))
    assert loaded["b"].retrieved == ()


def test_jsonl_line_with_retrieved(tmp_path: Path) -> None:
    text = json.dumps({"id": "a", "output": "alpha", "retrieved": ["d3", "d1"]}) + "\n"
    loaded = load_outputs(write(tmp_path, "o.jsonl", text))
    assert loaded["a"].retrieved == (Retrieved("d3"), Retrieved("d1"))


def test_list_form_with_retrieved_and_trajectory(tmp_path: Path) -> None:
    doc = {
        "outputs": [
            {
                "id": "a",
                "actual_output": "x",
                "retrieved": ["d1"],
                "trajectory": {"tools": ["search"]},
            }
        ]
    }
    loaded = load_outputs(write(tmp_path, "o.json", json.dumps(doc)))
    assert loaded["a"].retrieved == (Retrieved("d1"),)
    assert loaded["a"].trajectory == {"tools": ["search"]}


def test_padosoft_fixture_pair_covers_its_dataset() -> None:
    dataset = load_dataset(DATA / "padosoft_rag.yml")
    outputs = load_outputs(DATA / "padosoft_outputs.yml")
    check_outputs_cover(outputs, [s.id for s in dataset.samples], path="padosoft_outputs.yml")
    assert outputs["0042"].text == "WH-IT-07"
    assert outputs["1.50"].text == "1.50 euros"


def test_quickstart_outputs_cover_the_quickstart_dataset() -> None:
    root = Path(__file__).resolve().parents[2] / "examples" / "quickstart"
    dataset = load_dataset(root / "dataset.yml")
    outputs = load_outputs(root / "outputs.json")
    check_outputs_cover(outputs, [s.id for s in dataset.samples], path="outputs.json")


# --------------------------------------------------------------------------- coverage errors


def test_missing_ids_are_named() -> None:
    with pytest.raises(OutputsError) as info:
        check_outputs_cover({"a": Output("x")}, ["a", "b", "c"], path="saved.json")
    message = str(info.value)
    assert (
        "saved.json" in message and "'b'" in message and "'c'" in message and "'a'" not in message
    )


def test_unknown_ids_are_named() -> None:
    outputs = {sid: Output("x") for sid in ("a", "b", "ghost")}
    with pytest.raises(OutputsError) as info:
        check_outputs_cover(outputs, ["a", "b"], path="saved.json")
    assert "'ghost'" in str(info.value)


def test_long_lists_of_missing_ids_are_shortened() -> None:
    ids = [f"s{i}" for i in range(25)]
    with pytest.raises(OutputsError) as info:
        check_outputs_cover({}, ids, path="saved.json")
    message = str(info.value)
    assert "25 sample(s)" in message and "'s0'" in message and "and 15 more" in message
    assert "'s24'" not in message


def test_numeric_string_ids_are_compared_verbatim() -> None:
    with pytest.raises(OutputsError) as info:
        check_outputs_cover({"7": Output("x")}, ["007"], path="saved.json")
    assert "'007'" in str(info.value)


# --------------------------------------------------------------------------- file errors


def test_duplicate_id_in_list_form(tmp_path: Path) -> None:
    doc = {"outputs": [{"id": "a", "actual_output": "x"}, {"id": "a", "actual_output": "y"}]}
    error = outputs_error(write(tmp_path, "o.json", json.dumps(doc)))
    assert (error.sample, error.field) == ("a", "id")


def test_duplicate_id_in_jsonl(tmp_path: Path) -> None:
    error = outputs_error(
        write(tmp_path, "o.jsonl", '{"id": "a", "output": "x"}\n{"id": "a", "output": "y"}\n')
    )
    assert error.sample == "a" and "line 2" in error.detail


def test_duplicate_after_string_conversion(tmp_path: Path) -> None:
    doc = {"outputs": [{"id": 7, "actual_output": "x"}, {"id": "7", "actual_output": "y"}]}
    assert outputs_error(write(tmp_path, "o.json", json.dumps(doc))).sample == "7"


@pytest.mark.parametrize("value", [3, 1.5, None, True, ["a"]])
def test_non_string_output_is_rejected(tmp_path: Path, value: object) -> None:
    error = outputs_error(write(tmp_path, "o.json", json.dumps({"outputs": {"a": value}})))
    assert (error.sample, error.field) == ("a", "output")


def test_non_string_output_in_mapping_entry(tmp_path: Path) -> None:
    error = outputs_error(write(tmp_path, "o.json", json.dumps({"outputs": {"a": {"output": 5}}})))
    assert (error.sample, error.field) == ("a", "output")


def test_jsonl_line_without_output(tmp_path: Path) -> None:
    error = outputs_error(write(tmp_path, "o.jsonl", '{"id": "a", "text": "x"}\n'))
    assert error.sample == "a"


def test_bad_retrieved_is_rejected(tmp_path: Path) -> None:
    doc = {"outputs": {"a": {"output": "x", "retrieved": [{"text": "no id"}]}}}
    error = outputs_error(write(tmp_path, "o.json", json.dumps(doc)))
    assert error.sample == "a" and "retrieved[0]" in error.detail


@pytest.mark.parametrize(
    ("entry", "field", "where"),
    [
        ({"output": "x", "retrieved": [None]}, "retrieved", "'retrieved[0]'"),
        ({"output": "x", "retrieved": "d1"}, "retrieved", "'retrieved'"),
        ({"output": "x", "contexts": "c"}, "contexts", "'contexts'"),
        ({"output": "x", "contexts": ["c", 3]}, "contexts", "'contexts[1]'"),
        ({"output": "x", "trajectory": [1]}, "trajectory", "'trajectory'"),
        ({"actual_output": 5}, "actual_output", "'actual_output'"),
        ({"output": None, "actual_output": "x"}, "output", "'output'"),
    ],
)
@pytest.mark.parametrize("name", ["o.json", "o.jsonl"])
def test_a_bad_part_of_an_output_is_the_field_named(
    tmp_path: Path, entry: dict[str, object], field: str, where: str, name: str
) -> None:
    """The error names the key at fault, in a JSON document and in a streamed JSONL file."""
    if name.endswith(".jsonl"):
        good = json.dumps({"id": "b", "output": "y"})
        text = good + "\n" + json.dumps({"id": "a", **entry}) + "\n"
    else:
        text = json.dumps({"outputs": {"b": "y", "a": entry}})
    error = outputs_error(write(tmp_path, name, text))
    assert (error.sample, error.field) == ("a", field)
    assert where in error.detail
    assert f"sample 'a': field '{field}': " in str(error)


class _Id(str):
    pass


@pytest.mark.parametrize(
    "raw",
    [
        ["b", "a", "b", "c", "a"],
        ["c", "a", "b"],
        [],
        ("a", "b", "a"),
        ["a", _Id("b"), "b"],
        ["a", {"id": "b", "text": "B"}, "a", 7, {"id": "7", "text": "seven"}],
    ],
)
def test_retrieved_ids_keep_their_first_rank(raw: list[object]) -> None:
    """Lists of id strings take a shortcut; every shape gives the first entry of each id."""
    expected: dict[str, Retrieved] = {}
    for entry in raw:
        if isinstance(entry, dict):
            item = Retrieved(entry["id"], entry["text"])
        else:
            item = Retrieved(str(entry) if isinstance(entry, int) else entry)
        expected.setdefault(item.id, item)
    output = coerce_output({"output": "", "retrieved": raw})
    assert output.retrieved == tuple(expected.values())


def test_empty_retrieved_id_is_rejected_in_a_list_of_ids() -> None:
    with pytest.raises(SystemUnderTestError, match=r"'retrieved\[1\]' must be a non-empty id"):
        coerce_output({"output": "", "retrieved": ["a", "", "b"]})


@pytest.mark.parametrize("doc", [{"a": "x"}, ["a"], {"output": {"a": "x"}}])
def test_outputs_wrapper_is_required(tmp_path: Path, doc: object) -> None:
    error = outputs_error(write(tmp_path, "o.json", json.dumps(doc)))
    assert error.field == "outputs"


def test_outputs_wrapper_of_wrong_type(tmp_path: Path) -> None:
    assert outputs_error(write(tmp_path, "o.json", '{"outputs": "x"}')).field == "outputs"


@pytest.mark.parametrize(
    "entry",
    [{"actual_output": "x"}, {"id": "", "actual_output": "x"}, {"id": True, "actual_output": "x"}],
)
def test_list_entry_without_usable_id(tmp_path: Path, entry: dict[str, object]) -> None:
    assert outputs_error(write(tmp_path, "o.json", json.dumps({"outputs": [entry]}))).field == "id"


def test_list_entry_that_is_not_an_object(tmp_path: Path) -> None:
    error = outputs_error(write(tmp_path, "o.json", json.dumps({"outputs": ["x"]})))
    assert "outputs[0]" in error.detail


def test_malformed_json_and_yaml(tmp_path: Path) -> None:
    assert (
        "not valid JSON" in outputs_error(write(tmp_path, "o.json", '{"outputs": {"a": "x"')).detail
    )
    assert "not valid YAML" in outputs_error(write(tmp_path, "o.yml", "outputs:\n  a: [x\n")).detail
    assert (
        "line 2"
        in outputs_error(write(tmp_path, "o.jsonl", '{"id": "a", "output": "x"}\nnope\n')).detail
    )


def test_jsonl_line_that_is_not_an_object(tmp_path: Path) -> None:
    assert "line 1" in outputs_error(write(tmp_path, "o.jsonl", '["a", "x"]\n')).detail


def test_invalid_utf8_and_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "o.json"
    path.write_bytes(b'{"outputs": {"a": "\xc3\x28"}}')
    assert "UTF-8" in outputs_error(path).detail
    outputs_error(tmp_path / "absent.json")


# --------------------------------------------------------------------------- coerce_output


def test_coerce_output_shapes() -> None:
    assert coerce_output("hi") == Output("hi")
    assert coerce_output({"output": "hi", "retrieved": [1, "d2"]}) == Output(
        "hi", (Retrieved("1"), Retrieved("d2"))
    )
    assert coerce_output({"actual_output": "hi"}) == Output("hi")
    out = Output("same")
    assert coerce_output(out) is out
    for bad in (None, 3, ["x"], {"output": None}, {"output": "x", "retrieved": "d1"}):
        with pytest.raises(SystemUnderTestError):
            coerce_output(bad)
