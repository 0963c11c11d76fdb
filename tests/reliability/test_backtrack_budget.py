"""Issue 33, defect 7: the backtracking regex engine is bounded per run, not only per sample.

On a7b0681 patterns RE2 cannot take ran one limited child process per sample, one after the
other, with no bound on the run: 2,000 samples of ``(\\w)\\1`` took 177 s.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
import yaml

from assay.cli import main
from assay.metrics.pattern import compile_pattern
from report.reports import check_report


class Recording:
    """A stand-in for the worker process: sleeps, records how many ran at once."""

    def __init__(self, sleep_s: float) -> None:
        self.sleep_s = sleep_s
        self.running = 0
        self.most = 0
        self.lock = threading.Lock()

    def __call__(self, body: str, flags: int, anchored: bool, text: str, timeout_s: float) -> bool:
        with self.lock:
            self.running += 1
            self.most = max(self.most, self.running)
        time.sleep(self.sleep_s)
        with self.lock:
            self.running -= 1
        return text[0] == text[1]


def test_a_batch_runs_on_a_bounded_pool_of_workers() -> None:
    from assay.metrics.backtrack_pool import BacktrackBudget  # here: the report test runs on main

    worker = Recording(0.05)
    budget = BacktrackBudget(workers=3, match=worker)
    pattern = compile_pattern(r"(\w)\1", 0, False)
    texts = [f"{c}{c}" if i % 2 else f"{c}x" for i, c in enumerate("abcdefghijkl")]
    found = pattern.find_each(texts, 1.0, budget)
    assert found == [(i % 2 == 1, "backtracking") for i in range(12)]
    assert worker.most == 3 and budget.matches == 12


def test_the_run_budget_stops_new_matches_and_says_so() -> None:
    from assay.metrics.backtrack_pool import BacktrackBudget

    budget = BacktrackBudget(seconds=0.2, workers=1, match=Recording(0.1))
    pattern = compile_pattern(r"(\w)\1", 0, False)
    found = pattern.find_each(["aa"] * 6, 1.0, budget)
    matched = [f for f in found if isinstance(f, tuple)]
    refused = [f for f in found if isinstance(f, str)]
    assert 2 <= len(matched) <= 3 and len(matched) + len(refused) == 6
    assert all(
        "time budget for the backtracking regex engine (0.2s) is spent" in r for r in refused
    )
    note = budget.note()
    assert note is not None and f"{len(refused)} not matched" in note


def test_the_report_says_how_many_patterns_fell_back_and_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    samples = [
        {"id": f"s{i}", "input": {"q": "?"}, "expected_output": r"/(\w)\1/"} for i in range(6)
    ]
    samples.append({"id": "plain", "input": {"q": "?"}, "expected_output": "/ab+/"})
    document = {"schema_version": "assay.dataset.v1", "name": "re", "samples": samples}
    document["metrics"] = [{"name": "regex", "run_budget_s": 60}]
    (tmp_path / "d.yml").write_text(yaml.safe_dump(document), encoding="utf-8")
    answers = {f"s{i}": "aa" if i % 2 else "ab" for i in range(6)} | {"plain": "abb"}
    (tmp_path / "o.json").write_text(json.dumps({"outputs": answers}), encoding="utf-8")
    with pytest.raises(SystemExit):
        main(["run", "d.yml", "--outputs", "o.json", "--no-store", "-f", "json", "-q"])
    report = check_report(capsys.readouterr().out)
    scores = {row["id"]: row["scores"]["regex"]["score"] for row in report["rows"]}
    assert scores == {
        "s0": 0.0,
        "s1": 1.0,
        "s2": 0.0,
        "s3": 1.0,
        "s4": 0.0,
        "s5": 1.0,
        "plain": 1.0,
    }
    notes = [w for w in report["warnings"] if w.startswith("regex:")]
    assert len(notes) == 1 and notes[0].startswith(
        "regex: 1 pattern(s) ran in the backtracking engine (constructs RE2 cannot take"
    )
    assert "6 match(es)" in notes[0]
