"""``assay store copy`` both ways, and named baselines shared through the store."""

from __future__ import annotations

import json
from pathlib import Path

from .helpers import assay, write_project

FORMATS = ("json", "md", "html", "junit")


def _history(folder: Path, store: str) -> list[str]:
    """Runs of every kind into ``store``: saved outputs (chunks), a Python system with errored
    rows, one resumed with --retry-errors, one gated; their ids."""
    write_project(folder, 300)
    run = ["run", "big.jsonl", "--metric", "exact-match", "--store", store, "-q", "-f", "json"]
    steps = [
        [*run, "--outputs", "outputs.json", "--run-id", "saved"],
        [*run, "--sut", "bot:answer", "--run-id", "called"],
        [*run, "--sut", "bot:answer", "--resume", "called", "--retry-errors"],
        [
            *run,
            "--outputs",
            "outputs.json",
            "--run-id",
            "gated",
            "--min-pass-rate",
            "exact-match=0.9",
        ],
    ]
    for step in steps:
        done = assay(*step, cwd=folder)
        assert done.returncode in (0, 1), done.stderr
    return ["saved", "called", "gated"]


def _reports(folder: Path, store: str, ids: list[str]) -> dict[tuple[str, str], str]:
    found = {}
    for run_id in ids:
        for fmt in FORMATS:
            done = assay("report", run_id, "--store", store, "-f", fmt, cwd=folder)
            assert done.returncode in (0, 1), done.stderr
            found[run_id, fmt] = done.stdout
    return found


def test_copy_both_ways_renders_byte_identical_reports(tmp_path: Path, pg_url: str) -> None:
    original = str(tmp_path / "original.db")
    ids = _history(tmp_path, original)
    made = assay("baseline", "set", "saved", "--store", original, "--name", "main", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    reports = _reports(tmp_path, original, ids)
    up = assay("store", "copy", original, pg_url, cwd=tmp_path)
    assert up.returncode == 0, up.stderr
    assert up.stdout.startswith("copied 3 run(s)") and "1 named baselines" in up.stdout
    back = str(tmp_path / "back.db")
    down = assay("store", "copy", pg_url, back, cwd=tmp_path)
    assert down.returncode == 0, down.stderr
    assert _reports(tmp_path, pg_url, ids) == reports
    assert _reports(tmp_path, back, ids) == reports
    listing = [assay("runs", "--store", s, cwd=tmp_path).stdout for s in (original, pg_url, back)]
    assert listing[0] == listing[1] == listing[2]
    assert "main: set" in assay("baseline", "list", "--store", back, cwd=tmp_path).stdout
    again = assay("store", "copy", original, pg_url, cwd=tmp_path)
    assert again.returncode == 2 and "already holds run" in again.stderr
    assert "assay-test-pw" not in again.stderr


def test_a_named_baseline_set_on_one_machine_is_compared_on_another(
    tmp_path: Path, store_place: str
) -> None:
    ci, laptop = tmp_path / "ci", tmp_path / "laptop"
    write_project(ci, 60)
    write_project(laptop, 60)
    run = [
        "run",
        "big.jsonl",
        "--metric",
        "exact-match",
        "--store",
        store_place,
        "-q",
        "-f",
        "json",
    ]
    first = assay(*run, "--outputs", "outputs.json", "--run-id", "main-1", cwd=ci)
    assert first.returncode == 0, first.stderr
    (ci / "report.json").write_text(first.stdout, encoding="utf-8")
    pinned = assay(
        "baseline", "set", "report.json", "--name", "main", "--store", store_place, cwd=ci
    )
    assert pinned.returncode == 0, pinned.stderr
    assert "baseline 'main' set to run main-1" in pinned.stdout
    assert not (laptop / ".assay" / "baselines").exists()
    # the laptop's answers are all right: every sample the baseline failed now passes
    outputs = [{"id": f"s{i}", "output": f"Q{i}"} for i in range(60)]
    (laptop / "fixed.json").write_text(json.dumps({"outputs": outputs}), encoding="utf-8")
    second = assay(*run, "--outputs", "fixed.json", "--compare", "baseline:main", cwd=laptop)
    assert second.returncode == 0, second.stderr
    comparison = json.loads(second.stdout)["comparison"]
    assert comparison["reference_run_id"] == "main-1"
    compare = assay("compare", "main-1", "baseline:main", "--store", store_place, cwd=laptop)
    assert compare.returncode == 0, compare.stderr
    missing = assay(*run, "--outputs", "fixed.json", "--compare", "baseline:dev", cwd=laptop)
    assert missing.returncode == 2 and "no baseline named 'dev'" in missing.stderr
