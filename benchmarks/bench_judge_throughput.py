"""Judge throughput: 1,000 llm-as-judge samples through ``assay run``, 50 ms loopback server.

The OpenAI-protocol test server (``serve`` in tests/openai_server.py: a single-threaded asyncio
server, cheap per request, so its CPU takes little from the client on a small machine) runs in
its own process and answers every chat completion a fixed latency after it arrived. With
provider concurrency N and latency L, no run can score faster than N / L samples per second;
this prints the throughput reached as a fraction of that bound (target: at least 0.80), for
the run itself (the report's ``run.duration_seconds``: plan, judge calls, store, aggregation)
and for the whole command (adding interpreter start-up, loading and rendering).

Beside it, the least this machine allows (``bare_client.py``): the span a bare asyncio client
takes for the same calls against the same server, and the start-up of a fresh interpreter
that imports only the CLI stack (typer, pydantic, asyncio, ssl). ``ceiling`` is the highest
fraction of the bound a CLI on that stack could show here: ideal / (stack start-up + bare span).

    python benchmarks/bench_judge_throughput.py \\
        [--samples 1000] [--latency-ms 50] [--concurrency 8 16 32]

Everything runs on 127.0.0.1 with a fake key; nothing leaves the machine.
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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from bare_client import bare_span, stack_start_s  # noqa: E402
from timing import compile_package  # noqa: E402

from openai_server import RemoteServer  # noqa: E402


def write_inputs(directory: Path, count: int) -> tuple[Path, Path]:
    dataset = directory / "dataset.json"
    outputs = directory / "outputs.json"
    samples = [
        {
            "id": f"q{i:04d}",
            "input": {"question": f"What is fact number {i}?"},
            "expected_output": f"Fact {i} is true.",
        }
        for i in range(count)
    ]
    dataset.write_text(
        json.dumps(
            {
                "schema_version": "assay.dataset.v1",
                "name": "bench-judge-throughput",
                "metrics": ["llm-as-judge"],
                "samples": samples,
            }
        ),
        encoding="utf-8",
    )
    outputs.write_text(
        json.dumps({"outputs": {s["id"]: f"I believe fact {s['id']} holds." for s in samples}}),
        encoding="utf-8",
    )
    return dataset, outputs


def child_env() -> dict[str, str]:
    """The environment of every child: this source tree, a fake key, no assay settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ASSAY_", "OPENAI_"))}
    env["PYTHONPATH"] = str(ROOT / "src") + os.pathsep + env.get("PYTHONPATH", "")
    env["OPENAI_API_KEY"] = "sk-bench-not-a-real-key"
    return env


def run_once(
    server: RemoteServer, dataset: Path, outputs: Path, concurrency: int, workdir: Path
) -> tuple[float, float, int, float, float, float]:
    """(command wall seconds, run seconds from the report, server calls, command CPU seconds,
    seconds from the command's start to the first request's arrival at the server, seconds
    from the server's last reply to the command's exit)."""
    env = child_env()
    report = workdir / f"report-{concurrency}.json"
    command = [
        sys.executable,
        "-m",
        "assay",
        "run",
        str(dataset),
        "--outputs",
        str(outputs),
        "--base-url",
        server.url,
        "--judge-model",
        "bench-judge",
        "--provider-concurrency",
        str(concurrency),
        "--no-cache",
        "--store",
        str(workdir / "runs.db"),
        "-f",
        "json",
        "-o",
        str(report),
        "-q",
    ]
    server.reset()
    with tempfile.TemporaryFile("w+") as errors:
        started = time.perf_counter()
        started_at = time.monotonic()  # the server stamps with the same clock
        child = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=errors)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - started
        ended_at = time.monotonic()
        errors.seek(0)
        stderr = errors.read()
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):
        sys.exit(f"assay run failed ({code}): {stderr[-2000:]}")
    data = json.loads(report.read_text(encoding="utf-8"))
    scored = next(m for m in data["metrics"] if m["name"] == "llm-as-judge")["scored"]
    if scored != data["summary"]["total_executions"]:
        sys.exit(
            f"only {scored} of {data['summary']['total_executions']} samples scored: "
            f"{data['failures'][:3]}"
        )
    cpu = usage.ru_utime + usage.ru_stime
    times = server.times()
    to_first = times["first_request"] - started_at
    after_last = ended_at - times["last_reply"]
    return wall, float(data["run"]["duration_seconds"]), server.calls(), cpu, to_first, after_last


