"""Large JSONL datasets and saved outputs are indexed, not held: same samples, same report.

The size threshold is lowered to 0 so small files take the streamed path; every check compares
it with the same file loaded whole (the path small files take).
"""

from __future__ import annotations

import json
import pickle
import random
import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.cli import main
from assay.data import dataset_stream, outputs_stream
from assay.data.dataset_stream import JsonlSamples
from assay.data.documents import parse_jsonl_line, parse_jsonl_lines
from assay.data.loading import load_dataset, load_outputs
from assay.data.outputs_stream import JsonlOutputs, same_ids
from assay.errors import DatasetError, OutputsError


@pytest.fixture(autouse=True)
def offsets_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Indexed outputs are looked up by offset here, as a file past the keep budget is
    (tests/data/test_kept_outputs.py tests the outputs kept by the index pass)."""
    monkeypatch.setattr(outputs_stream, "KEEP_BUDGET", 0)


@pytest.fixture
def streamed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dataset_stream, "STREAM_MIN_BYTES", 0)
    monkeypatch.setattr(outputs_stream, "STREAM_MIN_BYTES", 0)


def whole(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dataset_stream, "STREAM_MIN_BYTES", 1 << 62)
    monkeypatch.setattr(outputs_stream, "STREAM_MIN_BYTES", 1 << 62)


def write_lines(path: Path, rows: list[Any], *, newline: str = "\n", bom: bool = False) -> Path:
    text = newline.join(json.dumps(r, ensure_ascii=False) for r in rows) + newline
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + text.encode("utf-8"))
    return path


def make_files(tmp_path: Path, count: int, seed: int = 3) -> tuple[Path, Path]:
    rng = random.Random(seed)
    words = ["refund", "order", "parcel", "late", "window", "label", "card", "ticket"]
    samples, outputs = [], []
    for index in range(count):
        answer = " ".join(rng.choice(words) for _ in range(rng.randint(2, 6)))
        tags = [["billing"], ["shipping"], [], ["billing", "vip"]][index % 4]
        said = answer if rng.random() < 0.5 else " ".join(rng.choice(words) for _ in range(4))
        samples.append(
            {
                "id": f"s{index}" if index % 7 else index,  # integer ids become strings
                "input": {"question": f"q {index} \u2014 caf\u00e9"},
                "expected_output": answer,
                "metadata": {"tags": tags},
            }
        )
        outputs.append({"id": str(samples[-1]["id"]), "output": said})
    rng.shuffle(outputs)  # lookups must not depend on the file order
    dataset = write_lines(tmp_path / "data.jsonl", samples)
    return dataset, write_lines(tmp_path / "out.jsonl", outputs)


def test_streamed_dataset_has_the_same_samples(tmp_path: Path, streamed: None) -> None:
    path, _ = make_files(tmp_path, 300)
    loaded = load_dataset(path)
    assert isinstance(loaded.samples, JsonlSamples)
    samples = list(loaded.samples)
    text = path.read_text(encoding="utf-8")
    reference = [json.loads(line) for line in text.splitlines()]
    assert len(samples) == len(loaded.samples) == len(reference) == 300
    assert [s.id for s in samples] == [str(r["id"]) for r in reference]
    assert samples[5].input == reference[5]["input"]
    assert loaded.samples[7] == samples[7] and loaded.samples[-1] == samples[-1]
    assert loaded.samples[10:13] == samples[10:13]
    assert loaded.name == "data" and loaded.repetitions == 1 and loaded.metrics == []


def test_streamed_and_whole_datasets_are_equal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, _ = make_files(tmp_path, 120)
    for variant, kwargs in {"crlf": {"newline": "\r\n"}, "bom": {"bom": True}}.items():
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        target = write_lines(tmp_path / f"{variant}.jsonl", rows, **kwargs)
        monkeypatch.setattr(dataset_stream, "STREAM_MIN_BYTES", 0)
        streamed_samples = list(load_dataset(target).samples)
        whole(monkeypatch)
        assert streamed_samples == list(load_dataset(target).samples), variant


@pytest.mark.parametrize(
    "lines",
    [
        ['{"id": "a", "input": {}}', '{"id": "a", "input": {}}'],  # duplicate id
        ['{"id": "a", "input": {}}', '{"id": "b", "input": []}'],  # invalid field
        ['{"id": "a", "input": {}}', "{not json"],
        ['{"id": "a", "input": {}}', '{"id": "b", "input": {}, "surprise": 1}'],
        ["", "   "],  # no samples
    ],
)
def test_streamed_dataset_errors_are_the_whole_loads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lines: list[str]
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    whole(monkeypatch)
    with pytest.raises(DatasetError) as expected:
        load_dataset(path)
    monkeypatch.setattr(dataset_stream, "STREAM_MIN_BYTES", 0)
    with pytest.raises(DatasetError) as got:
        load_dataset(path)
    assert str(got.value) == str(expected.value)


def test_odd_line_breaks_fall_back_to_the_whole_load(
    tmp_path: Path, streamed: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "odd.jsonl"
    # A raw U+2028 inside a string: str.splitlines breaks the line there, so the whole load
    # reports it; the streamed reader must not quietly accept it.
    path.write_bytes(b'{"id": "a", "input": {"q": "x\xe2\x80\xa8y"}}\n')
    with pytest.raises(DatasetError) as got:
        load_dataset(path)
    whole(monkeypatch)
    with pytest.raises(DatasetError) as expected:
        load_dataset(path)
    assert str(got.value) == str(expected.value)


def test_streamed_outputs_look_up_like_the_whole_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data, out = make_files(tmp_path, 200)
    whole(monkeypatch)
    expected = load_outputs(out)
    monkeypatch.setattr(outputs_stream, "STREAM_MIN_BYTES", 0)
    monkeypatch.setattr(dataset_stream, "STREAM_MIN_BYTES", 0)
    saved = load_outputs(out)
    assert isinstance(saved, JsonlOutputs)
    assert len(saved) == len(expected) == 200
    assert sorted(saved) == sorted(expected)
    assert all(saved[key] == expected[key] for key in expected)
    assert "nope" not in saved
    with pytest.raises(KeyError):
        saved["nope"]
    assert same_ids(saved, load_dataset(data).samples)


def test_outputs_for_other_samples_are_not_the_same_ids(tmp_path: Path, streamed: None) -> None:
    data, _ = make_files(tmp_path, 50)
    other = write_lines(
        tmp_path / "other.jsonl", [{"id": f"x{i}", "output": "o"} for i in range(50)]
    )
    assert not same_ids(load_outputs(other), load_dataset(data).samples)


def test_duplicate_saved_output_is_the_whole_loads_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_lines(tmp_path / "dup.jsonl", [{"id": "a", "output": "x"}] * 2)
    whole(monkeypatch)
    with pytest.raises(OutputsError) as expected:
        load_outputs(path)
    monkeypatch.setattr(outputs_stream, "STREAM_MIN_BYTES", 0)
    with pytest.raises(OutputsError) as got:
        load_outputs(path)
    assert str(got.value) == str(expected.value)


def run_report(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str, data: Path, out: Path
) -> dict[str, Any]:
    report = tmp_path / f"{name}.json"
    args = ["run", str(data), "--outputs", str(out), "-f", "json", "-o", str(report), "-q"]
    args += ["--store", str(tmp_path / f"{name}.db")]
    for metric in ("exact-match", "contains", "rouge-l"):
        args += ["-m", metric]
    with pytest.raises(SystemExit) as ended:
        main(args)
    capsys.readouterr()
    assert ended.value.code in (0, 1)
    document: dict[str, Any] = json.loads(report.read_text(encoding="utf-8"))
    document.pop("run")
    return document


def test_a_streamed_run_reports_what_a_whole_run_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    data, out = make_files(tmp_path, 5000)  # more than two scoring chunks
    whole(monkeypatch)
    expected = run_report(capsys, tmp_path, "whole", data, out)
    monkeypatch.setattr(dataset_stream, "STREAM_MIN_BYTES", 0)
    monkeypatch.setattr(outputs_stream, "STREAM_MIN_BYTES", 0)
    got = run_report(capsys, tmp_path, "streamed", data, out)
    assert got == expected
    assert len(got["rows"]) == 5000 and got["cohorts"] and got["failing_rows"]


def test_a_streamed_run_stores_the_tags_a_whole_run_stores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The team viewer's tag filter reads the run's ``sample_tags``: a dataset left on disk
    collects them while it is checked (no extra read), and they are the whole load's."""
    rows = [
        {"id": "a", "input": {}, "expected_output": "x", "metadata": {"tags": [" vip ", "b"]}},
        {"id": "b", "input": {}, "expected_output": "x", "metadata": {"tags": "solo"}},
        {"id": "c", "input": {}, "expected_output": "x", "metadata": {"tags": [3, "", "b"]}},
        {"id": "d", "input": {}, "expected_output": "x"},
    ]
    data = write_lines(tmp_path / "tags.jsonl", rows)
    out = write_lines(tmp_path / "o.jsonl", [{"id": r["id"], "output": "x"} for r in rows])
    configs = []
    for name, threshold in (("whole", 1 << 62), ("streamed", 0)):
        monkeypatch.setattr(dataset_stream, "STREAM_MIN_BYTES", threshold)
        store = tmp_path / f"{name}.db"
        argv = ["run", str(data), "--outputs", str(out), "-m", "exact-match", "-q"]
        argv += ["--store", str(store)]
        with pytest.raises(SystemExit):
            main([*argv, "--run-id", name])
        with sqlite3.connect(store) as db:
            (config,) = db.execute("SELECT config FROM runs").fetchone()
        configs.append(json.loads(config)["sample_tags"])
    assert configs == [["b", "solo", "vip"], ["b", "solo", "vip"]]


