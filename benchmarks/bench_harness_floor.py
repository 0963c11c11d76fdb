"""The least a harness can spend per (sample, metric) on a saved-outputs run, measured.

``bench_saved_outputs.py`` prints what ``assay run`` adds to the metrics themselves (the
harness cost). This script measures a lower bound for that figure on the same files: the work
any harness must do to produce what ``assay run`` produces, written as plainly and cheaply as
Python allows, with nothing else (no runner, no objects per row, no failing rows, no
aggregates, no checks):

1. parse every dataset line and every output line (pydantic-core's JSON parser, as assay);
2. take each row's hash (canonical JSON, SHA-256: the row hash the report defines);
3. encode each report row as JSON (the rows of a real report of this run, decoded beforehand
   and not timed, so the bytes match ``assay run``'s);
4. keep the rows durably: SQLite in WAL mode, one row per chunk of 1,024 (as assay's store
   keeps a clean chunk, with less beside each row);
5. write the report's rows to a file.

Each step runs in a fresh interpreter; start-up is ``python -c pass``. The harness cost that
``bench_saved_outputs.py`` prints is the run's CPU less the metrics' ``score()`` called in a
loop; a run scores through ``score_batch``, which costs less, so the floor of that figure is
start-up + the five steps + the four metrics' ``score_batch`` over the runner's chunks - their
``score()`` loop, over (samples x metrics). A harness that does all of this in CPython cannot
show a smaller figure. assay also checks both files whole before the first execution and then
reads them again (so memory stays flat as the files grow); the script prints the floor with
that second parse as well.

    python benchmarks/bench_harness_floor.py [--samples 100000]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_saved_outputs import METRICS, child_env, generate, measure
from timing import compile_package

STEPS = ("parse", "row_hash", "encode", "store", "report", "score_batch", "score")
CHUNK = 1024


def _rows_of(report: Path) -> list[dict[str, object]]:
    with report.open(encoding="utf-8") as handle:
        return list(json.load(handle)["rows"])


def _metrics(directory: Path, *, batch: bool) -> float:
    """CPU seconds of the four metrics over every (sample, output): ``score_batch`` a chunk at
    a time, or ``score()`` a row at a time (failures captured, as a run captures them)."""
    import contextlib

    from assay.data.loading import load_dataset, load_outputs
    from assay.engine.runner import SCORE_CHUNK
    from assay.errors import MetricError
    from assay.metrics.registry import resolve

    samples = list(load_dataset(directory / "dataset.jsonl").samples)
    saved = load_outputs(directory / "outputs.jsonl")
    outputs = [saved[sample.id] for sample in samples]
    metrics = [resolve(name) for name in METRICS]
    started = time.process_time()
    if batch:
        for first in range(0, len(samples), SCORE_CHUNK):
            chunk = slice(first, first + SCORE_CHUNK)
            for metric in metrics:
                metric.score_batch(samples[chunk], outputs[chunk])
        return time.process_time() - started
    for sample, output in zip(samples, outputs):
        for metric in metrics:
            with contextlib.suppress(MetricError):
                metric.score(sample, output)
    return time.process_time() - started


def step(name: str, directory: Path) -> float:
    """CPU seconds of one step, run in this (fresh) process; inputs prepared untimed."""
    import hashlib
    import sqlite3

    import pydantic_core

    from assay.data.dataset import canonical_json

    if name in ("score_batch", "score"):
        return _metrics(directory, batch=name == "score_batch")
    dataset, outputs = directory / "dataset.jsonl", directory / "outputs.jsonl"
    parsed = [pydantic_core.from_json(line) for line in dataset.open("rb")]
    rows = _rows_of(directory / "report.json") if name in ("encode", "store", "report") else []
    encoded = [pydantic_core.to_json(row) for row in rows] if name in ("store", "report") else []
    started = time.process_time()
    if name == "parse":
        parsed = [pydantic_core.from_json(line) for line in dataset.open("rb")]
        answers = {}
        for line in outputs.open("rb"):
            entry = pydantic_core.from_json(line)
            answers[entry["id"]] = entry["output"]
    elif name == "row_hash":
        for sample in parsed:
            document = {"input": sample["input"], "expected": sample["expected_output"]}
            hashlib.sha256(canonical_json(document).encode("utf-8")).hexdigest()
    elif name == "encode":
        encoded = [pydantic_core.to_json(row) for row in rows]
    elif name == "store":
        db = sqlite3.connect(directory / "floor.db", isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("CREATE TABLE chunks (first INTEGER PRIMARY KEY, ids TEXT, body BLOB)")
        for first in range(0, len(encoded), CHUNK):
            ids = "\n".join(str(row["id"]) for row in rows[first : first + CHUNK])
            body = b"\n".join(encoded[first : first + CHUNK])
            db.execute("BEGIN")
            db.execute("INSERT INTO chunks VALUES (?, ?, ?)", (first, ids, body))
            db.execute("COMMIT")
        db.close()
    elif name == "report":
        with (directory / "floor.json").open("wb") as handle:
            handle.write(b'{"rows": [\n')
            handle.write(b",\n".join(encoded))
            handle.write(b"\n]}\n")
    return time.process_time() - started


def floor(directory: Path, env: dict[str, str], per: float) -> tuple[float, dict[str, float]]:
    """Each step in a fresh interpreter, printed as it finishes; the floor (CPU s) and steps."""
    _, start_cpu, _, _, _ = measure([sys.executable, "-c", "pass"], env)
    total, seconds = start_cpu, {}
    print(f"  interpreter start-up  {start_cpu * per:6.2f}")
    for name in STEPS:
        for stale in directory.glob("floor.*"):
            os.unlink(stale)
        child = [sys.executable, __file__, "--step", name, str(directory)]
        done = subprocess.run(child, env=env, capture_output=True, text=True, check=True)
        seconds[name] = float(done.stdout.strip().splitlines()[-1])
        total += -seconds[name] if name == "score" else seconds[name]
        print(f"  {'-' if name == 'score' else ' '}{name:19s}  {seconds[name] * per:6.2f}")
    return total, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=100_000)
    parser.add_argument("--step", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.step:  # a child: one step
        print(json.dumps(step(args.step[0], Path(args.step[1]))))
        return
    print(compile_package())
    env = child_env()
    with tempfile.TemporaryDirectory() as temp:
        directory = Path(temp)
        dataset, outputs = generate(directory, args.samples)
        command = [sys.executable, "-m", "assay", "run", str(dataset), "--outputs", str(outputs)]
        for metric in METRICS:
            command += ["-m", metric]
        command += ["-f", "json", "-o", str(directory / "report.json")]
        command += ["--store", str(directory / "runs.db"), "-q"]
        _, run_cpu, _, code, tail = measure(command, env)
        if code not in (0, 1):
            sys.exit(f"assay run failed ({code}): {tail}")
        per = 1e6 / (args.samples * len(METRICS))
        print(f"{args.samples:,} samples x {len(METRICS)} metrics; us per (sample, metric), CPU")
        total, seconds = floor(directory, env, per)
    print(f"  floor, in all         {total * per:6.2f}  (goal: 2.00)")
    again = total + seconds["parse"]
    print(
        f"  + parsing both files a second time {again * per:.2f} (assay checks every line "
        "before the first execution and keeps the files on disk, so it reads them twice)"
    )
    harness = run_cpu - seconds["score"]
    print(
        f"assay run: {run_cpu:.2f} s CPU; harness (run - score() loop) {harness * per:.2f} us "
        f"per score, {harness / total:.1f}x the floor"
    )


if __name__ == "__main__":
    main()
