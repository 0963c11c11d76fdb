"""Dataset loading: formats, padosoft compatibility, verbatim ids, and precise error messages."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.data.dataset import Dataset, Sample
from assay.data.loading import load_dataset
from assay.errors import DatasetError, MetricError

DATA = Path(__file__).parent / "files"

SAMPLES = [
    {"id": "a", "input": {"q": "one"}, "expected_output": "x", "metadata": {"tags": ["t1"]}},
    {"id": "b", "input": {"q": "two"}, "expected_output": ["y", 2], "metadata": {}},
]


def write(tmp_path: Path, name: str, text: str | bytes) -> Path:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def load_error(tmp_path: Path, name: str, text: str | bytes) -> DatasetError:
    path = write(tmp_path, name, text)
    with pytest.raises(DatasetError) as info:
        load_dataset(path)
    error = info.value
    assert error.file == str(path)
    assert str(path) in str(error)
    return error


# --------------------------------------------------------------------------- formats


def test_yaml_json_and_jsonl_load_the_same_samples(tmp_path: Path) -> None:
    import yaml

    doc = {"schema_version": "assay.dataset.v1", "name": "same", "samples": SAMPLES}
    from_yaml = load_dataset(write(tmp_path, "same.yml", yaml.safe_dump(doc)))
    from_json = load_dataset(write(tmp_path, "same.json", json.dumps(doc)))
    jsonl = "\n".join(json.dumps(s) for s in SAMPLES) + "\n\n"
    from_jsonl = load_dataset(write(tmp_path, "same.jsonl", jsonl))
    for loaded in (from_yaml, from_json, from_jsonl):
        assert [s.model_dump() for s in loaded.samples] == [
            {
                "id": s["id"],
                "input": s["input"],
                "expected_output": s["expected_output"],
                "metadata": s["metadata"],
            }
            for s in SAMPLES
        ]
    assert from_yaml.name == from_json.name == "same"
    # A JSONL file has no header: the dataset is named after the file.
    assert from_jsonl.name == "same"
    assert from_yaml.schema_version == "assay.dataset.v1"


def test_yaml_extension_case_and_yaml_suffix(tmp_path: Path) -> None:
    text = "name: n\nsamples:\n  - {id: a, input: {}, expected_output: x}\n"
    assert load_dataset(write(tmp_path, "d.YAML", text)).samples[0].id == "a"


def test_padosoft_dataset_is_read_unchanged() -> None:
    path = DATA / "padosoft_rag.yml"
    dataset = load_dataset(path)
    assert dataset.schema_version == "eval-harness.dataset.v1"
    assert dataset.name == "rag.factuality.fy2026"
    assert dataset.repetitions == 2  # digit string accepted
    assert [s.id for s in dataset.samples] == ["capital-france", "0", "0042", "1.50"]
    france, zero, wh, price = dataset.samples
    assert france.tags == ["geography", "europe"]
    assert zero.input == {}
    assert zero.expected_output == ["refund", "30 days"]
    assert zero.tags == ["policy"]  # a single string tag
    # trimmed, empties and non-strings dropped, de-duplicated, order kept
    assert wh.tags == ["ids"]
    assert wh.expected_output == {"code": "WH-IT-07"}
    assert wh.metadata["ordinal_scale"] == ["low", "medium", "high"]
    assert price.expected_output == 1.5
    assert price.tags == []


def test_row_hash_is_sha256_of_canonical_input_and_expected() -> None:
    sample = Sample(id="x", input={"b": 1, "a": "é/ü"}, expected_output=[1, {"z": 0, "y": 2.0}])
    # Written independently: compact, sorted keys, unicode and slashes unescaped.
    canonical = '{"expected":[1,{"y":2.0,"z":0}],"input":{"a":"é/ü","b":1}}'
    assert sample.row_hash == hashlib.sha256(canonical.encode("utf-8")).hexdigest()
    # id and metadata are not part of the identity
    other = Sample(
        id="y",
        input={"a": "é/ü", "b": 1},
        expected_output=[1, {"y": 2.0, "z": 0}],
        metadata={"tags": "t"},
    )
    assert other.row_hash == sample.row_hash


_any_json = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.floats(),  # NaN and infinities included: the stdlib writes them as NaN, Infinity
        st.text(),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=5), inner, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=500, deadline=None)
@given(value=_any_json)
def test_canonical_json_is_the_stdlib_encoding(value: object) -> None:
    """Row hashes are taken over this text: it must stay json.dumps's, byte for byte."""
    from assay.data.dataset import canonical_json

    expected = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert canonical_json(value) == expected


