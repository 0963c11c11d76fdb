"""Large JSON datasets and saved-outputs documents are scanned, not held: same values, same report.

The reference for every check is the stdlib's ``json.loads`` of the whole document, or the same
file read whole by assay (the path small files take); the size threshold is lowered to 0 so
small files take the scanned path, and the scan's block to a few bytes so that values straddle
the window's edges.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assay.data import dataset_stream, json_items, outputs_stream
from assay.data.dataset_stream import DocumentSamples
from assay.data.json_items import ItemScan, SpanReader, parse_item
from assay.data.loading import load_dataset, load_outputs
from assay.data.outputs_stream import DocumentOutputs, same_ids
from assay.errors import DatasetError, NotIndexable, OutputsError

from .test_streamed_files import make_files, run_report, whole


@pytest.fixture(autouse=True)
def offsets_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Indexed outputs are read back by byte span here, as a file past the keep budget is
    (tests/data/test_kept_outputs.py tests the outputs kept by the index pass)."""
    monkeypatch.setattr(outputs_stream, "KEEP_BUDGET", 0)


@pytest.fixture
def small_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(json_items, "BLOCK", 7)


def streamed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dataset_stream, "STREAM_MIN_BYTES", 0)
    monkeypatch.setattr(outputs_stream, "STREAM_MIN_BYTES", 0)


def scan(path: Path, member: str) -> tuple[list[tuple[str | None, Any]], ItemScan, list[Any]]:
    """The items of ``member``, the scan, and every item read back from its span."""
    scanner = ItemScan(path, member)
    items = list(scanner.items())
    reader = SpanReader(path)
    again = [parse_item(reader.text(i.start, i.end), keyed=i.key is not None) for i in items]
    return [(i.key, i.value) for i in items], scanner, again


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(st.characters(exclude_categories=("Cs",))),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=8,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    items=st.lists(json_values, max_size=6) | st.dictionaries(st.text(), json_values, max_size=6),
    header=st.dictionaries(st.text().filter(lambda k: k != "samples"), json_values, max_size=3),
    before=st.booleans(),
    indent=st.sampled_from([None, 0, 2, "\t"]),
    ascii_only=st.booleans(),
    bom=st.booleans(),
    block=st.sampled_from([1, 7, 64, 1 << 20]),
)
def test_the_scan_reads_what_json_loads_reads(
    tmp_path_factory: pytest.TempPathFactory,
    items: Any,
    header: dict[str, Any],
    before: bool,
    indent: Any,
    ascii_only: bool,
    bom: bool,
    block: int,
) -> None:
    document = {"samples": items, **header} if before else {**header, "samples": items}
    text = json.dumps(document, indent=indent, ensure_ascii=ascii_only)
    path = tmp_path_factory.mktemp("doc") / "doc.json"
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + text.encode("utf-8"))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(json_items, "BLOCK", block)
        got, scanner, again = scan(path, "samples")
    reference = json.loads(text)
    if isinstance(items, dict):
        assert got == list(reference["samples"].items()) and scanner.kind == "object"
    else:
        assert got == [(None, value) for value in reference["samples"]]
        assert scanner.kind == "array"
    assert again == got
    assert scanner.header == {k: v for k, v in reference.items() if k != "samples"}


@pytest.mark.parametrize(
    "text",
    [
        '{"samples": [1], "samples": [2]}',  # json.loads keeps the last: read it whole
        '{"name": "a", "name": "b", "samples": [1]}',
        '{"samples": [1]} trailing',
        '{"name": "no samples"}',
        '{"samples": "not a list"}',
        "[1, 2]",
        "{}",
        '{"samples": [1, 2,]}',
        '{"samples": [1 2]}',
        '{"samples": [1, 2]',  # cut short
        '{"samples": [' + "[" * 99 + "]" * 99 + "]}",  # 101 deep: past the whole reader's 100
        '{"samples": [1], "name": ' + "[" * 100 + "]" * 100 + "}",
        '{"samples": [' + "[" * 50_000 + "]" * 50_000 + "]}",
        '{"samples": [123' + "4" * 5000 + "]}",  # past Python's integer digit limit
    ],
)
def test_shapes_the_scan_does_not_take(tmp_path: Path, small_blocks: None, text: str) -> None:
    path = tmp_path / "odd.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(NotIndexable):
        list(ItemScan(path, "samples").items())


