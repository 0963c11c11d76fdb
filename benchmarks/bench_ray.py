"""The Ray executor against a local run: its overhead, and its scaling with workers.

Runs the same generated dataset (a CPU-bound Python system under test, scored with exact-match
and rouge-l) locally and on a local Ray with 1, 2, ... workers, and prints each wall time with its
ratio to the local run. Ray start-up is paid once per worker count, before timing.

    python benchmarks/bench_ray.py --samples 20000 --workers 1 2
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_ray_sut import busy_answer

from assay.data.dataset import dataset_from_data
from assay.engine.evaluation import RunOptions, run_samples
from assay.engine.ray_executor import RayOptions, start
from assay.engine.sut import PythonTarget
from assay.metrics.registry import resolve_all


def dataset(count: int) -> Any:
    samples = [
        {"id": f"s{n}", "input": {"n": n}, "expected_output": f"answer {n} " * 8}
        for n in range(count)
    ]
    return dataset_from_data(
        {"schema_version": "assay.dataset.v1", "name": "b", "samples": samples}
    )


def timed(data: Any, ray_options: RayOptions | None) -> float:
    started = time.perf_counter()
    run_samples(
        data,
        sut=PythonTarget(busy_answer),
        metrics=resolve_all(["exact-match", "rouge-l"]),
        options=RunOptions(sut_concurrency=8, ray=ray_options),
    )
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--samples", type=int, default=20_000)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args()
    import ray

    data = dataset(args.samples)
    local = timed(data, None)
    print(f"local: {local:.2f} s for {args.samples} samples")
    for workers in args.workers:
        start(RayOptions(num_cpus=workers))
        options = RayOptions(batch_size=max(100, args.samples // (8 * workers)))
        timed(dataset(200), options)  # warm the workers
        wall = timed(data, options)
        print(f"ray, {workers} worker(s): {wall:.2f} s  ({wall / local:.2f}x the local run)")
        ray.shutdown()


if __name__ == "__main__":
    main()