def test_a_streamed_dataset_knows_its_metadata_keys(tmp_path: Path, streamed: None) -> None:
    path = write_lines(
        tmp_path / "keys.jsonl",
        [
            {"id": "a", "input": {}, "expected_output": 1, "metadata": {"tags": ["x"]}},
            {
                "id": "b",
                "input": {},
                "expected_output": 1,
                "metadata": {"adversarial": {"category": "pii"}},
            },
            {"id": "c", "input": {}, "expected_output": 1},
        ],
    )
    assert load_dataset(path).samples.metadata_keys == {"tags", "adversarial"}  # type: ignore[attr-defined]


def test_line_reader_reads_any_order(tmp_path: Path) -> None:
    from assay.data.jsonl_lines import LineReader, iter_lines

    path = tmp_path / "lines.txt"
    path.write_text("".join(f"line {i} " + "x" * (i % 50) + "\n" for i in range(3000)))
    lines = list(iter_lines(path))
    reader = LineReader(path)
    order = list(range(len(lines)))
    assert [reader.line_at(lines[i][0]) for i in order] == [text for _, text in lines]
    random.Random(5).shuffle(order)
    assert [reader.line_at(lines[i][0]) for i in order] == [lines[i][1] for i in order]


_json_leaf = st.one_of(
    st.none(), st.booleans(), st.integers(-5, 5), st.floats(allow_nan=False), st.text(max_size=4)
)
_json_value = st.recursive(
    _json_leaf,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)
