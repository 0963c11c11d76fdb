"""SIGKILL ``assay run`` at random points, resume it, and compare with an uninterrupted run.

    python scripts/crash_resume.py --kills 20 --samples 300 --seed 7

The system under test is a loopback HTTP server. Each trial starts ``assay run --run-id kN``,
kills it after a random delay (from the first instant of start-up to past the end of the run),
then runs ``--resume kN`` and compares the JSON report with the uninterrupted run's, leaving
out only what differs between any two runs (run id, timestamps, duration). Exit 1 if any
trial differs.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "tests")]

from runner.sut_server import SutServer, write_dataset  # noqa: E402

VOLATILE = ("run_id", "started_at", "finished_at", "duration_seconds")


def command(dataset: Path, url: str, store: Path, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "assay", "run", str(dataset), "--sut-url", url, "--store",
            str(store), "-f", "json", "-o", str(out), "-q", "-j", "4", *extra]  # fmt: skip


def report(path: Path) -> dict[str, Any]:
    data = copy.deepcopy(json.loads(path.read_text(encoding="utf-8")))
    for key in VOLATILE:
        data["run"].pop(key, None)
    return data  # type: ignore[no-any-return]


def trial(n: int, delay: float, work: Path, dataset: Path, url: str, env: dict[str, str]) -> str:
    store, out = work / "runs.db", work / f"k{n}.json"
    killed = subprocess.Popen(
        command(dataset, url, store, out, "--run-id", f"k{n}"), env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    time.sleep(delay)
    killed.send_signal(signal.SIGKILL)
    killed.wait()
    finished_first = killed.returncode in (0, 1)
    resumed = subprocess.run(
        command(dataset, url, store, out, "--resume", f"k{n}"), env=env,
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if resumed.returncode not in (0, 1):
        return f"resume exited {resumed.returncode}: {resumed.stderr.strip()[-300:]}"
    return "finished before the kill" if finished_first else "killed"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--samples", type=int, default=300)
    parser.add_argument("--seed", type=int, default=7)
    options = parser.parse_args()
    rng = random.Random(options.seed)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "NO_PROXY": "127.0.0.1,localhost"}
    differing = 0
    with SutServer(latency_s=0.005) as server, tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        dataset = work / "dataset.json"
        write_dataset(dataset, options.samples)
        began = time.monotonic()
        clean = subprocess.run(command(dataset, server.url, work / "ref.db", work / "ref.json"),
                               env=env, capture_output=True, check=False)  # fmt: skip
        if clean.returncode not in (0, 1):
            raise SystemExit(f"the uninterrupted run failed: {clean.stderr.decode()[-300:]}")
        span = time.monotonic() - began
        reference = report(work / "ref.json")
        print(f"uninterrupted run: {span:.1f}s for {options.samples} samples")
        for n in range(options.kills):
            delay = rng.uniform(0.0, span * 1.1)
            outcome = trial(n, delay, work, dataset, server.url, env)
            same = (work / f"k{n}.json").exists() and report(work / f"k{n}.json") == reference
            differing += not same
            print(f"kill {n + 1:2}: after {delay:5.2f}s ({outcome}); resumed report "
                  f"{'identical' if same else 'DIFFERS'}", flush=True)  # fmt: skip
    print(f"{options.kills - differing} of {options.kills} resumed reports identical")
    raise SystemExit(1 if differing else 0)


if __name__ == "__main__":
    main()
