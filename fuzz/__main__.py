"""``python -m fuzz --cases 100000 --surface all``: crash, hang and untyped-exception counts.

Each surface runs in a child process (``fuzz.worker``); a child that dies is a crash on the
case it was running, one that makes no progress for ``--hang-s`` seconds is a hang; either way
the surface goes on from the next case. Any case is replayed with ``--replay SURFACE:INDEX``.
"""

from __future__ import annotations

import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from fuzz.surfaces import SURFACES

ROOT = Path(__file__).resolve().parents[1]


def _read_index(progress: Path) -> int:
    data = progress.read_bytes()
    return int(struct.unpack("<q", data[:8])[0]) if len(data) >= 8 else -1


def _add_summary(totals: dict[str, Any], out: bytes) -> None:
    """Add a worker's last cumulative summary line (if any) to ``totals``."""
    lines = [line for line in out.splitlines() if line.startswith(b"{")]
    if not lines:
        return
    summary = json.loads(lines[-1])
    totals["ok"] += summary["counts"].get("ok", 0)
    totals["typed"] += summary["counts"].get("typed", 0)
    untyped = totals["untyped"]
    for name, count in summary["untyped"].items():
        untyped[name] = untyped.get(name, 0) + count
    examples = untyped.setdefault("examples", {})
    for name, index in summary["examples"].items():
        examples.setdefault(name, index)


def fuzz_surface(
    surface: str, cases: int, seed: int, hang_s: float, first: int = 0
) -> dict[str, Any]:
    """Run cases ``first``..``cases`` of one surface; restart the worker past a crash or hang."""
    totals: dict[str, Any] = {"ok": 0, "typed": 0, "untyped": {}, "crashes": [], "hangs": []}
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"}
    start, began = first, time.monotonic()
    with tempfile.NamedTemporaryFile(delete=False) as handle:
        progress = Path(handle.name)
        handle.write(struct.pack("<q", -1))
    while start < cases:
        args = [sys.executable, "-m", "fuzz.worker", surface, str(seed), str(start), str(cases)]
        child = subprocess.Popen([*args, str(progress)], env=env, stdout=subprocess.PIPE)
        last, seen = -1, time.monotonic()
        while child.poll() is None:
            time.sleep(0.2)
            index = _read_index(progress)
            if index != last:
                last, seen = index, time.monotonic()
            elif time.monotonic() - seen > hang_s:
                child.kill()
                child.wait()
                break
        out = child.stdout.read() if child.stdout else b""
        _add_summary(totals, out)
        if child.returncode == 0:
            break
        index = _read_index(progress)
        kind = "hangs" if time.monotonic() - seen > hang_s else "crashes"
        totals[kind].append({"case": index, "returncode": child.returncode})
        start = index + 1
    progress.unlink(missing_ok=True)
    totals["seconds"] = round(time.monotonic() - began, 1)
    return totals


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m fuzz", description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--surface", default="all", choices=["all", *SURFACES])
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument("--first", type=int, default=0, help="first case index (to split a run)")
    parser.add_argument("--hang-s", type=float, default=30.0)
    parser.add_argument("--replay", help="SURFACE:INDEX runs one case here, with its traceback")
    options = parser.parse_args()
    if options.replay:
        import random

        surface, index = options.replay.split(":")
        with tempfile.TemporaryDirectory() as folder:
            rng = random.Random(f"{options.seed}:{surface}:{index}")
            SURFACES[surface](rng, Path(folder))
        return
    failed = False
    for surface in SURFACES if options.surface == "all" else [options.surface]:
        totals = fuzz_surface(surface, options.cases, options.seed, options.hang_s, options.first)
        untyped = {k: v for k, v in totals["untyped"].items() if k != "examples"}
        failed = failed or bool(totals["crashes"] or totals["hangs"] or untyped)
        row = {"surface": surface, "first": options.first, "cases": options.cases, **totals}
        print(json.dumps(row), flush=True)
    raise SystemExit(1 if failed else 0)


if __name__ == "__main__":
    main()