_sample_like = st.one_of(
    st.dictionaries(
        st.sampled_from(["id", "input", "expected_output", "metadata", "turns", "other"]),
        _json_value,
        max_size=5,
    ),
    st.fixed_dictionaries(
        {
            "id": st.one_of(st.text(max_size=3), st.integers(), st.booleans(), st.none()),
            "input": st.one_of(_json_value, st.dictionaries(st.text(max_size=3), _json_value)),
        },
        optional={
            "expected_output": _json_value,
            "metadata": st.one_of(_json_value, st.dictionaries(st.text(max_size=3), _json_value)),
            "other": _json_value,
        },
    ),
)


@settings(max_examples=400, deadline=None)
@given(value=_sample_like)
def test_the_plain_shape_check_accepts_only_valid_samples(value: dict[str, Any]) -> None:
    """The index pass skips the model for lines of the plain shape: each such line must be a
    sample the model accepts, with the same id (the model stays the reference)."""
    from pydantic import ValidationError

    from assay.data.dataset import Sample
    from assay.data.dataset import is_plain_sample as _plain_sample

    if not _plain_sample(value):
        return
    try:
        sample = Sample.model_validate(value)
    except ValidationError as exc:  # pragma: no cover - the failure this test looks for
        raise AssertionError(f"plain shape but invalid: {value!r}") from exc
    assert sample.id == str(value["id"]) and sample.metadata == value.get("metadata", {})


