"""Saved-outputs runs (100,000 and 1,000,000 samples): wall, CPU, peak RSS, harness cost per score.

Generates a dataset and a saved-outputs file in a temporary directory, runs

    assay run DATASET --outputs OUTPUTS -m exact-match -m contains -m regex -m rouge-l \
        -f json -o report.json

in a subprocess, and compares its CPU time with calling the same four metrics' per-sample
``score()`` directly in a loop over the same (sample, output) pairs in this process (the
reference). The difference is what the harness adds (start-up, loading and validating files,
the runner, the run store, aggregation, the report) and is printed in microseconds per
(sample, metric). Every expected_output is a delimited literal pattern (``/words/``) drawn from
256 distinct answers, so all four metrics score every sample and regex sees repeated patterns.
Targets: <= 10 s wall and <= 300 MB at 100k; <= 400 MB at 1M; <= 2 us harness per score.

Each size runs ``--rounds`` rounds (default 3), each step in a fresh child: the run, the
reference, the plain-loop floor as a whole process (JSONL only: the stdlib's ``json``, a Sample
and an Output per line, the four metrics' ``score()``), ``assay --help``, and a 100-sample run
of the same kind. The harness figure is taken
per round and the median printed, so a drift of the machine's speed between the run and its
reference moves one round, not the figure. The small run splits the figure in two: what every
run costs whatever its size (imports beyond ``--help``'s, set-up, the report's frame), spread
over this size's scores, and the cost per score beyond it.

    python benchmarks/bench_saved_outputs.py [--samples 100000 1000000] [--rounds 3]
        [--keep DIR] [--json] [--peak-only]

``--peak-only`` runs ``assay run`` alone (wall, CPU, peak RSS): the memory row at 300k, 1M and
10M samples, whose files go to a temporary directory (about 2 GB at 10M; ``--keep DIR`` to
choose where).

``--json`` writes the same samples as a JSON dataset document and the outputs as a JSON
``outputs`` mapping, the shapes that are scanned once and read back by byte span.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from timing import compile_package, rounds_verdict

METRICS = ("exact-match", "contains", "regex", "rouge-l")
DISTINCT_ANSWERS = 256  # golden answers repeat, as order ids and policy phrases do
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
    answers = [
        "/" + " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 18))) + "/"
        for _ in range(DISTINCT_ANSWERS)
    ]
    dataset = directory / "dataset.jsonl"
    outputs = directory / "outputs.jsonl"
    with dataset.open("w", encoding="utf-8") as ds, outputs.open("w", encoding="utf-8") as out:
        for index in range(count):
            sample_id = f"q{index:06d}"
            answer = rng.choice(answers)
            roll = rng.random()
            if roll < 0.5:
                said = answer
            elif roll < 0.8:
                said = "I think " + answer.replace(rng.choice(WORDS), "something")
            else:
                said = " ".join(rng.choice(WORDS) for _ in range(8))
            tags = ["billing"] if index % 3 == 0 else ["shipping"] if index % 3 == 1 else []
            ds.write(
                json.dumps(
                    {
                        "id": sample_id,
                        "input": {"question": f"question {index}"},
                        "expected_output": answer,
                        "metadata": {"tags": tags},
                    }
                )
                + "\n"
            )
            out.write(json.dumps({"id": sample_id, "output": said}) + "\n")
    return dataset, outputs


def as_documents(dataset: Path, outputs: Path) -> tuple[Path, Path]:
    """The same files as JSON documents, written a line at a time: ``{"name", "samples": [...]}``
    and the ``outputs`` wrapper as a mapping of id to text (padosoft's shape)."""
    dataset_json, outputs_json = dataset.with_suffix(".json"), outputs.with_suffix(".json")
    with dataset.open(encoding="utf-8") as lines, dataset_json.open("w", encoding="utf-8") as doc:
        doc.write('{"name": "dataset", "samples": [\n')
        for number, line in enumerate(lines):
            doc.write((",\n" if number else "") + line.rstrip("\n"))
        doc.write("\n]}\n")
    with outputs.open(encoding="utf-8") as lines, outputs_json.open("w", encoding="utf-8") as doc:
        doc.write('{"outputs": {\n')
        for number, line in enumerate(lines):
            entry = json.loads(line)
            pair = f"{json.dumps(entry['id'])}: {json.dumps(entry['output'])}"
            doc.write((",\n" if number else "") + pair)
        doc.write("\n}}\n")
    return dataset_json, outputs_json


def direct_loop(dataset: Path, outputs: Path) -> dict[str, float]:
    """Wall and CPU seconds to read the two files into (sample, output) pairs, then to call the
    four metrics directly.

    Reading counts both steps: ``load_dataset`` and ``load_outputs`` check a large file and
    leave its entries on disk (since the files are streamed), so the samples and outputs the
    metrics take are parsed and built while the pairs are listed. Before session 13 only the
    first step was counted (``check_cpu``), and building the pairs was timed nowhere. The
    collector is paused meanwhile, as ``assay run`` pauses it, and what was read is frozen
    before the metrics run, as the run freezes what it keeps.
    """
    from assay.data.loading import load_dataset, load_outputs
    from assay.errors import MetricError
    from assay.metrics.registry import resolve

    metrics = [resolve(name) for name in METRICS]
    gc.disable()
    wall, cpu = time.perf_counter(), time.process_time()
    loaded = load_dataset(dataset)
    saved = load_outputs(outputs)
    timings = {"check_wall": time.perf_counter() - wall, "check_cpu": time.process_time() - cpu}
    pairs = [(sample, saved[sample.id]) for sample in loaded.samples]
    timings.update(load_wall=time.perf_counter() - wall, load_cpu=time.process_time() - cpu)
    gc.freeze()
    gc.enable()
    wall, cpu = time.perf_counter(), time.process_time()
    for sample, output in pairs:
        for metric in metrics:
            with contextlib.suppress(MetricError):  # a captured failure costs the same in assay
                metric.score(sample, output)
    timings.update(metric_wall=time.perf_counter() - wall, metric_cpu=time.process_time() - cpu)
    return timings


def plain_loop(dataset: Path, outputs: Path) -> None:
    """The plain-loop floor as a whole process: read both JSONL files with the stdlib's
    ``json``, build each Sample and Output, call the four metrics' ``score()``; nothing else
    (no checks beyond the Sample model's, no runner, store or report)."""
    from assay.data.dataset import Sample
    from assay.data.outputs import Output
    from assay.errors import MetricError
    from assay.metrics.registry import resolve

    metrics = [resolve(name) for name in METRICS]
    with outputs.open(encoding="utf-8") as lines:
        saved = {row["id"]: row["output"] for row in map(json.loads, lines)}
    with dataset.open(encoding="utf-8") as lines:
        for row in map(json.loads, lines):
            sample = Sample(**row)
            output = Output(saved[sample.id])
            for metric in metrics:
                with contextlib.suppress(MetricError):
                    metric.score(sample, output)


def measure(command: list[str], env: dict[str, str]) -> tuple[float, float, float, int, str]:
    """Run one child: (wall s, CPU s, peak RSS MB, exit code, stderr tail), from its own rusage.

    Linux counts the memory a child starts with (its copy of this process, before exec) in its
    peak RSS, so this process stays small: the reference loop runs in a child of its own
    (:func:`reference_in_child`). Before, a 1M run measured after the 100k reference loop
    "peaked" at this process's size (472 MB), not its own (about 250 MB).
    """
    with tempfile.TemporaryFile("w+") as errors:
        started = time.perf_counter()
        child = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=errors)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - started
        child.returncode = os.waitstatus_to_exitcode(status)
        errors.seek(0)
        tail = errors.read()[-2000:]
    cpu = usage.ru_utime + usage.ru_stime
    return wall, cpu, usage.ru_maxrss / 1024, child.returncode, tail


