"""Benchmark: 200 llm-as-judge samples against the loopback OpenAI server answering in 50 ms.

Run:  python benchmarks/bench_judge.py [--samples 200] [--latency-ms 50] [--concurrency 1 4 8 16 32]

For each provider concurrency N it prints the wall time of a cold run (every judge call goes to
the server), the ideal time samples x latency / N, their ratio, and then the wall time and the
number of server calls of a second run over the same samples (served by the SQLite provider
cache: 0 calls). Two paths are timed: the metric alone (``score`` for every sample under
``asyncio.gather``) and the full ``assay run`` command on a dataset + saved-outputs file.
The server runs in its own process (so it does not compete with the client for the GIL).
Everything runs on 127.0.0.1; nothing leaves the machine.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from assay.data.dataset import Sample
from assay.data.outputs import Output
from assay.metrics.judge import LLMAsJudge
from assay.providers import registry, settings
from openai_server import RemoteServer

CLIENT_CPU: list[float] = []


def samples(n: int) -> list[Sample]:
    return [
        Sample(
            id=f"q{i}",
            input={"question": f"What is fact number {i}?"},
            expected_output=f"Fact {i} is true.",
        )
        for i in range(n)
    ]


async def score_all(items: list[Sample], chosen: settings.ProviderSettings) -> float:
    metric = LLMAsJudge(settings=chosen)
    started = time.perf_counter()
    cpu = time.process_time()
    results = await asyncio.gather(
        *(metric.score(s, Output(f"I believe fact {s.id} holds.")) for s in items)
    )
    elapsed = time.perf_counter() - started
    CLIENT_CPU.append(time.process_time() - cpu)
    assert all(r.value == 1.0 for r in results)
    await registry.aclose()
    return elapsed


def metric_path(
    server: RemoteServer, n: int, concurrency: int, cache_dir: Path
) -> tuple[float, float, int]:
    chosen = settings.ProviderSettings(
        base_url=server.url,
        api_key="sk-bench",
        judge_model="bench-judge",
        max_concurrency=concurrency,
        cache_dir=cache_dir,
    )
    items = samples(n)
    server.reset()
    cold = asyncio.run(score_all(items, chosen))
    cold_calls = server.calls()
    registry.reset()
    server.reset()
    warm = asyncio.run(score_all(items, chosen))
    assert cold_calls == n, cold_calls
    return cold, warm, server.calls()


def cli_path(
    server: RemoteServer, n: int, concurrency: int, workdir: Path
) -> tuple[float, float, int]:
    from assay.cli import main

    dataset = {
        "schema_version": "assay.dataset.v1",
        "name": "bench-judge",
        "metrics": ["llm-as-judge"],
        "samples": [s.model_dump() for s in samples(n)],
    }
    (workdir / "d.json").write_text(json.dumps(dataset), encoding="utf-8")
    outputs = {s.id: f"I believe fact {s.id} holds." for s in samples(n)}
    (workdir / "o.json").write_text(json.dumps({"outputs": outputs}), encoding="utf-8")
    args = [
        "run",
        str(workdir / "d.json"),
        "--outputs",
        str(workdir / "o.json"),
        "--base-url",
        server.url,
        "--judge-model",
        "bench-judge",
        "--provider-concurrency",
        str(concurrency),
        "--cache-dir",
        str(workdir / "cache"),
        "--no-store",
        "--format",
        "json",
        "--quiet",
        "--out",
        str(workdir / "report.json"),
    ]

    def once() -> float:
        registry.reset()
        started = time.perf_counter()
        with contextlib.suppress(SystemExit):
            main(args)
        return time.perf_counter() - started

    server.reset()
    cold = once()
    assert server.calls() == n, server.calls()
    server.reset()
    warm = once()
    return cold, warm, server.calls()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 8, 16, 32])
    args = parser.parse_args()
    n, latency = args.samples, args.latency_ms / 1000.0
    print(
        f"{n} judge samples, server latency {args.latency_ms:g} ms, loopback HTTP, server in its "
        "own process"
    )
    print(
        "ideal = samples x latency / N; floor = the same cold run against a 0 ms server "
        "(test-server capacity)"
    )
    header = (
        f"{'path':<7} {'N':>3} {'ideal s':>8} {'floor s':>8} {'cold s':>8} {'cold/ideal':>10} "
        f"{'client CPU s':>12} {'rerun s':>8} {'rerun calls':>11}"
    )
    print(header)
    server, instant = RemoteServer(args.latency_ms), RemoteServer(0.0)
    with tempfile.TemporaryDirectory() as tmp:
        for concurrency in args.concurrency:
            ideal = n * latency / concurrency
            floor = metric_path(instant, n, concurrency, Path(tmp) / f"f{concurrency}")[0]
            CLIENT_CPU.clear()
            metric_row = metric_path(server, n, concurrency, Path(tmp) / f"m{concurrency}")
            cpu = CLIENT_CPU[0]
            rows = [
                ("metric", metric_row, f"{cpu:>12.2f}"),
                (
                    "cli",
                    cli_path(server, n, concurrency, _mkdir(Path(tmp) / f"c{concurrency}")),
                    f"{'-':>12}",
                ),
            ]
            for label, (cold, warm, calls), cpu_text in rows:
                ratio = f"{cold / ideal:>10.2f}" if ideal > 0 else f"{'n/a':>10}"
                print(
                    f"{label:<7} {concurrency:>3} {ideal:>8.2f} {floor:>8.2f} {cold:>8.2f} {ratio} "
                    f"{cpu_text} "
                    f"{warm:>8.3f} {calls:>11}"
                )
    server.stop()
    instant.stop()
    registry.reset()


def _mkdir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


if __name__ == "__main__":
    main()