@settings(max_examples=400, deadline=None)
@given(value=_sample_like)
def test_a_plain_line_reads_back_as_the_model_validates_it(value: dict[str, Any]) -> None:
    """The run reads plain lines without the model: same sample, same fields set."""
    import pydantic_core
    from pydantic import ValidationError

    from assay.data.dataset import Sample
    from assay.data.dataset_stream import _sample

    line = json.dumps(value)
    try:
        expected = Sample.model_validate(pydantic_core.from_json(line))
    except ValidationError:
        with pytest.raises(ValidationError):
            _sample(line, 1, Path("x.jsonl"))
        return
    got = _sample(line, 1, Path("x.jsonl"))
    assert got == expected and repr(got) == repr(expected)
    assert got.model_fields_set == expected.model_fields_set
    assert got.model_dump() == expected.model_dump()
    assert pickle.loads(pickle.dumps(got)) == expected  # Ray workers get samples pickled
    assert got.model_copy(update={"id": "other"}) == expected.model_copy(update={"id": "other"})


def _outputs_with_gaps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[Mapping[str, Any], JsonlOutputs]:
    """A JSONL outputs file of 300 ids with an entry of more fields, an integer id (41), a
    missing one (s70) and blank lines: loaded whole, and streamed."""
    rows: list[Any] = [{"id": f"s{i}", "output": f"answer {i}"} for i in range(300)]
    rows[40] = {"id": "s40", "output": "with more", "contexts": ["c"]}
    rows[41] = {"id": 41, "output": "an integer id"}
    del rows[70]  # s70 has no output
    text = "\n".join(json.dumps(r) for r in rows)
    text = text.replace('{"id": "s100"', '\n  \n{"id": "s100"')  # blank lines before s100
    path = tmp_path / "out.jsonl"
    path.write_text(text + "\n", encoding="utf-8")
    whole(monkeypatch)
    expected = load_outputs(path)
    monkeypatch.setattr(outputs_stream, "STREAM_MIN_BYTES", 0)
    saved = load_outputs(path)
    assert isinstance(saved, JsonlOutputs)
    return expected, saved


