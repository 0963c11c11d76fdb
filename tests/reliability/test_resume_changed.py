"""Issue 33, defect 4: ``--resume`` refuses a dataset edited since the run began.

On a7b0681 a changed ``metrics`` list was refused but a changed ``expected_output`` or ``input``
was not: a resumed report scored half its rows against the old values and half against the new.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import pytest
import yaml

from assay.cli import main
from report.reports import check_report

BOT = """
from pathlib import Path

def answer(sample_input):
    with open("calls.log", "a") as log:
        log.write(sample_input["q"] + "\\n")
    return sample_input["q"].upper()
"""


def _dataset(path: Path, expected: dict[str, str], questions: dict[str, str] | None = None) -> None:
    samples = [
        {"id": key, "input": {"q": (questions or {}).get(key, key)}, "expected_output": value}
        for key, value in expected.items()
    ]
    document = {"schema_version": "assay.dataset.v1", "name": "resume", "samples": samples}
    document["metrics"] = ["exact-match"]
    path.write_text(yaml.safe_dump(document), encoding="utf-8")


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        main(["run", "d.yml", "--store", "runs.db", "--format", "json", "--quiet", *args])
    captured = capsys.readouterr()
    return int(info.value.code or 0), captured.out, captured.err


def _scores(out: str) -> dict[str, float]:
    report = check_report(out)
    return {row["id"]: row["scores"]["exact-match"]["score"] for row in report["rows"]}


@pytest.fixture(autouse=True)
def _here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "resume_bot.py").write_text(BOT, encoding="utf-8")


def test_an_edited_expected_output_is_refused_then_rescored_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    expected = {"a": "A", "b": "B", "c": "C", "d": "D"}
    _dataset(tmp_path / "d.yml", expected)
    sut = ["--sut", "resume_bot:answer", "--run-id", "r1"]
    code, out, _ = _run(capsys, *sut)
    assert code == 0 and _scores(out) == {"a": 1.0, "b": 1.0, "c": 1.0, "d": 1.0}

    _dataset(tmp_path / "d.yml", {**expected, "b": "not B", "d": "not D"})
    (tmp_path / "calls.log").write_text("", encoding="utf-8")
    code, _, err = _run(capsys, "--sut", "resume_bot:answer", "--resume", "r1")
    assert code == 2 and "sample 'b' changed" in err and "--resume-changed" in err
    assert (tmp_path / "calls.log").read_text() == ""  # refused before any call

    code, out, _ = _run(capsys, "--sut", "resume_bot:answer", "--resume", "r1", "--resume-changed")
    assert sorted((tmp_path / "calls.log").read_text().split()) == ["b", "d"]
    assert _scores(out) == {"a": 1.0, "b": 0.0, "c": 1.0, "d": 0.0}
    code, out, _ = _run(capsys, "--sut", "resume_bot:answer", "--resume", "r1")
    assert _scores(out) == {"a": 1.0, "b": 0.0, "c": 1.0, "d": 0.0}  # the new hashes hold


def test_saved_outputs_kept_in_chunks_are_rescored_without_duplicates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    keys = [f"s{i:03d}" for i in range(300)]
    _dataset(tmp_path / "d.yml", {key: key for key in keys})
    outputs = {"outputs": {key: key for key in keys}}
    (tmp_path / "o.json").write_text(json.dumps(outputs), encoding="utf-8")
    code, out, _ = _run(capsys, "--outputs", "o.json", "--run-id", "r2")
    assert code == 0 and set(_scores(out).values()) == {1.0}

    _dataset(tmp_path / "d.yml", {key: key for key in keys}, questions={"s150": "edited"})
    code, _, err = _run(capsys, "--outputs", "o.json", "--resume", "r2")
    assert code == 2 and "sample 's150' changed" in err
    code, out, _ = _run(capsys, "--outputs", "o.json", "--resume", "r2", "--resume-changed")
    scores = _scores(out)
    assert code == 0 and len(check_report(out)["rows"]) == 300 and list(scores) == keys


def test_other_metric_options_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _dataset(tmp_path / "d.yml", {"a": "A"})
    document = yaml.safe_load((tmp_path / "d.yml").read_text())
    document["metrics"] = [{"name": "contains", "case_sensitive": True}]
    (tmp_path / "d.yml").write_text(yaml.safe_dump(document), encoding="utf-8")
    assert _run(capsys, "--sut", "resume_bot:answer", "--run-id", "r3")[0] == 0
    document["metrics"] = [{"name": "contains", "case_sensitive": False}]
    (tmp_path / "d.yml").write_text(yaml.safe_dump(document), encoding="utf-8")
    code, _, err = _run(capsys, "--sut", "resume_bot:answer", "--resume", "r3", "--resume-changed")
    assert code == 2 and "other metric options" in err


def test_edited_metadata_is_a_change(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _dataset(tmp_path / "d.yml", {"a": "A", "b": "B"})
    assert _run(capsys, "--sut", "resume_bot:answer", "--run-id", "r4")[0] == 0
    document = yaml.safe_load((tmp_path / "d.yml").read_text())
    document["samples"][1]["metadata"] = {"tags": ["new"]}  # tags only sort: no change
    (tmp_path / "d.yml").write_text(yaml.safe_dump(document), encoding="utf-8")
    assert _run(capsys, "--sut", "resume_bot:answer", "--resume", "r4")[0] == 0
    document["samples"][1]["metadata"] = {"tags": ["new"], "k": 3}
    (tmp_path / "d.yml").write_text(yaml.safe_dump(document), encoding="utf-8")
    code, _, err = _run(capsys, "--sut", "resume_bot:answer", "--resume", "r4")
    assert code == 2 and "sample 'b' changed" in err


def _json_sample_hash(sample: dict[str, object]) -> str:
    """How assay 0.1 (before the h2: scheme) hashed a sample: sha256 of its whole JSON."""
    value = [sample["input"], sample["expected_output"], {}]
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, default=repr, allow_nan=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def test_a_run_stored_with_whole_sample_hashes_resumes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    expected = {"a": "A", "b": "B"}
    _dataset(tmp_path / "d.yml", expected)
    assert _run(capsys, "--sut", "resume_bot:answer", "--run-id", "r5")[0] == 0
    samples = yaml.safe_load((tmp_path / "d.yml").read_text())["samples"]
    with sqlite3.connect(tmp_path / "runs.db") as db:  # as the older assay left it
        db.executemany(
            "UPDATE sample_hashes SET content_hash = ? WHERE run_id = 'r5' AND sample_id = ?",
            [(_json_sample_hash(sample), sample["id"]) for sample in samples],
        )
    assert _run(capsys, "--sut", "resume_bot:answer", "--resume", "r5")[0] == 0
    _dataset(tmp_path / "d.yml", {**expected, "a": "not A"})
    code, _, err = _run(capsys, "--sut", "resume_bot:answer", "--resume", "r5")
    assert code == 2 and "sample 'a' changed" in err
