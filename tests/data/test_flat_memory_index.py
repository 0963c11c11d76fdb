"""A large file's per-line numbers kept on disk (SpillLog), the duplicate check one partition
at a time, the line-by-line join of outputs saved in the dataset's order, and files over the
size a file may have when read whole: read a line at a time, their problems named as the
whole-file reader names them (its message computed here with the limit as it is)."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from assay.data import dataset_stream, documents, outputs_stream, spill_log
from assay.data.dataset import read_dataset
from assay.data.loading import load_dataset, load_outputs
from assay.data.outputs import read_outputs
from assay.data.outputs_stream import JsonlOutputs, same_ids
from assay.data.spill_log import SpillLog, duplicate_hash, same_order
from assay.errors import DatasetError, InputError, OutputsError


def _log(values: list[int], block: int) -> SpillLog:
    log = SpillLog(block)
    for value in values:
        log.append(value)
    return log


@pytest.mark.parametrize(("count", "block"), [(0, 4), (3, 4), (4, 4), (101, 7), (5000, 64)])
def test_a_log_reads_back_what_was_appended(count: int, block: int) -> None:
    values = [random.Random(count).randrange(-(2**63), 2**63) for _ in range(count)]
    log = _log(values, block)
    assert len(log) == count
    assert np.concatenate([np.empty(0, np.int64), *log.chunks()]).tolist() == values
    assert log.to_array().tolist() == values
    order = list(range(count))
    random.Random(1).shuffle(order)
    assert [log[i] for i in order] == [values[i] for i in order]
    assert [log[-i] for i in range(1, count + 1)] == [values[-i] for i in range(1, count + 1)]
    with pytest.raises(IndexError):
        log[count]


@pytest.mark.parametrize("bucket", [8, 100, 1 << 20])
def test_the_duplicate_check_finds_the_repeated_hash_or_none(bucket: int) -> None:
    rng = random.Random(bucket)
    values = list({rng.randrange(-(2**63), 2**63) for _ in range(3000)})
    assert duplicate_hash(_log(values, 64), bucket) is None
    repeated = values[1234]
    values.insert(rng.randrange(len(values)), repeated)
    assert duplicate_hash(_log(values, 64), bucket) == repeated


def test_same_order_compares_in_order() -> None:
    values = list(range(-50, 250))
    assert same_order(_log(values, 16), _log(values, 16))
    assert same_order(_log(values, 16), np.array(values, dtype=np.int64))
    swapped = [*values[:10], values[11], values[10], *values[12:]]
    assert not same_order(_log(values, 16), _log(swapped, 16))
    assert not same_order(_log(values, 16), np.array(values[:-1], dtype=np.int64))


def _files(tmp_path: Path, count: int, *, shuffled: bool = False) -> tuple[Path, Path]:
    dataset, outputs = tmp_path / "dataset.jsonl", tmp_path / "outputs.jsonl"
    rows = [
        {"id": f"q{i}", "input": {"q": i}, "expected_output": f"a{i % 7}"} for i in range(count)
    ]
    answers = [{"id": f"q{i}", "output": f"a{i % 5}"} for i in range(count)]
    if shuffled:
        random.Random(2).shuffle(answers)
    dataset.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    outputs.write_text("".join(json.dumps(a) + "\n" for a in answers), encoding="utf-8")
    return dataset, outputs


@pytest.fixture
def streamed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every JSONL file streamed, none kept, logs written out past 32 values."""
    monkeypatch.setattr(dataset_stream, "STREAM_MIN_BYTES", 0)
    monkeypatch.setattr(outputs_stream, "STREAM_MIN_BYTES", 0)
    monkeypatch.setattr(outputs_stream, "KEEP_BUDGET", 0)
    monkeypatch.setattr(spill_log, "LOG_BLOCK", 32)


@pytest.mark.usefixtures("streamed")
def test_outputs_in_dataset_order_are_joined_with_no_index(tmp_path: Path) -> None:
    dataset_path, outputs_path = _files(tmp_path, 500)
    dataset, outputs = load_dataset(dataset_path), load_outputs(outputs_path)
    assert isinstance(outputs, JsonlOutputs)
    assert same_ids(outputs, dataset.samples)
    ids = [sample.id for sample in dataset.samples]
    got = outputs.outputs_of(ids[:250]) + outputs.outputs_of(ids[250:])
    expected = read_outputs(outputs_path)
    assert [o.text if o else None for o in got] == [expected[i].text for i in ids]
    assert outputs._hashes is None  # never sorted: every lookup was the next line