def test_outputs_in_file_order_are_found_without_a_search(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Lookups in file order read the next line; gaps, blank lines, missing ids and lookups out
    of order still answer what the whole file answers."""
    expected, saved = _outputs_with_gaps(tmp_path, monkeypatch)
    wanted = [f"s{i}" for i in range(300)] + ["s5", "s299", "s0", "nope"]
    wanted += [f"s{i}" for i in random.Random(2).sample(range(300), 300)]
    for key in wanted:
        if key in expected:
            assert saved[key] == expected[key], key
        else:
            with pytest.raises(KeyError):
                saved[key]
    assert saved._hits > 290  # the ordered pass found nearly every line by guessing


def test_outputs_looked_up_in_groups_are_the_whole_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """outputs_of over groups of ids (in file order, with gaps, blank lines, missing ids, out
    of order) gives what the whole file gives id by id, and the file order is read as groups."""
    expected, saved = _outputs_with_gaps(tmp_path, monkeypatch)
    wanted = [f"s{i}" if i != 41 else "41" for i in range(300)] + ["s5", "nope", "s299"]
    wanted += [f"s{i}" for i in random.Random(2).sample(range(300), 300)] + ["s0", "s1"]
    rng, start, got = random.Random(5), 0, []
    while start < len(wanted):
        size = rng.choice([1, 2, 7, 64, 200])
        got += saved.outputs_of(wanted[start : start + size])
        start += size
    assert got == [expected.get(key) for key in wanted]
    assert saved._hits > 290


def test_saved_outputs_changed_under_a_run_fail_each_sample(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from assay.data.dataset import Sample
    from assay.engine.sut import SavedOutputs

    monkeypatch.setattr(outputs_stream, "STREAM_MIN_BYTES", 0)
    path = write_lines(tmp_path / "out.jsonl", [{"id": f"s{i}", "output": "a"} for i in range(9)])
    system = SavedOutputs(load_outputs(path), str(path))
    samples = [Sample(id=f"s{i}", input={"q": "x"}, expected_output="a") for i in (0, 1, 8)]
    path.write_bytes(b"\xff" * path.stat().st_size)  # same size, no longer UTF-8
    answers = system.answers_now(samples)
    with pytest.raises(OutputsError) as one:
        system.answer_now(samples[0])
    assert "the file changed while the run read it" in str(one.value)
    assert answers == [str(one.value)] * 3


_BREAK_PIECES = [b"a", b"\n", b"\r", b"\r\n", b"\x0b", b"\x0c", b"\x1c", b"\x1d", b"\x1e"]
_BREAK_PIECES += [b"\xc2", b"\x85", b"\xe2", b"\x80", b"\xa8", b"\xa9", b"\xe2\x80\xa9"]


@settings(max_examples=2000, deadline=None)
@given(pieces=st.lists(st.sampled_from(_BREAK_PIECES), max_size=10))
def test_unusual_line_breaks_are_found_as_a_regex_finds_them(pieces: list[bytes]) -> None:
    """The substring checks agree with the plain regex they replace, on every mix of breaks."""
    import re

    from assay.data.jsonl_lines import has_other_breaks

    reference = re.compile(rb"\r(?!\n)")  # a lone CR; U+2028 and the like are text in JSONL
    body = b"".join(pieces)
    assert has_other_breaks(body) == bool(reference.search(body))


def test_lines_and_offsets_of_ascii_and_other_blocks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Blocks of ASCII are decoded whole, others line by line: the same lines and offsets."""
    from assay.data import jsonl_lines

    monkeypatch.setattr(jsonl_lines, "BLOCK", 64)  # many blocks, some all ASCII, some not
    texts = [
        f"line {i} " + ("caf\u00e9 \u2014" if i % 9 == 0 else "x" * (i % 13)) for i in range(400)
    ]
    data = ("\r\n".join(texts[:50]) + "\r\n" + "\n".join(texts[50:])).encode("utf-8")
    path = tmp_path / "mixed.txt"
    path.write_bytes(data)
    expected, start = [], 0
    for raw in data.split(b"\n"):
        if start < len(data):
            expected.append((start, raw.decode("utf-8")))
        start += len(raw) + 1
    assert list(jsonl_lines.iter_lines(path)) == expected


def test_separators_inside_json_strings_are_text_in_both_readers(tmp_path: Path) -> None:
    """U+2028, U+2029 and U+0085 may stand raw in a JSON string (``ensure_ascii=False`` writes
    them so): both readers keep them in the text, where ``str.splitlines`` would cut the line."""
    import json

    from assay.data.dataset import read_dataset
    from assay.data.loading import load_dataset, load_outputs
    from assay.data.outputs import read_outputs

    texts = ["one\u2028two", "para\u2029graph", "next\x85line", "plain"]
    samples = [
        {"id": f"s{i}", "input": {"q": t}, "expected_output": t} for i, t in enumerate(texts)
    ]
    dataset = tmp_path / "d.jsonl"
    dataset.write_text(
        "\r\n".join(json.dumps(s, ensure_ascii=False) for s in samples) + "\n", encoding="utf-8"
    )
    outputs = tmp_path / "o.jsonl"
    outputs.write_text(
        "".join(
            json.dumps({"id": f"s{i}", "output": t}, ensure_ascii=False) + "\n"
            for i, t in enumerate(texts)
        ),
        encoding="utf-8",
    )
    assert "\u2028" in dataset.read_text(encoding="utf-8")  # written raw, not escaped
    for read in (load_dataset, read_dataset):
        loaded = read(dataset)
        assert [s.expected_output for s in loaded.samples] == texts
    for read_out in (load_outputs, read_outputs):
        saved = read_out(outputs)
        assert [saved[f"s{i}"].text for i in range(len(texts))] == texts


@settings(max_examples=300, deadline=None)
@given(
    value=st.one_of(
        _json_value,
        st.fixed_dictionaries(
            {"id": st.one_of(st.text(max_size=3), st.integers(), st.booleans(), st.none())},
            optional={"output": _json_value, "contexts": _json_value, "retrieved": _json_value},
        ),
    )
)
def test_the_index_checks_an_output_line_as_the_lookup_does(value: Any) -> None:
    """The index pass takes a line's id without building its output: same ids, same refusals."""
    from assay.data.outputs_stream import _entry, _entry_id

    try:
        expected = _entry(value)[0]
    except Exception as exc:  # whatever _entry raises, _entry_id raises too
        with pytest.raises(type(exc)):
            _entry_id(value)
        return
    assert _entry_id(value) == expected


_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=8,
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_JSON_VALUES, min_size=1, max_size=12))
def test_lines_parsed_together_are_the_lines_parsed_one_by_one(values: list[Any]) -> None:
    lines = [json.dumps(value, ensure_ascii=False) for value in values]
    together = parse_jsonl_lines(lines)
    assert together == [parse_jsonl_line(line, 1, Path("x"), DatasetError) for line in lines]