def child_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")}
    src = str(Path(__file__).resolve().parents[1] / "src")
    env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    return env


def report_summary(path: Path) -> dict[str, Any]:
    """The report's summary, parsed from its head only: loading a 1M-row report here would
    make this process (and so every child's measured peak) hundreds of MB larger."""
    with path.open(encoding="utf-8") as handle:
        head = handle.read(1 << 20)
    start = head.index('"summary": ')
    value, _ = json.JSONDecoder().raw_decode(head, start + len('"summary": '))
    return dict(value)


def reference_in_child(dataset: Path, outputs: Path, env: dict[str, str]) -> dict[str, float]:
    """:func:`direct_loop` in a fresh interpreter; its timings."""
    command = [sys.executable, __file__, "--reference", str(dataset), str(outputs)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


FIXED_SAMPLES = 100  # the small run that measures what every run costs whatever its size


def run_command(dataset: Path, outputs: Path, directory: Path) -> list[str]:
    """``assay run`` over the four metrics, a JSON report and a fresh store in ``directory``."""
    for stale in directory.glob("runs.db*"):
        stale.unlink()
    command = [sys.executable, "-m", "assay", "run", str(dataset), "--outputs", str(outputs)]
    for name in METRICS:
        command += ["-m", name]
    command += ["-f", "json", "-o", str(directory / "report.json")]
    return [*command, "--store", str(directory / "runs.db"), "-q"]


def inputs(directory: Path, samples: int, documents: bool) -> tuple[Path, Path]:
    directory.mkdir(parents=True, exist_ok=True)
    dataset, outputs = generate(directory, samples)
    return as_documents(dataset, outputs) if documents else (dataset, outputs)


def one_round(
    directory: Path, files: tuple[Path, Path], small: Path, samples: int
) -> dict[str, float]:
    """One round, each step in a fresh child: the run, the reference, ``--help``, a small run."""
    env = child_env()
    wall_s, cpu_s, peak_mb, code, stderr = measure(run_command(*files, directory), env)
    if code not in (0, 1):
        sys.exit(f"assay run failed ({code}): {stderr[-2000:]}")
    summary = report_summary(directory / "report.json")
    assert summary["total_executions"] == samples, summary
    direct = reference_in_child(*files, env)
    plain_cpu = float("nan")
    if files[0].suffix == ".jsonl":
        plain_cpu = measure([sys.executable, __file__, "--plain", *map(str, files)], env)[1]
    help_cpu = measure([sys.executable, "-m", "assay", "--help"], env)[1]
    small_files = (small / files[0].name, small / files[1].name)
    small_cpu = measure(run_command(*small_files, small), env)[1]
    scores = samples * len(METRICS)
    overhead = cpu_s - direct["metric_cpu"]
    return {
        **direct,
        "wall": wall_s,
        "cpu": cpu_s,
        "peak": peak_mb,
        "failed_rows": summary["failed_rows"],
        "errored_rows": summary["errored_rows"],
        "help_cpu": help_cpu,
        "small_cpu": small_cpu,
        "plain_cpu": plain_cpu,
        "harness": (overhead - direct["load_cpu"] - help_cpu) * 1e6 / scores,
        "harness_before": (overhead - direct["check_cpu"] - help_cpu) * 1e6 / scores,
        "per_row": (overhead - direct["load_cpu"] - small_cpu) * 1e6 / scores,
        "fixed": (small_cpu - help_cpu) * 1e6 / scores,
        "load": os.getloadavg()[0],
    }


def run_one(
    directory: Path, samples: int, documents: bool, rounds: int, peak_only: bool = False
) -> None:
    """Generate, then ``rounds`` rounds (:func:`one_round`); print each and their medians."""
    started = time.perf_counter()
    files = inputs(directory, samples, documents)
    small = directory / "small"
    inputs(small, FIXED_SAMPLES, documents)
    print(
        f"== {samples:,} samples, {files[0].name} + {files[1].name}: generated in "
        f"{time.perf_counter() - started:.1f}s "
        f"({files[0].stat().st_size / 1e6:.1f} MB + {files[1].stat().st_size / 1e6:.1f} MB)"
    )
    done = []
    if peak_only:  # the run alone, for its peak RSS (10M samples: the reference loop takes long)
        for number in range(1, rounds + 1):
            wall, cpu, peak, code, tail = measure(run_command(*files, directory), child_env())
            if code not in (0, 1):
                sys.exit(f"assay run failed ({code}): {tail[-2000:]}")
            print(f"  round {number}: run {wall:.1f}s wall, {cpu:.1f}s CPU, peak RSS {peak:.0f} MB")
        return
    for number in range(1, rounds + 1):
        row = one_round(directory, files, small, samples)
        done.append(row)
        print(
            f"  round {number}: run {row['wall']:.2f}s wall, {row['cpu']:.2f}s CPU, "
            f"{row['peak']:.0f} MB; reference {row['metric_cpu']:.2f}s; reading "
            f"{row['load_cpu']:.2f}s; --help {row['help_cpu']:.2f}s; harness "
            f"{row['harness']:.2f} us; plain loop {row['plain_cpu']:.2f}s, run / it "
            f"{row['cpu'] / row['plain_cpu']:.2f} (load average {row['load']:.1f})"
        )
    print_summary(done, samples, directory / "report.json")


def print_summary(done: list[dict[str, float]], samples: int, report: Path) -> None:
    """The medians over the rounds (peak RSS: the largest), as the table reports them."""

    def mid(key: str) -> float:
        return statistics.median(row[key] for row in done)

    per = 1e6 / (samples * len(METRICS))
    print(
        f"assay run (median of {len(done)}): {mid('wall'):.2f}s wall, {mid('cpu'):.2f}s CPU, "
        f"peak RSS {max(row['peak'] for row in done):.0f} MB (largest), report "
        f"{report.stat().st_size / 1e6:.1f} MB, {done[-1]['failed_rows']:.0f} rows failed, "
        f"{done[-1]['errored_rows']:.0f} errored"
    )
    print(
        f"reference (the four metrics' score() in a loop, a child of its own): "
        f"{mid('metric_cpu'):.2f}s CPU = {mid('metric_cpu') * per:.2f} us per score; "
        f"reading the two files into (sample, output) pairs {mid('load_cpu'):.2f}s CPU "
        f"(the checking pass {mid('check_cpu'):.2f}s); `assay --help` {mid('help_cpu'):.2f}s CPU"
    )
    print(
        f"harness cost (CPU, median of the rounds' figures): {mid('harness'):.2f} us per "
        f"(sample, metric) without start-up and file reading ({mid('harness_before'):.2f} us "
        "without start-up and the checking pass only, as counted before session 13); run CPU / "
        f"reference CPU = {mid('cpu') / mid('metric_cpu'):.2f}"
    )
    ratios = [row["cpu"] / row["plain_cpu"] for row in done]
    print(
        f"plain-loop floor (stdlib json, Sample and Output, the four metrics' score(), a whole "
        f"process): {mid('plain_cpu'):.2f}s CPU; run CPU / plain-loop CPU, per round: median "
        f"{statistics.median(ratios):.2f} (rounds {', '.join(f'{r:.2f}' for r in ratios)}); "
        f"{rounds_verdict(ratios, bound=1.2)}"
    )
    print(
        f"  of which fixed: a {FIXED_SAMPLES}-sample run's CPU beyond `assay --help` "
        f"({mid('small_cpu') - mid('help_cpu'):.2f}s: imports, set-up, report) = "
        f"{mid('fixed'):.2f} us per score at this size; per score beyond it {mid('per_row'):.2f} us"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, nargs="+", default=[100_000])
    parser.add_argument("--keep", type=Path, help="write the files here instead of a temp dir")
    parser.add_argument(
        "--json", action="store_true", help="JSON documents instead of JSONL (the same samples)"
    )
    parser.add_argument(
        "--rounds", type=int, default=3, help="rounds per size; medians are printed (default 3)"
    )
    parser.add_argument(
        "--peak-only", action="store_true", help="time the run alone: wall, CPU, peak RSS"
    )
    parser.add_argument("--reference", nargs=2, type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--plain", nargs=2, type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.plain:  # the plain-loop floor, timed whole by its parent
        plain_loop(*args.plain)
        return
    if args.reference:  # the child of reference_in_child
        print(json.dumps(direct_loop(*args.reference)))
        return
    print(f"cpus available: {len(os.sched_getaffinity(0))}; metrics: {', '.join(METRICS)}")
    print(compile_package())
    with tempfile.TemporaryDirectory() as temp:
        directory = args.keep or Path(temp)
        directory.mkdir(parents=True, exist_ok=True)
        for samples in args.samples:
            run_one(directory, samples, args.json, args.rounds, args.peak_only)


if __name__ == "__main__":
    main()