_flat_json = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),  # past 64 bits: orjson refuses them
    st.floats(),
    st.text(),  # lone surrogates included
)


@settings(max_examples=500, deadline=None)
@given(
    input_=st.one_of(_flat_json, st.dictionaries(st.text(max_size=5), _flat_json, max_size=4)),
    expected=st.one_of(_flat_json, _any_json),
)
def test_row_hash_is_the_sha256_of_the_stdlib_encoding(input_: object, expected: object) -> None:
    """The shapes hashed through orjson give the stdlib's bytes (its hash), or fail as it does."""
    from assay.data.dataset import row_hash

    value = {"input": input_, "expected": expected}
    try:
        text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        wanted = hashlib.sha256(text.encode("utf-8")).hexdigest()
    except UnicodeEncodeError:  # a lone surrogate
        with pytest.raises(UnicodeEncodeError):
            row_hash(input_, expected)
        return
    assert row_hash(input_, expected) == wanted


@settings(max_examples=300, deadline=None)
@given(
    metadata=st.dictionaries(st.text(max_size=5), st.one_of(_flat_json, _any_json), max_size=4),
    tags=st.one_of(st.none(), st.lists(st.text(max_size=4), max_size=2)),
)
def test_content_hash_is_the_sha256_of_the_stdlib_encoding(
    metadata: dict[str, object], tags: list[str] | None
) -> None:
    """A resume's content hash: the row hash, then the metadata (tags aside) as json.dumps
    writes it, surrogates passed through; the orjson path must give the same bytes."""
    from assay.data.dataset import Sample
    from assay.engine.resume_check import content_hash

    given_metadata = {**metadata, **({"tags": tags} if tags is not None else {})}
    sample = Sample(id="s", input={"q": "x"}, expected_output="y", metadata=given_metadata)
    rest = {key: value for key, value in given_metadata.items() if key != "tags"}
    if not rest:
        assert content_hash(sample) == "h2:" + sample.row_hash[:32]
        return
    text = json.dumps(rest, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    digest = hashlib.sha256((sample.row_hash + text).encode("utf-8", "surrogatepass"))
    assert content_hash(sample) == "h2:" + digest.hexdigest()[:32]


_raw_tags = st.one_of(
    st.none(),
    st.text(max_size=3),
    st.lists(st.one_of(st.sampled_from(["a", " a", "b ", "", " "]), st.integers(0, 1)), max_size=4),
    st.tuples(st.just("a")),
    st.lists(st.dictionaries(st.just("k"), st.just("a"), max_size=1), max_size=2),
)


@settings(max_examples=300, deadline=None)
@given(raws=st.lists(_raw_tags, max_size=12))
def test_tags_of_is_each_samples_tags(raws: list[object]) -> None:
    from assay.data.dataset import tags_of

    samples = [
        Sample(id=str(i), input={}, expected_output="x", metadata={"tags": raw})
        for i, raw in enumerate(raws)
    ]
    got = tags_of(samples)
    assert got == [sample.tags for sample in samples]
    assert len({id(tags) for tags in got}) == len(got)  # no list shared between samples


def test_canonical_json_fails_as_the_stdlib_does() -> None:
    from assay.data.dataset import canonical_json

    circular: list[object] = []
    circular.append(circular)
    for value in (circular, {"a": {(1, 2): 1}}, {"b": 1, 2: 3}):
        with pytest.raises((ValueError, TypeError)) as expected:
            json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        with pytest.raises(expected.type, match=str(expected.value).replace("(", r"\(")):
            canonical_json(value)
    assert canonical_json({"when": Path("p")}) == '{"when":"p"}'  # default=str, as before


# --------------------------------------------------------------------------- ids


def test_numeric_looking_ids_stay_strings(tmp_path: Path) -> None:
    text = (
        "name: ids\nsamples:\n"
        "  - {id: 007, input: {}, expected_output: x}\n"
        "  - {id: 42, input: {}, expected_output: x}\n"
        "  - {id: 1.50, input: {}, expected_output: x}\n"
        "  - {id: 1e3, input: {}, expected_output: x}\n"
        "  - {id: '0', input: {}, expected_output: x}\n"
    )
    dataset = load_dataset(write(tmp_path, "ids.yml", text))
    assert [s.id for s in dataset.samples] == ["007", "42", "1.50", "1e3", "0"]
    assert all(isinstance(s.id, str) for s in dataset.samples)


def test_integer_ids_in_json_become_strings(tmp_path: Path) -> None:
    doc = {
        "name": "ids",
        "samples": [
            {"id": 42, "input": {}, "expected_output": 1},
            {"id": "007", "input": {}, "expected_output": 1},
        ],
    }
    dataset = load_dataset(write(tmp_path, "ids.json", json.dumps(doc)))
    assert [s.id for s in dataset.samples] == ["42", "007"]


def test_boolean_id_is_rejected(tmp_path: Path) -> None:
    error = load_error(
        tmp_path, "b.yml", "name: d\nsamples:\n  - {id: true, input: {}, expected_output: x}\n"
    )
    assert error.field == "id"
    assert error.sample == 0


# -------------------------------------------------------------------------- metrics and repetitions


def test_metric_specs_as_alias_or_mapping_with_options(tmp_path: Path) -> None:
    text = (
        "name: m\n"
        "metrics:\n"
        "  - exact-match\n"
        "  - {name: ordinal-distance, scale: [low, medium, high, urgent]}\n"
        "samples:\n  - {id: a, input: {}, expected_output: x}\n"
    )
    dataset = load_dataset(write(tmp_path, "m.yml", text))
    assert [m.name for m in dataset.metrics] == ["exact-match", "ordinal-distance"]
    assert dataset.metrics[0].options == {}
    assert dataset.metrics[1].options == {"scale": ["low", "medium", "high", "urgent"]}


def test_metric_spec_options_reach_the_metric(tmp_path: Path) -> None:
    from assay.data.outputs import Output
    from assay.metrics.registry import resolve_all

    text = (
        "name: m\n"
        "metrics:\n"
        "  - {name: ordinal-distance, scale: [low, medium, high, urgent]}\n"
        "samples:\n  - {id: a, input: {}, expected_output: high}\n"
    )
    dataset = load_dataset(write(tmp_path, "m.yml", text))
    (metric,) = resolve_all(dataset.metrics)
    sample = dataset.samples[0]
    # one step off on the declared scale: half credit (reference semantics 1 / 0.5 / 0)
    assert metric.score(sample, Output("medium")).value == 0.5
    assert metric.score(sample, Output("urgent")).value == 0.5
    assert metric.score(sample, Output("low")).value == 0.0
    # without the option there is no scale at all
    (bare,) = resolve_all(["ordinal-distance"])
    with pytest.raises(MetricError):
        bare.score(sample, Output("medium"))


@pytest.mark.parametrize(("raw", "expected"), [("3", 3), (" 12 ", 12), (4, 4)])
def test_repetitions_accept_digit_strings(tmp_path: Path, raw: object, expected: int) -> None:
    text = (
        f"name: r\nrepetitions: {json.dumps(raw)}\n"
        "samples:\n  - {id: a, input: {}, expected_output: x}\n"
    )
    assert load_dataset(write(tmp_path, "r.yml", text)).repetitions == expected


@pytest.mark.parametrize("raw", ["0", "-1", "abc", "1.5", "true", '"\u0661\u0662"', '"\u00b2"'])
def test_bad_repetitions_are_rejected(tmp_path: Path, raw: str) -> None:
    text = (
        f"name: r\nrepetitions: {raw}\nsamples:\n  - {{id: a, input: {{}}, expected_output: x}}\n"
    )
    error = load_error(tmp_path, "r.yml", text)
    assert error.field == "repetitions"


# --------------------------------------------------------------------------- errors


def test_missing_id_names_sample_index_and_field(tmp_path: Path) -> None:
    text = (
        "name: d\nsamples:\n  - {id: a, input: {}, expected_output: x}\n"
        "  - input: {q: 1}\n    expected_output: x\n"
    )
    error = load_error(tmp_path, "d.yml", text)
    assert error.sample == 1
    assert error.field == "id"
    assert "sample #1" in str(error) and "'id'" in str(error)


def test_duplicate_id_names_the_id_and_both_positions(tmp_path: Path) -> None:
    text = (
        "name: d\nsamples:\n"
        "  - {id: a, input: {}, expected_output: x}\n"
        "  - {id: b, input: {}, expected_output: x}\n"
        "  - {id: a, input: {}, expected_output: y}\n"
    )
    error = load_error(tmp_path, "d.yml", text)
    assert error.sample == "a"
    assert error.field == "id"
    assert "#0" in str(error) and "#2" in str(error)


def test_duplicate_after_string_conversion(tmp_path: Path) -> None:
    # 7 and "7" are the same id once ids are strings
    doc = {
        "name": "d",
        "samples": [
            {"id": 7, "input": {}, "expected_output": 1},
            {"id": "7", "input": {}, "expected_output": 1},
        ],
    }
    error = load_error(tmp_path, "d.json", json.dumps(doc))
    assert error.sample == "7" and error.field == "id"


def test_input_as_list_is_rejected_with_sample_id(tmp_path: Path) -> None:
    text = (
        "name: d\nsamples:\n  - {id: ok, input: {}, expected_output: x}\n"
        "  - {id: s2, input: [1, 2], expected_output: x}\n"
    )
    error = load_error(tmp_path, "d.yml", text)
    assert error.sample == "s2"
    assert error.field == "input"
    assert "list" in error.detail


def test_missing_expected_output_is_rejected(tmp_path: Path) -> None:
    error = load_error(tmp_path, "d.yml", "name: d\nsamples:\n  - {id: a, input: {}}\n")
    assert (error.sample, error.field) == ("a", "expected_output")


def test_null_expected_output_is_allowed(tmp_path: Path) -> None:
    dataset = load_dataset(
        write(
            tmp_path, "d.yml", "name: d\nsamples:\n  - {id: a, input: {}, expected_output: null}\n"
        )
    )
    assert dataset.samples[0].expected_output is None


def test_metadata_as_list_is_rejected(tmp_path: Path) -> None:
    error = load_error(
        tmp_path,
        "d.yml",
        "name: d\nsamples:\n  - {id: a, input: {}, expected_output: x, metadata: [1]}\n",
    )
    assert (error.sample, error.field) == ("a", "metadata")


def test_unknown_sample_field_is_named(tmp_path: Path) -> None:
    error = load_error(
        tmp_path,
        "d.yml",
        "name: d\nsamples:\n  - {id: a, input: {}, expected_output: x, expcted: 3}\n",
    )
    assert (error.sample, error.field) == ("a", "expcted")
    assert "unknown field" in error.detail


def test_unknown_top_level_field_is_named(tmp_path: Path) -> None:
    error = load_error(
        tmp_path,
        "d.yml",
        "name: d\nsampels: []\nsamples:\n  - {id: a, input: {}, expected_output: x}\n",
    )
    assert error.field == "sampels"


def test_bad_schema_version(tmp_path: Path) -> None:
    error = load_error(
        tmp_path,
        "d.yml",
        "schema_version: eval-harness.dataset.v9\nname: d\nsamples:\n  - {id: a, input: {}, "
        "expected_output: x}\n",
    )
    assert error.field == "schema_version"
    assert "eval-harness.dataset.v9" in error.detail
    assert "assay.dataset.v1" in error.detail and "eval-harness.dataset.v1" in error.detail


def test_missing_name(tmp_path: Path) -> None:
    error = load_error(tmp_path, "d.yml", "samples:\n  - {id: a, input: {}, expected_output: x}\n")
    assert error.field == "name"


@pytest.mark.parametrize("samples", ["samples: []\n", ""])
def test_empty_or_missing_samples(tmp_path: Path, samples: str) -> None:
    error = load_error(tmp_path, "d.yml", "name: d\n" + samples)
    assert error.field == "samples"


def test_sample_that_is_not_a_mapping(tmp_path: Path) -> None:
    error = load_error(
        tmp_path,
        "d.yml",
        "name: d\nsamples:\n  - {id: a, input: {}, expected_output: x}\n  - just text\n",
    )
    assert error.sample == 1


@pytest.mark.parametrize(
    ("text", "key", "line"),
    [
        (
            "name: d\nsamples:\n  - id: a\n    id: b\n    input: {}\n    expected_output: x\n",
            "id",
            4,
        ),
        ("name: d\nsamples:\n  - {id: a, input: {q: 1, 'q': 2}, expected_output: x}\n", "q", 3),
        ("name: d\nname: e\nsamples:\n  - {id: a, input: {}, expected_output: x}\n", "name", 2),
    ],
)
def test_a_yaml_key_given_twice_is_refused(tmp_path: Path, text: str, key: str, line: int) -> None:
    """YAML keys are unique: a repeated one is named with its line, never "the last wins"."""
    error = load_error(tmp_path, "d.yml", text)
    assert f"key '{key}' is given twice (line {line}," in error.detail


def test_a_yaml_merge_key_may_be_overridden(tmp_path: Path) -> None:
    text = (
        "name: d\nsamples:\n  - &b {id: a, input: {q: 1}, expected_output: x}\n"
        "  - <<: *b\n    id: b\n    expected_output: y\n"
    )
    samples = load_dataset(write(tmp_path, "d.yml", text)).samples
    assert [(s.id, s.input, s.expected_output) for s in samples] == [
        ("a", {"q": 1}, "x"),
        ("b", {"q": 1}, "y"),
    ]


def test_malformed_yaml_names_the_line(tmp_path: Path) -> None:
    text = "name: d\nsamples:\n  - id: a\n    input: {q: 1\n    expected_output: x\n"
    error = load_error(tmp_path, "d.yml", text)
    assert "not valid YAML" in error.detail
    # the unclosed flow mapping opened on line 4 is detected on line 5
    assert "line 5" in error.detail


def test_malformed_json_names_line_and_column(tmp_path: Path) -> None:
    error = load_error(tmp_path, "d.json", '{"name": "d",\n "samples": [\n}')
    assert "not valid JSON" in error.detail and "line 3" in error.detail


def test_malformed_jsonl_names_the_line(tmp_path: Path) -> None:
    text = json.dumps(SAMPLES[0]) + "\n\n" + json.dumps(SAMPLES[1]) + "\n{broken\n"
    error = load_error(tmp_path, "d.jsonl", text)
    assert "line 4" in error.detail


def test_jsonl_sample_error_names_the_sample(tmp_path: Path) -> None:
    text = (
        json.dumps(SAMPLES[0])
        + "\n"
        + json.dumps({"id": "bad", "input": [], "expected_output": 1})
        + "\n"
    )
    error = load_error(tmp_path, "d.jsonl", text)
    assert (error.sample, error.field) == ("bad", "input")


def test_invalid_utf8_names_byte_and_line(tmp_path: Path) -> None:
    raw = b'name: d\nsamples:\n  - {id: a, input: {q: "\xff\xfe"}, expected_output: x}\n'
    error = load_error(tmp_path, "d.yml", raw)
    assert "UTF-8" in error.detail
    bad_byte = raw.index(b"\xff")
    assert f"byte {bad_byte}" in error.detail
    assert "line 3" in error.detail


def test_utf8_bom_is_accepted(tmp_path: Path) -> None:
    text = "\ufeffname: d\nsamples:\n  - {id: a, input: {}, expected_output: ü}\n"
    assert load_dataset(write(tmp_path, "d.yml", text)).samples[0].expected_output == "ü"


@pytest.mark.parametrize("text", ["- a\n- b\n", "just a string\n", "", "42\n"])
def test_non_mapping_document(tmp_path: Path, text: str) -> None:
    error = load_error(tmp_path, "d.yml", text)
    assert "mapping" in error.detail


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.yml"
    with pytest.raises(DatasetError) as info:
        load_dataset(path)
    assert str(path) in str(info.value)


def test_samples_are_immutable() -> None:
    dataset = Dataset(name="d", samples=[Sample(id="a", input={}, expected_output="x")])
    with pytest.raises(Exception):  # noqa: B017 - pydantic raises ValidationError on frozen models
        dataset.samples[0].id = "b"  # type: ignore[misc]


def _alias_bomb(levels: int = 9) -> str:
    lines = [
        "name: bomb",
        "samples:",
        "  - id: s1",
        "    input:",
        '      l0: &l0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol","lol"]',
    ]
    for i in range(1, levels):
        lines.append(f"      l{i}: &l{i} [" + ",".join([f"*l{i - 1}"] * 10) + "]")
    lines.append('    expected_output: "x"')
    return "\n".join(lines) + "\n"


def test_yaml_alias_bomb_is_refused_quickly(tmp_path: Path) -> None:
    """A 'billion laughs' document is an input error, not a hang (the walk is budgeted)."""
    path = tmp_path / "bomb.yml"
    path.write_text(_alias_bomb(), encoding="utf-8")
    with pytest.raises(DatasetError, match="expands to far more values"):
        load_dataset(path)


def test_ordinary_yaml_anchors_still_load(tmp_path: Path) -> None:
    path = tmp_path / "anchors.yml"
    path.write_text(
        "name: a\nsamples:\n"
        "  - id: s1\n    input: &q {question: 'Capital of France?'}\n    expected_output: Paris\n"
        "  - id: s2\n    input: *q\n    expected_output: Paris\n    metadata: {tags: [dup]}\n",
        encoding="utf-8",
    )
    dataset = load_dataset(path)
    assert [s.input for s in dataset.samples] == [{"question": "Capital of France?"}] * 2