@pytest.mark.parametrize(
    "lines",
    [
        ["[1, [2", "3]]"],  # no line is a value of its own: two lines, one value
        ["1, 2"],  # one line, two values
        ['{"a": 1}', "{oops"],
        ["[" * 101 + "]" * 101],  # deeper than a line may nest: the per-line check words it
    ],
)
def test_lines_that_only_parse_together_are_left_to_the_line_parser(lines: list[str]) -> None:
    assert parse_jsonl_lines(lines) is None


def test_a_streamed_dataset_past_a_parse_group_reads_every_sample(
    tmp_path: Path, streamed: None
) -> None:
    count = 2 * dataset_stream.PARSE_GROUP + 3
    path, _ = make_files(tmp_path, count)
    expected = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    samples = list(load_dataset(path).samples)
    assert [s.id for s in samples] == [str(r["id"]) for r in expected]
    assert [s.expected_output for s in samples] == [r["expected_output"] for r in expected]


def _reference_lines(data: bytes) -> list[tuple[int, str]]:
    """``(offset, line)`` of every line, found by one split of the whole file."""
    found, offset = [], 0
    for raw in data.split(b"\n"):
        found.append((offset, raw.decode("utf-8").removesuffix("\r")))
        offset += len(raw) + 1
    return found[:-1] if data.endswith(b"\n") or not data else found


@pytest.mark.parametrize("ending", [b"\n", b""])
def test_lines_longer_than_a_block_read_as_one_split_reads_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ending: bytes
) -> None:
    """Lines across many blocks, a CRLF and a UTF-8 character cut by a block edge, a last line
    with no break: the same lines and offsets as one split of the whole file."""
    from assay.data import jsonl_lines

    monkeypatch.setattr(jsonl_lines, "BLOCK", 8)
    data = b"short\n" + b"x" * 100 + b"\r\n" + "caf\u00e9 \u2014 ".encode() * 9 + b"\n\nend"
    path = tmp_path / "long.jsonl"
    path.write_bytes(data + ending)
    lines = [(offset, text.removesuffix("\r")) for offset, text in jsonl_lines.iter_lines(path)]
    assert lines == _reference_lines(data + ending)


def test_a_line_of_many_blocks_is_read_in_linear_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 100 MB line took 17.6 s, 25 MB 2.5 s: each block was added to the rest of the line
    (a copy of all of it) before looking for a break. Counted here in bytes copied, not time:
    once 1000 blocks of one line copied ~500 times the line; now none are copied that way."""
    from assay.data import jsonl_lines

    copied = [0]

    class Block(bytes):
        def __radd__(self, rest: bytes) -> bytes:  # ``rest + block`` lands here
            copied[0] += len(rest)
            return bytes(rest) + bytes(self)

    class Handle:
        def __init__(self, inner: Any) -> None:
            self.inner = inner

        def __enter__(self) -> Handle:
            return self

        def __exit__(self, *exc: object) -> None:
            self.inner.close()

        def seek(self, offset: int) -> None:
            self.inner.seek(offset)

        def read(self, size: int) -> bytes:
            return Block(self.inner.read(size))

    path = tmp_path / "one-line.jsonl"
    line = b'{"id": "s1", "input": {"q": "' + b"x" * 64_000 + b'"}}'
    path.write_bytes(line + b"\n")
    monkeypatch.setattr(jsonl_lines, "BLOCK", 64)
    real_open = Path.open
    monkeypatch.setattr(Path, "open", lambda self, mode="r": Handle(real_open(self, mode)))
    assert [text.encode() for _, text in jsonl_lines.iter_lines(path)] == [line]
    assert copied[0] <= 2 * len(line)
