"""The regex metric with a different pattern per sample: assay vs compiling once per pattern.

10,000 samples whose expected_output is a delimited pattern drawn from ``--distinct`` patterns
(order ids, policy phrases, alternations, with and without the ``i`` flag). The reference,
timed in the same process on the same inputs, is the floor the issue asks for: Python's ``re``
with each distinct pattern compiled once (a dict of compiled patterns) and one ``search`` per
sample. assay is timed per sample (``score``) and over the whole batch (``score_batch``, the
runner's path). All sides must agree on every match before anything is timed. Run:

    python benchmarks/bench_regex.py [--samples 10000] [--distinct 500] [--repeat 5] [--cpu]
"""

from __future__ import annotations

import argparse
import random
import re
import time

from timing import race

from assay.data.dataset import Sample
from assay.data.outputs import Output
from assay.errors import MetricError
from assay.metrics.lexical import Regex

WORDS = ["refund", "order", "parcel", "invoice", "window", "policy", "voucher", "courier"]


def pattern(rng: random.Random) -> tuple[str, str, int]:
    """A delimited pattern, its body and its ``re`` flags."""
    first, second = rng.sample(WORDS, 2)
    shapes = [
        rf"{first.upper()}-\d{{{rng.randint(3, 8)}}}",
        rf"{first}\s+(?:{second}|{rng.choice(WORDS)})\s+\d+\s+days",
        rf"^(?:the\s+)?{first}\b.*\b{second}$",
        rf"[A-Z]{{{rng.randint(2, 4)}}}-{rng.randint(10, 999)}",
    ]
    body = rng.choice(shapes)
    ignore = rng.random() < 0.5
    return f"/{body}/" + ("i" if ignore else ""), body, re.IGNORECASE if ignore else 0


def answer(rng: random.Random) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(3, 12))]
    extras = [
        f"{rng.choice(WORDS).upper()}-{rng.randint(0, 10**6):06d}",
        f"{rng.choice(WORDS)} {rng.choice(WORDS)} {rng.randint(1, 90)} days",
        f"{rng.choice(['AB', 'XYZ', 'QQQQ'])}-{rng.randint(10, 999)}",
    ]
    for extra in extras:
        words.insert(rng.randint(0, len(words)), extra)
    return " ".join(words)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=10_000)
    parser.add_argument("--distinct", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument(
        "--cpu",
        action="store_true",
        help="time CPU seconds of this process, not wall time (steadier on a busy machine)",
    )
    args = parser.parse_args()
    rng = random.Random(args.seed)
    patterns = [pattern(rng) for _ in range(args.distinct)]
    chosen = [rng.choice(patterns) for _ in range(args.samples)]
    samples = [Sample(id=str(n), input={}, expected_output=p[0]) for n, p in enumerate(chosen)]
    outputs = [Output(answer(rng)) for _ in range(args.samples)]
    metric = Regex()

    def run_assay() -> list[float]:
        return [metric.score(s, o).value for s, o in zip(samples, outputs)]

    def run_floor() -> list[float]:
        compiled: dict[tuple[str, int], re.Pattern[str]] = {}
        values = []
        for (_, body, flags), output in zip(chosen, outputs):
            found = compiled.get((body, flags))
            if found is None:
                found = compiled[(body, flags)] = re.compile(body, flags)
            values.append(1.0 if found.search(output.text) else 0.0)
        return values

    def run_batch() -> list[float]:
        return metric.score_batch(samples, outputs).values.tolist()

    ours, floor = run_assay(), run_floor()
    if ours != floor or run_batch() != ours:
        raise SystemExit("assay and the reference disagree on some matches; not timing")
    t = race(
        args.repeat,
        {"assay": run_assay, "batch": run_batch, "floor": run_floor},
        collect=False,
        clock=time.process_time if args.cpu else time.perf_counter,
    )
    n = args.samples
    print(
        f"regex, {n:,} samples over {args.distinct} distinct patterns, "
        f"{sum(ours):.0f} matches, best of {args.repeat}, interleaved, "
        f"{'CPU' if args.cpu else 'wall'} time"
    )
    print(
        f"  assay regex metric.score     {t['assay']:7.3f} s  {t['assay'] / n * 1e6:8.1f} us/sample"
    )
    print(
        f"  assay regex score_batch      {t['batch']:7.3f} s  {t['batch'] / n * 1e6:8.1f} us/sample"
        "  (the runner's path)"
    )
    print(
        f"  re, compiled once per pattern {t['floor']:7.3f} s  {t['floor'] / n * 1e6:8.1f} "
        "us/sample"
    )
    print(
        f"  ratio (assay / reference)     {t['assay'] / t['floor']:7.2f}   (score_batch: "
        f"{t['batch'] / t['floor']:.2f})"
    )
    hostile = Sample(id="h", input={}, expected_output="/(a|aa)+$/")
    started = time.perf_counter()
    try:
        metric.score(hostile, Output("a" * 40 + "b"))
        outcome = "scored"
    except MetricError as exc:
        outcome = f"errored ({exc})"
    print(f"  hostile /(a|aa)+$/ on 'a'*40+'b': {outcome} in {time.perf_counter() - started:.3f} s")


if __name__ == "__main__":
    main()
