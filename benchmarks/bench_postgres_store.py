"""The run store on PostgreSQL against SQLite: a 100k-sample saved-outputs run, and eight writers.

1. The same run twice per round, once into a new SQLite file and once into a new PostgreSQL
   database, in turn (SQLite first in odd rounds, PostgreSQL first in even ones):

       assay run DATASET --outputs OUTPUTS -m exact-match -f json -o report.json --store STORE

   Each run's wall and CPU time (the child's, from the operating system) is taken, and the
   ratio PostgreSQL / SQLite per round; the median of the rounds is printed. Target: <= 1.5x.
   The two reports must be the same but for the run's id and clocks (checked).

2. Eight such runs of ``--writers-samples`` samples each (default 10,000) started at once into
   one PostgreSQL database: the wall time until the last finishes, rows stored per second, and a
   count of every stored (sample, repetition) per run (each must be stored exactly once).

The server is ``$ASSAY_BENCH_PG_URL`` when set; else one is started in a temporary folder from
the PostgreSQL binaries on this machine (tests/pg_server.py) and stopped at the end.

    python benchmarks/bench_postgres_store.py [--samples 100000] [--rounds 3]
        [--writers 8] [--writers-samples 10000]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from bench_saved_outputs import generate

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import pg_server  # noqa: E402 (tests/ on the path first)


def child_run(args: list[str], cwd: Path) -> tuple[float, float, int]:
    """Run ``python -m assay ARGS``: (wall s, CPU s of the child, exit code)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "assay", *args],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode not in (0, 1):
        raise SystemExit(f"assay {' '.join(args[:2])} failed: {done.stderr.strip()[:500]}")
    return wall, cpu, done.returncode


def new_database(admin_url: str) -> str:
    import psycopg

    name = f"bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return admin_url.rsplit("/", 1)[0] + "/" + name


def comparable(path: Path) -> dict[str, Any]:
    report = json.loads(path.read_text())
    return {key: report[key] for key in ("rows", "metrics", "summary", "failures")}


def one_round(work: Path, admin_url: str, pg_first: bool) -> dict[str, float]:
    """The run into SQLite and into PostgreSQL, in the order given."""
    stores = {
        "sqlite": str(work / f"runs-{uuid.uuid4().hex[:6]}.db"),
        "pg": new_database(admin_url),
    }
    order = ["pg", "sqlite"] if pg_first else ["sqlite", "pg"]
    figures: dict[str, float] = {}
    for kind in order:
        args = ["run", "dataset.jsonl", "--outputs", "outputs.jsonl", "-m", "exact-match"]
        args += ["-f", "json", "-o", f"report-{kind}.json", "--store", stores[kind], "-q"]
        figures[f"{kind}_wall"], figures[f"{kind}_cpu"], _ = child_run(args, work)
    if comparable(work / "report-sqlite.json") != comparable(work / "report-pg.json"):
        raise SystemExit("the PostgreSQL run's report differs from the SQLite run's")
    figures["ratio_wall"] = figures["pg_wall"] / figures["sqlite_wall"]
    figures["ratio_cpu"] = figures["pg_cpu"] / figures["sqlite_cpu"]
    return figures


def writers(work: Path, admin_url: str, count: int) -> dict[str, Any]:
    """``count`` runs at once into one new PostgreSQL database; every row counted after."""
    import psycopg

    url = new_database(admin_url)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    start = time.perf_counter()
    run = ["run", "dataset.jsonl", "--outputs", "outputs.jsonl", "-m", "exact-match"]
    run += ["--store", url, "-q", "-f", "json", "-o", os.devnull]
    processes = [
        subprocess.Popen(
            [sys.executable, "-m", "assay", *run, "--run-id", f"writer-{n}"],
            cwd=work,
            env=env,
            stderr=subprocess.PIPE,
        )
        for n in range(count)
    ]
    codes = [process.wait() for process in processes]
    wall = time.perf_counter() - start
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT r.run_id, (SELECT COUNT(*) FROM executions e WHERE e.run_id = r.run_id) + "
            "(SELECT COALESCE(SUM(size), 0) FROM chunks c WHERE c.run_id = r.run_id) "
            "FROM runs r ORDER BY r.run_id"
        ).fetchall()
    stored = {str(run_id): int(n) for run_id, n in rows}
    return {"wall_s": wall, "exit_codes": codes, "stored_per_run": stored}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--writers-samples", type=int, default=10_000)
    options = parser.parse_args()
    started = None
    admin_url = os.environ.get("ASSAY_BENCH_PG_URL")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        if admin_url is None:
            started = pg_server.start(Path(f"/tmp/assay-bench-pg-{uuid.uuid4().hex[:6]}"))
            admin_url = started.url
        try:
            report(work, admin_url, options)
        finally:
            if started is not None:
                started.stop()


def report(work: Path, admin_url: str, options: argparse.Namespace) -> None:
    generate(work, options.samples)  # dataset.jsonl, outputs.jsonl
    rounds = [one_round(work, admin_url, pg_first=i % 2 == 1) for i in range(options.rounds)]
    print(f"{options.samples} samples, exact-match, {options.rounds} rounds (median):")
    for key in ("sqlite_wall", "pg_wall", "sqlite_cpu", "pg_cpu", "ratio_wall", "ratio_cpu"):
        values = [r[key] for r in rounds]
        print(
            f"  {key:<11} {statistics.median(values):8.3f}  (rounds: "
            + ", ".join(f"{v:.3f}" for v in values)
            + ")"
        )
    (work / "small").mkdir()
    generate(work / "small", options.writers_samples, seed=11)
    found = writers(work / "small", admin_url, options.writers)
    total = sum(found["stored_per_run"].values())
    print(
        f"{options.writers} writers x {options.writers_samples} samples into one PostgreSQL "
        f"store: {found['wall_s']:.2f} s wall, {total / found['wall_s']:.0f} rows/s; "
        f"exit codes {found['exit_codes']}; "
        f"rows stored per run {sorted(set(found['stored_per_run'].values()))}"
    )


if __name__ == "__main__":
    main()
