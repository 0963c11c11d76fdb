"""Benchmark: ``assay generate``'s own cost, beside references in the same process.

Run:  python benchmarks/bench_generate.py [--questions 2000] [--samples 300] [--latency-ms 50]

1. Near-duplicate detection over ``--questions`` questions (a tenth of them reworded copies):
   assay's :class:`~assay.generate.quality.Duplicates` (rapidfuzz ``process.extractOne``, a C
   loop) against a Python loop calling ``fuzz.token_sort_ratio`` for every kept question. Both
   must keep the same questions before anything is timed; best of interleaved rounds.
2. ``assay generate -n --samples`` over examples/generate/docs against the loopback server
   (its own process, every answer ``--latency-ms`` late): a cold run's wall time against the
   bound ``ceil(calls / concurrency) x latency``, then a rerun (every answer from the provider
   cache: 0 calls) against the cold run.
Everything runs on 127.0.0.1; nothing leaves the machine.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from rapidfuzz import fuzz, utils
from timing import race

from assay.generate.commands import GenerateRequest, run_generate
from assay.generate.quality import Duplicates
from openai_server import RemoteServer

ROOT = Path(__file__).resolve().parents[1]

WORDS = [
    "fare",
    "ticket",
    "train",
    "bike",
    "dog",
    "luggage",
    "refund",
    "delay",
    "pass",
    "zone",
    "night",
    "airport",
    "station",
    "app",
    "student",
    "senior",
    "child",
    "group",
    "locker",
    "wifi",
    "socket",
    "quiet",
    "carriage",
    "penalty",
    "platform",
]


def questions(n: int, seed: int = 13) -> list[str]:
    rng = random.Random(seed)
    made: list[str] = []
    for _ in range(n):
        if made and rng.random() < 0.1:
            words = rng.choice(made).split()
            rng.shuffle(words)  # a reworded copy: token_sort_ratio sees through the order
            made.append(" ".join(words))
        else:
            made.append("What is the " + " ".join(rng.sample(WORDS, 5)) + " rule?")
    return made


def kept_by_assay(items: list[str], threshold: float) -> list[int]:
    found = Duplicates(threshold)
    kept = []
    for index, question in enumerate(items):
        if found.match(question) is None:
            found.add(str(index), question)
            kept.append(index)
    return kept


def kept_by_loop(items: list[str], threshold: float) -> list[int]:
    kept: list[int] = []
    texts: list[str] = []
    for index, question in enumerate(items):
        text = utils.default_process(question)
        if all(fuzz.token_sort_ratio(text, other) < threshold for other in texts):
            texts.append(text)
            kept.append(index)
    return kept


def bench_duplicates(n: int) -> None:
    items = questions(n)
    assert kept_by_assay(items, 90.0) == kept_by_loop(items, 90.0)
    kept = len(kept_by_assay(items, 90.0))
    best = race(
        3, {"assay": lambda: kept_by_assay(items, 90.0), "loop": lambda: kept_by_loop(items, 90.0)}
    )
    print(f"near-duplicates, {n} questions ({n - kept} dropped, same as the loop):")
    print(
        f"  assay Duplicates {best['assay']:.3f} s, Python loop {best['loop']:.3f} s, "
        f"loop / assay {best['loop'] / best['assay']:.1f}x"
    )


def one_run(url: str, count: int, home: Path, out: str) -> tuple[float, int]:
    request = GenerateRequest(
        source=ROOT / "examples" / "generate" / "docs", count=count, out=home / out
    )
    flags = {"base_url": url, "cache_dir": home / "cache"}
    started = time.perf_counter()
    outcome = run_generate(request, flags, echo=lambda line: None)
    return time.perf_counter() - started, outcome.summary.made


def bench_generate(count: int, latency_ms: float) -> None:
    import os

    from assay.providers.limiter import MAX_CONCURRENCY

    os.environ.setdefault("OPENAI_API_KEY", "sk-bench")
    server = RemoteServer(latency_ms)
    try:
        with tempfile.TemporaryDirectory() as folder:
            home = Path(folder)
            cold, made = one_run(server.url, count, home, "a.yml")
            cold_calls = server.calls()
            warm, _ = one_run(server.url, count, home, "b.yml")
            assert (
                server.calls() == cold_calls
                and (home / "a.yml").read_bytes() == (home / "b.yml").read_bytes()
            )
    finally:
        server.stop()
    bound = math.ceil(made / MAX_CONCURRENCY) * latency_ms / 1000
    print(
        f"assay generate -n {count}, {latency_ms:g} ms per answer, concurrency {MAX_CONCURRENCY}:"
    )
    ratio = bound / cold
    print(
        f"  cold {cold:.2f} s, {cold_calls} calls (bound {bound:.2f} s, bound / cold {ratio:.2f})"
    )
    print(f"  rerun {warm:.2f} s, 0 calls, identical file (rerun / cold {warm / cold:.2f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=2000)
    parser.add_argument("--samples", type=int, default=300)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    args = parser.parse_args()
    bench_duplicates(args.questions)
    bench_generate(args.samples, args.latency_ms)


if __name__ == "__main__":
    main()