def test_the_deepest_document_the_whole_reader_takes_is_scanned(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text('{"samples": [' + "[" * 98 + "]" * 98 + "]}", encoding="utf-8")
    assert len(scan(path, "samples")[0]) == 1


def test_invalid_utf8_is_not_scanned(tmp_path: Path, small_blocks: None) -> None:
    path = tmp_path / "bytes.json"
    path.write_bytes(b'{"samples": ["caf\xc3\xa9", "\xff"]}')
    with pytest.raises(NotIndexable):
        list(ItemScan(path, "samples").items())


@pytest.mark.parametrize("block", [3, 7, 1 << 20])  # the escape straddles blocks, or not
def test_a_lone_surrogate_escape_is_named_as_a_whole_read_names_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, block: int
) -> None:
    monkeypatch.setattr(json_items, "BLOCK", block)
    streamed(monkeypatch)
    document = dataset_document(3)
    data = tmp_path / "d.json"
    data.write_text(json.dumps(document).replace('"s1"', '"s1\\ud800"'), encoding="utf-8")
    with pytest.raises(DatasetError, match=r"d\.json: not valid text: a lone surrogate"):
        load_dataset(data)
    out = tmp_path / "o.json"
    out.write_text('{"outputs": {"a": "\\udc00x", "b": "\\ud83d\\ude00"}}', encoding="utf-8")
    with pytest.raises(OutputsError, match=r"o\.json: not valid text: a lone surrogate"):
        load_outputs(out)
    out.write_text('{"outputs": {"a": "\\ud83d\\ude00"}}', encoding="utf-8")  # a valid pair
    scanned = load_outputs(out)
    assert isinstance(scanned, DocumentOutputs) and scanned["a"].text == "\U0001f600"


def dataset_document(count: int, seed: int = 5) -> dict[str, Any]:
    rng = random.Random(seed)
    words = ["refund", "parcel", "caf\u00e9", "\u00fcber", "label", "\U0001f600", "window"]
    samples: list[dict[str, Any]] = []
    for index in range(count):
        sample: dict[str, Any] = {
            "id": f"s{index}" if index % 5 else index,
            "input": {"question": f"q {index}"},
            "expected_output": " ".join(rng.choice(words) for _ in range(rng.randint(1, 5))),
        }
        if index % 3 == 0:
            sample["metadata"] = {"tags": ["billing"], "tier": index % 2}
        if index % 11 == 0:  # not the plain shape: validated through the model
            sample["turns"] = None
        samples.append(sample)
    return {
        "name": "doc",
        "metrics": ["exact-match", {"name": "rouge-l", "threshold": 0.3}],
        "repetitions": 2,
        "samples": samples,
        "gate": {"min_pass_rate": 0.1},
    }


def test_a_large_json_dataset_is_scanned_and_equals_the_whole_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "data.json"
    path.write_text(json.dumps(dataset_document(400), indent=1, ensure_ascii=False), "utf-8")
    whole(monkeypatch)
    expected = load_dataset(path)
    streamed(monkeypatch)
    monkeypatch.setattr(json_items, "BLOCK", 256)
    got = load_dataset(path)
    assert isinstance(got.samples, DocumentSamples)
    assert list(got.samples) == list(expected.samples)
    assert got.samples[17] == expected.samples[17] and got.samples[-1] == expected.samples[-1]
    assert got.samples[3:6] == expected.samples[3:6]
    for field in ("name", "metrics", "repetitions", "gate", "schema_version", "description"):
        assert getattr(got, field) == getattr(expected, field), field
    assert got.samples.metadata_keys == {"tags", "tier"}


