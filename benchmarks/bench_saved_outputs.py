"""A 100,000-sample saved-outputs run: wall time, peak RSS and harness overhead per score.

Generates a dataset and a saved-outputs file in a temporary directory, runs

    assay run DATASET --outputs OUTPUTS -m exact-match -m contains -m rouge-l \
        -m citation-groundedness -f json -o report.json

in a subprocess, and compares its wall time with calling the same four metrics directly in a
loop over the same (sample, output) pairs in this process. The difference is what the harness
adds — loading and validating files, the run store, aggregation, the report — and is printed in
microseconds per (sample, metric). Targets: under 10 s and 500 MB on 2 cores.

    python benchmarks/bench_saved_outputs.py [--samples 100000] [--keep DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

METRICS = ("exact-match", "contains", "rouge-l", "citation-groundedness")
WORDS = [
    "refund",
    "order",
    "parcel",
    "warehouse",
    "invoice",
    "delivery",
    "courier",
    "address",
    "customer",
    "return",
    "policy",
    "window",
    "label",
    "tracking",
    "payment",
    "card",
    "voucher",
    "discount",
    "account",
    "password",
    "support",
    "ticket",
    "escalation",
]


def generate(directory: Path, count: int, seed: int = 7) -> tuple[Path, Path]:
    """A dataset and its saved outputs: short answers, some right, some paraphrased, some wrong."""
    rng = random.Random(seed)
    dataset = directory / "dataset.jsonl"
    outputs = directory / "outputs.jsonl"
    with dataset.open("w", encoding="utf-8") as ds, outputs.open("w", encoding="utf-8") as out:
        for index in range(count):
            sample_id = f"q{index:06d}"
            answer = " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 18)))
            marker = f"[{rng.randint(1, 5)}]"
            roll = rng.random()
            if roll < 0.5:
                said = answer
            elif roll < 0.8:
                said = answer.replace(rng.choice(WORDS), "something") + f" {marker}"
            else:
                said = " ".join(rng.choice(WORDS) for _ in range(8))
            tags = ["billing"] if index % 3 == 0 else ["shipping"] if index % 3 == 1 else []
            ds.write(
                json.dumps(
                    {
                        "id": sample_id,
                        "input": {"question": f"question {index}"},
                        "expected_output": answer,
                        "metadata": {"tags": tags, "citations": [marker]},
                    }
                )
                + "\n"
            )
            out.write(json.dumps({"id": sample_id, "output": said}) + "\n")
    return dataset, outputs


def direct_loop(dataset: Path, outputs: Path) -> dict[str, float]:
    """Wall and CPU seconds to load the two files, then to call the four metrics directly."""
    from assay.dataset import load_dataset
    from assay.errors import MetricError
    from assay.metrics.base import resolve
    from assay.outputs import load_outputs

    wall, cpu = time.perf_counter(), time.process_time()
    loaded = load_dataset(dataset)
    saved = load_outputs(outputs)
    timings = {"load_wall": time.perf_counter() - wall, "load_cpu": time.process_time() - cpu}
    metrics = [resolve(name) for name in METRICS]
    pairs = [(sample, saved[sample.id]) for sample in loaded.samples]
    wall, cpu = time.perf_counter(), time.process_time()
    for sample, output in pairs:
        for metric in metrics:
            with contextlib.suppress(MetricError):  # a captured failure costs the same in assay
                metric.score(sample, output)
    timings.update(metric_wall=time.perf_counter() - wall, metric_cpu=time.process_time() - cpu)
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=100_000)
    parser.add_argument("--keep", type=Path, help="write the files here instead of a temp dir")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as temp:
        directory = args.keep or Path(temp)
        directory.mkdir(parents=True, exist_ok=True)
        started = time.perf_counter()
        dataset, outputs = generate(directory, args.samples)
        print(
            f"generated {args.samples:,} samples + outputs in {time.perf_counter() - started:.1f}s "
            f"({dataset.stat().st_size / 1e6:.1f} MB + {outputs.stat().st_size / 1e6:.1f} MB)"
        )

        env = {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")}
        env["PYTHONPATH"] = (
            str(Path(__file__).resolve().parents[1] / "src")
            + os.pathsep
            + env.get("PYTHONPATH", "")
        )
        startup = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "assay", "--help"], env=env, capture_output=True, check=True
        )
        startup_s = time.perf_counter() - startup
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        startup_cpu_s = before.ru_utime + before.ru_stime

        command = [sys.executable, "-m", "assay", "run", str(dataset), "--outputs", str(outputs)]
        for name in METRICS:
            command += ["-m", name]
        report_path = directory / "report.json"
        command += [
            "-f",
            "json",
            "-o",
            str(report_path),
            "--store",
            str(directory / "runs.db"),
            "-q",
        ]
        started = time.perf_counter()
        done = subprocess.run(command, env=env, capture_output=True, text=True)
        wall_s = time.perf_counter() - started
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        peak_mb = usage.ru_maxrss / 1024
        cpu_s = usage.ru_utime + usage.ru_stime - startup_cpu_s
        if done.returncode not in (0, 1):
            sys.exit(f"assay run failed ({done.returncode}): {done.stderr[-2000:]}")
        report = json.loads(report_path.read_text(encoding="utf-8"))
        executions = report["summary"]["total_executions"]
        assert executions == args.samples, executions

        direct = direct_loop(dataset, outputs)
        pairs = args.samples * len(METRICS)
        per = 1e6 / pairs
        print(
            f"assay run: {wall_s:.2f}s wall, {cpu_s:.2f}s CPU (load average {os.getloadavg()[0]:.1f}), peak RSS {peak_mb:.0f} MB, "
            f"report {report_path.stat().st_size / 1e6:.1f} MB, exit {done.returncode}, "
            f"{report['summary']['total_failures']} failures captured"
        )
        print(
            f"direct loop: the four metrics alone {direct['metric_wall']:.2f}s wall / {direct['metric_cpu']:.2f}s CPU "
            f"({direct['metric_cpu'] * per:.1f} us CPU per score); reading + validating the two files "
            f"{direct['load_wall']:.2f}s wall / {direct['load_cpu']:.2f}s CPU; interpreter + imports {startup_s:.2f}s wall / {startup_cpu_s:.2f}s CPU"
        )
        for label, total, metric_s, load_s, start_s in (
            ("CPU ", cpu_s, direct["metric_cpu"], direct["load_cpu"], startup_cpu_s),
            ("wall", wall_s, direct["metric_wall"], direct["load_wall"], startup_s),
        ):
            overhead = total - metric_s
            engine = overhead - load_s - start_s
            print(
                f"harness overhead ({label}): {overhead:.2f}s = {overhead * per:.1f} us per (sample, metric); "
                f"without start-up and file loading (runner, store, aggregation, rendering): {engine:.2f}s = "
                f"{engine * per:.1f} us per (sample, metric)"
            )
        print(
            f"targets: wall < 10 s -> {'met' if wall_s < 10 else 'MISSED'}; peak RSS < 500 MB -> "
            f"{'met' if peak_mb < 500 else 'MISSED'}  (cpus available: {len(os.sched_getaffinity(0))})"
        )


if __name__ == "__main__":
    main()
