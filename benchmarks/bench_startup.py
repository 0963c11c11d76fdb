"""Start-up of ``assay --help``, ``assay validate`` and a small lexical run, each in a new process.

Each command is run ``--repeat`` times in fresh interpreters, interleaved with a bare
``python -c pass`` (the reference: what any Python command costs here), and the best wall and
CPU time of each is printed, with the difference over the bare interpreter. It also lists which
heavy modules each command imported (numpy, scipy, pydantic, openai, httpx, rich, sklearn, ...),
so a regression shows where it came from. Target: ``assay --help`` <= 0.2 s.

``--importtime`` also runs the lexical run under ``python -X importtime`` (three times) and
prints the median import time of each top-level package it loads (assay's own by subpackage),
largest first: what the fixed cost of a run is made of.

    python benchmarks/bench_startup.py [--repeat 7] [--importtime]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from timing import compile_package

ROOT = Path(__file__).resolve().parents[1]
QUICKSTART = ROOT / "examples" / "quickstart"
HEAVY = ("numpy", "scipy", "sklearn", "pydantic", "openai", "httpx", "rich", "yaml", "regex")
PROBE = (
    "import atexit, sys, os\n"
    "def _report():\n"
    f"    heavy = {HEAVY!r}\n"
    "    loaded = [m for m in heavy if m in sys.modules]\n"
    "    os.write(int(os.environ['PROBE_FD']), ' '.join(loaded).encode())\n"
    "atexit.register(_report)\n"
    "sys.argv = ['assay'] + sys.argv[1:]\n"
    "from assay.cli import main\n"
    "main()\n"
)


def timed(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one child process."""
    started = time.perf_counter()
    child = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        raise SystemExit(f"{' '.join(command)} failed")
    return wall, usage.ru_utime + usage.ru_stime


def imported(arguments: list[str], env: dict[str, str]) -> str:
    """The heavy modules a command imports (reported through a pipe at exit)."""
    read, write = os.pipe()
    subprocess.run(
        [sys.executable, "-c", PROBE, *arguments],
        env={**env, "PROBE_FD": str(write)},
        pass_fds=(write,),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    os.close(write)
    with os.fdopen(read) as pipe:
        return pipe.read() or "-"


_IMPORT_LINE = re.compile(r"import time:\s+(\d+) \|\s+\d+ \|\s*(\S+)")


def import_shares(
    arguments: list[str], env: dict[str, str], runs: int = 3
) -> list[tuple[str, float]]:
    """Median self import time (s) per package over ``runs`` runs under ``-X importtime``:
    third-party packages by top-level name, assay's by subpackage."""
    totals: dict[str, list[float]] = defaultdict(list)
    for _ in range(runs):
        done = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "assay", *arguments],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        seen: dict[str, float] = defaultdict(float)
        for match in _IMPORT_LINE.finditer(done.stderr):
            parts = match.group(2).split(".")
            seen[".".join(parts[:2]) if parts[0] == "assay" else parts[0]] += int(match.group(1))
        for name, micros in seen.items():
            totals[name].append(micros / 1e6)
    shares = [(name, statistics.median(values)) for name, values in totals.items()]
    return sorted(shares, key=lambda item: -item[1])


def print_import_shares(arguments: list[str], env: dict[str, str]) -> None:
    shares = import_shares(arguments, env)
    total = sum(seconds for _, seconds in shares)
    print(f"import time of the lexical run, median of 3 (-X importtime): {total:.3f} s in all")
    for name, seconds in shares[:20]:
        print(f"  {name:32s} {seconds:7.3f} s {100 * seconds / total:5.1f} %")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--importtime", action="store_true", help="where the run's imports go")
    args = parser.parse_args()
    print(compile_package())
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")}
    env["PYTHONPATH"] = str(ROOT / "src") + os.pathsep + env.get("PYTHONPATH", "")
    store = Path(tempfile.mkdtemp()) / "runs.db"
    dataset, outputs = str(QUICKSTART / "dataset.yml"), str(QUICKSTART / "outputs.json")
    lexical = ["-m", "exact-match", "-m", "contains", "-m", "rouge-l"]
    commands = {
        "python -c pass": None,
        "assay --help": ["--help"],
        "assay validate": ["validate", dataset],
        "assay run (lexical)": [
            "run",
            dataset,
            "--outputs",
            outputs,
            *lexical,
            "-q",
            "--store",
            str(store),
            "-f",
            "json",
            "-o",
            os.devnull,
        ],
    }
    best = {name: (float("inf"), float("inf")) for name in commands}
    for _ in range(args.repeat):
        for name, arguments in commands.items():
            argv = [sys.executable, "-c", "pass"]
            if arguments is not None:
                argv = [sys.executable, "-m", "assay", *arguments]
            wall, cpu = timed(argv, env)
            best[name] = (min(best[name][0], wall), min(best[name][1], cpu))
    _base_wall, base_cpu = best["python -c pass"]
    print(
        f"start-up, best of {args.repeat} fresh processes, interleaved "
        f"(load {os.getloadavg()[0]:.1f})"
    )
    print(
        f"  {'command':22s} {'wall s':>7s} {'CPU s':>7s} {'over python':>12s}  "
        "heavy modules imported"
    )
    for name, arguments in commands.items():
        wall, cpu = best[name]
        heavy = "" if arguments is None else imported(arguments, env)
        print(f"  {name:22s} {wall:7.3f} {cpu:7.3f} {cpu - base_cpu:10.3f} s  {heavy}")
    print("  target: assay --help <= 0.2 s")
    if args.importtime:
        print_import_shares(commands["assay run (lexical)"] or [], env)


if __name__ == "__main__":
    main()