@pytest.mark.parametrize(
    "change",
    [
        lambda doc: doc["samples"].append(dict(doc["samples"][0])),  # a duplicate id
        lambda doc: doc["samples"][7].update(input=[1]),  # an invalid field
        lambda doc: doc.update(repetitions=0),  # an invalid header
        lambda doc: doc.update(surprise=1),  # an unknown header key
        lambda doc: doc.update(samples=[]),
        lambda doc: doc.pop("name"),
    ],
)
def test_json_dataset_errors_are_the_whole_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: Any
) -> None:
    document = dataset_document(30)
    change(document)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    whole(monkeypatch)
    with pytest.raises(DatasetError) as expected:
        load_dataset(path)
    streamed(monkeypatch)
    with pytest.raises(DatasetError) as got:
        load_dataset(path)
    assert str(got.value) == str(expected.value)


def test_a_json_conversation_dataset_is_read_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    document = dataset_document(10)
    document["samples"].append(
        {"id": "c", "input": {}, "turns": [{"user": "hi", "expected_output": "hello"}]}
    )
    path = tmp_path / "talk.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    streamed(monkeypatch)
    loaded = load_dataset(path)
    assert isinstance(loaded.samples, list) and loaded.samples[-1].id == "c#1"


def outputs_document(tmp_path: Path, form: str, count: int = 300) -> tuple[Path, Path]:
    data, out = make_files(tmp_path, count)
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    rows[3]["retrieved"] = ["d1", "d2"]
    rows[4]["usage"] = {"prompt_tokens": 3}
    if form == "list":
        entries: Any = rows
    else:
        entries = {r["id"]: (r["output"] if len(r) == 2 else r) for r in rows}
        for value in entries.values():
            if isinstance(value, dict):
                value.pop("id")
    path = tmp_path / f"out-{form}.json"
    path.write_text(json.dumps({"schema_version": "assay.outputs.v1", "outputs": entries}))
    return data, path


@pytest.mark.parametrize("form", ["list", "mapping"])
def test_json_outputs_look_up_like_the_whole_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, form: str
) -> None:
    data, path = outputs_document(tmp_path, form)
    whole(monkeypatch)
    expected = load_outputs(path)
    streamed(monkeypatch)
    got = load_outputs(path)
    assert isinstance(got, DocumentOutputs)
    assert list(got) == list(expected) and len(got) == len(expected)
    ids = list(expected)
    random.Random(1).shuffle(ids)
    assert all(got[i] == expected[i] for i in ids)  # any order
    assert all(got[i] == expected[i] for i in expected)  # file order, guessed
    assert "nope" not in got
    assert same_ids(got, load_dataset(data).samples)


@pytest.mark.parametrize(
    "entries",
    [
        {"a": "x", "b": {"turns": ["hi"]}},  # a conversation: one entry per turn
        {"a": "x", "": "empty id"},
        {"a": "x", "b": 3},
        [{"id": "a", "output": "x"}, {"id": "a", "output": "y"}],  # duplicate id
        [{"id": "a", "output": "x"}, "not an object"],
        [{"id": True, "output": "x"}],
    ],
)
def test_json_outputs_the_scan_leaves_are_read_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, entries: Any
) -> None:
    path = tmp_path / "out.json"
    path.write_text(json.dumps({"outputs": entries}), encoding="utf-8")
    whole(monkeypatch)
    try:
        expected: Any = dict(load_outputs(path))
    except OutputsError as exc:
        expected = str(exc)
    streamed(monkeypatch)
    try:
        got: Any = load_outputs(path)
        assert not isinstance(got, DocumentOutputs)
        got = dict(got)
    except OutputsError as exc:
        got = str(exc)
    assert got == expected


def test_a_run_over_json_documents_reports_what_a_whole_run_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    jsonl, out = make_files(tmp_path, 5000)  # more than two scoring chunks
    samples = [json.loads(line) for line in jsonl.read_text(encoding="utf-8").splitlines()]
    data = tmp_path / "data.json"
    data.write_text(json.dumps({"name": "data", "samples": samples}), encoding="utf-8")
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    saved = tmp_path / "out.json"
    saved.write_text(json.dumps({"outputs": {r["id"]: r["output"] for r in rows}}))
    whole(monkeypatch)
    expected = run_report(capsys, tmp_path, "whole", data, saved)
    streamed(monkeypatch)
    got = run_report(capsys, tmp_path, "streamed", data, saved)
    assert got == expected
    assert len(got["rows"]) == 5000 and got["failing_rows"]