@pytest.mark.usefixtures("streamed")
def test_outputs_in_another_order_are_looked_up_through_the_index(tmp_path: Path) -> None:
    dataset_path, outputs_path = _files(tmp_path, 300, shuffled=True)
    dataset, outputs = load_dataset(dataset_path), load_outputs(outputs_path)
    assert same_ids(outputs, dataset.samples)
    assert same_ids(outputs, list(dataset.samples))  # samples held in memory
    ids = [sample.id for sample in dataset.samples]
    expected = read_outputs(outputs_path)
    got = outputs.outputs_of(ids)
    assert [o.text if o else None for o in got] == [expected[i].text for i in ids]
    assert len(outputs) == 300 and outputs.get("nope") is None


@pytest.mark.usefixtures("streamed")
def test_a_missing_output_is_not_the_same_ids(tmp_path: Path) -> None:
    dataset_path, outputs_path = _files(tmp_path, 100)
    lines = outputs_path.read_text(encoding="utf-8").splitlines(keepends=True)
    outputs_path.write_text("".join(lines[:40] + lines[41:]), encoding="utf-8")
    assert not same_ids(load_outputs(outputs_path), load_dataset(dataset_path).samples)


def _whole_file_error(load: Any, path: Path) -> str:
    with pytest.raises(InputError) as caught:
        load(path)
    return str(caught.value)


def over_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every file is over the size a file may have when read whole (so it cannot be)."""
    for module in (dataset_stream, outputs_stream, documents):
        monkeypatch.setattr(module, "MAX_DATASET_BYTES", 10)


def insert_line(path: Path, index: int, line: str) -> None:
    """``line`` put into a JSONL file before its line ``index`` (0-based)."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    lines.insert(index, line + "\n")
    path.write_text("".join(lines), encoding="utf-8")


DATASET_PROBLEMS = {
    "bad json": '{"id": "x", "input": {',
    "bad field": '{"id": "x", "input": 5, "expected_output": "a"}',
    "unknown field": '{"id": "x", "input": {}, "expected_output": "a", "extra": 1}',
    "repeated id": '{"id": "q7", "input": {}, "expected_output": "a"}',
}


@pytest.mark.usefixtures("streamed")
@pytest.mark.parametrize("problem", sorted(DATASET_PROBLEMS))
def test_a_dataset_over_the_limit_names_its_problem(
    tmp_path: Path, problem: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    dataset_path, _ = _files(tmp_path, 120)
    insert_line(dataset_path, 90, DATASET_PROBLEMS[problem])
    expected = _whole_file_error(read_dataset, dataset_path)
    over_the_limit(monkeypatch)
    with pytest.raises(DatasetError) as caught:
        load_dataset(dataset_path)
    if problem == "repeated id":
        assert str(caught.value) == (
            f"{dataset_path}: sample 'q7': field 'id': duplicate id 'q7' "
            "(first used at line 8, repeated at line 91)"
        )
    else:
        assert str(caught.value) == expected


OUTPUT_PROBLEMS = {
    "bad json": '{"id": "q3", "output": ',
    "not an object": "[1, 2]",
    "no id": '{"output": "a"}',
    "bad output": '{"id": "q3x", "output": 5}',
    "repeated id": '{"id": "q7", "output": "a"}',
}


@pytest.mark.usefixtures("streamed")
@pytest.mark.parametrize("problem", sorted(OUTPUT_PROBLEMS))
def test_outputs_over_the_limit_name_their_problem(
    tmp_path: Path, problem: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, outputs_path = _files(tmp_path, 120)
    insert_line(outputs_path, 90, OUTPUT_PROBLEMS[problem])
    expected = _whole_file_error(read_outputs, outputs_path)
    over_the_limit(monkeypatch)
    with pytest.raises(OutputsError) as caught:
        load_outputs(outputs_path)
    if problem == "repeated id":
        assert str(caught.value) == (
            f"{outputs_path}: sample 'q7': field 'id': duplicate id 'q7' (line 8 and line 91)"
        )
    else:
        assert str(caught.value) == expected


@pytest.mark.usefixtures("streamed")
def test_files_over_the_limit_are_read_a_line_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dataset_path, outputs_path = _files(tmp_path, 200)
    expected = read_dataset(dataset_path).samples
    over_the_limit(monkeypatch)
    with pytest.raises(DatasetError, match="the limit is 10"):
        read_dataset(dataset_path)
    dataset, outputs = load_dataset(dataset_path), load_outputs(outputs_path)
    assert list(dataset.samples) == expected
    assert same_ids(outputs, dataset.samples)