def print_least(
    server: RemoteServer, samples: int, latency: float, commands: dict[int, tuple[float, ...]]
) -> None:
    """The least this machine allows beside what ``assay run`` took, for each concurrency:
    start-up of the bare CLI stack, a bare client's span, the ceiling they leave of the bound."""
    stack = stack_start_s(child_env())
    print(
        f"the least this machine allows (bare_client.py): a fresh interpreter importing the CLI "
        f"stack (typer, pydantic, asyncio, ssl) takes {stack:.2f} s; span = first request's "
        "arrival to last reply"
    )
    print(
        f"{'N':>3} {'ideal s':>8} {'bare span s':>11} {'ceiling':>8} | {'assay: 1st req s':>16} "
        f"{'span s':>7} {'after s':>7} {'cmd frac':>8}"
    )
    for concurrency, (wall, to_first, after_last) in commands.items():
        ideal = samples * latency / concurrency
        bare = bare_span(server, samples, concurrency)
        span = wall - to_first - after_last
        print(
            f"{concurrency:>3} {ideal:>8.2f} {bare:>11.2f} {ideal / (stack + bare):>8.2f} | "
            f"{to_first:>16.2f} {span:>7.2f} {after_last:>7.2f} {ideal / wall:>8.2f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[8, 16, 32])
    args = parser.parse_args()
    latency = args.latency_ms / 1000.0
    print(
        f"{args.samples} llm-as-judge samples via `assay run`, server latency {args.latency_ms:g} "
        "ms (own process), "
        f"cpus {len(os.sched_getaffinity(0))}, load average {os.getloadavg()[0]:.1f}"
    )
    print(
        "bound = N / latency; floor = the same run against a 0 ms server (what client + server "
        "manage on this machine)"
    )
    waves = ", ".join(f"{-(-args.samples // n) * latency:.2f} s at N={n}" for n in args.concurrency)
    print(
        f"no run's calls end before ceil(samples / N) round trips of the latency ({waves}): "
        "the last, partial wave still takes a whole round trip"
    )
    print("client CPU = the assay process's CPU seconds for the whole command (load-independent)")
    print(
        "diagnostics: 1st req s = command start to the first request's arrival at the server; "
        "after s = the server's last reply to the command's exit"
    )
    print(f"python bytecode cache written: {'no' if sys.flags.dont_write_bytecode else 'yes'}")
    print(compile_package())
    print(
        f"{'N':>3} {'bound/s':>8} {'ideal s':>8} {'floor s':>8} {'run s':>7} {'run frac':>8} "
        f"{'cmd s':>7} {'cmd frac':>8} {'calls':>6} {'client CPU s':>12} {'1st req s':>9} "
        f"{'after s':>7}"
    )
    server, instant = RemoteServer(args.latency_ms), RemoteServer(0.0)
    commands: dict[int, tuple[float, float, float]] = {}
    try:
        with tempfile.TemporaryDirectory() as temp:
            directory = Path(temp)
            dataset, outputs = write_inputs(directory, args.samples)
            for concurrency in args.concurrency:
                bound = concurrency / latency
                ideal = args.samples / bound
                floor = run_once(instant, dataset, outputs, concurrency, directory)[1]
                wall, run_s, calls, cpu, to_first, after_last = run_once(
                    server, dataset, outputs, concurrency, directory
                )
                commands[concurrency] = (wall, to_first, after_last)
                print(
                    f"{concurrency:>3} {bound:>8.0f} {ideal:>8.2f} {floor:>8.2f} {run_s:>7.2f} "
                    f"{ideal / run_s:>8.2f} "
                    f"{wall:>7.2f} {ideal / wall:>8.2f} {calls:>6} {cpu:>12.2f} "
                    f"{to_first:>9.2f} {after_last:>7.2f}"
                )
        print_least(server, args.samples, latency, commands)
        print(f"load average after: {os.getloadavg()[0]:.1f} (other processes share the CPUs)")
    finally:
        server.stop()
        instant.stop()


if __name__ == "__main__":
    main()
