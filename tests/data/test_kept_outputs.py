"""Saved outputs kept by the index pass: each line parsed once, the same outputs, the same errors.

The index's size threshold is lowered to 0 so small files take the indexed path; the budget
for keeping outputs is left as shipped (these files fit it) or set to a few lines (they do
not). Every check compares with the same file loaded whole, the path small files take.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from assay.cli import main
from assay.data import documents, outputs_stream
from assay.data.dataset import Sample
from assay.data.loading import load_outputs
from assay.data.outputs import read_outputs
from assay.data.outputs_stream import DocumentOutputs, JsonlOutputs, KeptOutputs, same_ids
from assay.errors import OutputsError


@pytest.fixture(autouse=True)
def indexed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(outputs_stream, "STREAM_MIN_BYTES", 0)


def write_lines(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def ranking_rows(count: int, seed: int = 11) -> list[dict[str, Any]]:
    """Lines of every shape a saved output takes: text, a ranking, {id, text} entries, ints,
    duplicate ids in a ranking, usage and contexts."""
    rng = random.Random(seed)
    docs = [f"d{n}" for n in range(40)]
    rows: list[dict[str, Any]] = []
    for index in range(count):
        ranking: list[Any] = rng.sample(docs, rng.randint(0, 12))
        kind = index % 5
        if kind == 1 and ranking:
            ranking.append(ranking[0])  # a repeated id keeps its first rank
        elif kind == 2:
            ranking = [{"id": doc, "text": f"text of {doc}"} for doc in ranking]
        elif kind == 3:
            ranking = [*ranking, 7]
        row: dict[str, Any] = {"id": f"q{index}", "output": f"answer {index}"}
        if kind != 4:
            row["retrieved"] = ranking
        else:
            row["usage"] = {"prompt_tokens": index}
            row["contexts"] = ["c1", {"text": "c2"}]
        rows.append(row)
    return rows


def test_kept_outputs_are_the_whole_files(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "out.jsonl", ranking_rows(300))
    expected = read_outputs(path)
    got = load_outputs(path)
    assert isinstance(got, KeptOutputs)
    assert list(got) == list(expected)
    assert all(got[key] == expected[key] for key in expected)
    assert [o.retrieved for o in got.values()] == [o.retrieved for o in expected.values()]
    assert got.outputs_of(["q3", "nope", "q0"]) == [expected["q3"], None, expected["q0"]]
    assert "nope" not in got and "q5" in got
    with pytest.raises(KeyError):
        got["nope"]


def test_each_line_is_parsed_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Loading, the coverage check and every lookup parse each line once between them."""
    path = write_lines(tmp_path / "out.jsonl", ranking_rows(50))
    parsed: list[str] = []
    real, real_call = documents.parse_jsonl_line, documents.LineParser.__call__

    def counting(line: str, *args: Any) -> Any:
        parsed.append(line)
        return real(line, *args)

    def counting_call(parser: documents.LineParser, line: str, number: int) -> Any:
        parsed.append(line)
        return real_call(parser, line, number)

    monkeypatch.setattr(outputs_stream, "parse_jsonl_line", counting)
    monkeypatch.setattr(documents.LineParser, "__call__", counting_call)
    saved = load_outputs(path)
    samples = [Sample(id=f"q{i}", input={}, expected_output=None) for i in range(50)]
    assert same_ids(saved, samples)  # the coverage check of samples held in memory
    assert isinstance(saved, KeptOutputs) and saved.outputs_of([s.id for s in samples])
    assert len(parsed) == 50


def test_kept_outputs_of_a_json_document_are_the_whole_files(tmp_path: Path) -> None:
    rows = ranking_rows(120)
    body = {row["id"]: {k: v for k, v in row.items() if k != "id"} for row in rows}
    path = tmp_path / "out.json"
    path.write_text(json.dumps({"outputs": body}), encoding="utf-8")
    expected = read_outputs(path)
    got = load_outputs(path)
    assert isinstance(got, KeptOutputs)
    assert list(got) == list(expected)
    assert all(got[key] == expected[key] for key in expected)


def test_outputs_past_the_budget_are_looked_up_by_offset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_lines(tmp_path / "out.jsonl", ranking_rows(200))
    expected = read_outputs(path)
    lines = len(path.read_bytes().splitlines())
    fits = path.stat().st_size + lines * outputs_stream.ENTRY_COST
    monkeypatch.setattr(outputs_stream, "KEEP_BUDGET", fits)
    assert isinstance(load_outputs(path), KeptOutputs)
    monkeypatch.setattr(outputs_stream, "KEEP_BUDGET", fits - 1)  # one byte short: by offset
    got = load_outputs(path)
    assert type(got) is JsonlOutputs
    assert all(got[key] == expected[key] for key in expected)


def test_a_document_that_outgrows_the_budget_drops_what_it_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A document on one line passes the estimate (size + ENTRY_COST a line) and outgrows the
    budget while it is read: it is then read back by byte span, with the same outputs."""
    body = {row["id"]: {k: v for k, v in row.items() if k != "id"} for row in ranking_rows(80)}
    path = tmp_path / "out.json"
    path.write_text(json.dumps({"outputs": body}), encoding="utf-8")
    monkeypatch.setattr(outputs_stream, "KEEP_BUDGET", path.stat().st_size)
    got = load_outputs(path)
    assert type(got) is DocumentOutputs
    expected = read_outputs(path)
    assert all(got[key] == expected[key] for key in expected)


def test_same_ids_of_samples_in_memory(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "out.jsonl", ranking_rows(20))
    saved = load_outputs(path)
    ids = [f"q{i}" for i in range(20)]
    assert same_ids(saved, [Sample(id=i, input={}, expected_output=None) for i in reversed(ids)])
    assert not same_ids(saved, [Sample(id=i, input={}, expected_output=None) for i in ids[:-1]])
    assert not same_ids(
        saved, [Sample(id=i, input={}, expected_output=None) for i in [*ids[:-1], "other"]]
    )


@pytest.mark.parametrize(
    "bad",
    [
        {"id": "q7", "output": "x", "retrieved": ["a", ""]},
        {"id": "q7", "output": 3, "retrieved": ["a"]},
        {"id": "q7", "output": "x", "retrieved": "a"},
        {"id": "q0", "output": "x", "retrieved": ["a"]},  # a duplicate id
    ],
)
def test_a_bad_line_stops_the_run_before_any_row(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], bad: dict[str, Any]
) -> None:
    rows = ranking_rows(30)
    rows[7] = bad
    out = write_lines(tmp_path / "out.jsonl", rows)
    with pytest.raises(OutputsError) as expected:
        read_outputs(out)
    samples = [{"id": f"q{i}", "input": {}, "expected_output": ["d1"]} for i in range(30)]
    data = write_lines(tmp_path / "data.jsonl", samples)
    store = tmp_path / "runs.db"
    args = ["run", str(data), "--outputs", str(out), "-m", "retrieval-mrr", "--store", str(store)]
    with pytest.raises(SystemExit) as ended:
        main([*args, "-q"])
    assert ended.value.code == 2
    assert str(expected.value) in capsys.readouterr().err
    assert not store.exists()


def test_a_jsonl_file_whose_first_block_misleads_drops_what_it_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The line count is estimated from the first block: long lines first, then many short
    ones, pass the estimate and outgrow the budget while read; the outputs are then looked up
    by offset, the same as read whole."""
    rows = [{"id": f"long{i}", "output": "x" * 400} for i in range(4)]
    rows += [{"id": f"s{i}", "output": "y"} for i in range(300)]
    path = write_lines(tmp_path / "out.jsonl", rows)
    monkeypatch.setattr(outputs_stream, "ESTIMATE_BLOCK", 1024)  # the long lines only
    monkeypatch.setattr(outputs_stream, "KEEP_BUDGET", path.stat().st_size + 40 * 160)
    assert outputs_stream._keeping(path) == {}  # the estimate says they fit
    got = load_outputs(path)
    assert type(got) is JsonlOutputs
    expected = read_outputs(path)
    assert list(got) == list(expected)
    assert all(got[key] == expected[key] for key in expected)
