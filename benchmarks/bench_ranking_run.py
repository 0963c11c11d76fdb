"""Ranking metrics as whole commands: `assay run` of saved outputs vs pytrec_eval load+evaluate.

The data is ``bench_ranking.py``'s (10,000 queries x 100 documents, graded gains, fixed seed),
written as the files a user has: a JSONL dataset (``expected_output`` = ``{doc: gain}``,
``metadata.k`` = 10) and a JSONL saved-outputs file (``retrieved`` = the ranking, best first).
Each round runs, each in a fresh interpreter and interleaved:

- ``assay run DATASET --outputs OUTPUTS -m retrieval-hit-at-k -m retrieval-recall-at-k
  -m retrieval-mrr -m retrieval-ndcg-at-k -f json -o report.json --store runs.db -q``;
- pytrec_eval: read both files with the stdlib's ``json``, build its qrels and run dicts
  (a score per rank), evaluate success@10, recall@10, recip_rank and ndcg_cut@10 (the child
  imports nothing else: this script's own imports are the standard library's), run as a user
  runs it; and once more with ``OPENBLAS_THREAD_TIMEOUT=4``, the setting the ``assay``
  command makes for itself (numpy's idle OpenBLAS workers sleep at once instead of polling
  ~0.1 s each), to show how much of assay's margin that setting is;
- the plain loop: read both files the same way and call assay's four metrics' ``score()`` on
  each (sample, output) pair, with no runner, store or report (the floor of a harness that
  uses these metrics).

Before timing, the scores of the assay report are checked against pytrec_eval's (1e-9). The
medians of the rounds' CPU (user + system, from the child's rusage) and wall times are printed,
with the ratio of assay's CPU to each reference's taken round by round (medians of those), and
the rounds in which that ratio was under 1, with the 95 % Wilson interval of that share: "less
CPU" is supported only when the interval lies above one half (a median alone moves with the
machine).
``--baseline SRC`` adds ``assay run`` from another checkout's ``src`` (before/after in one run).

    python benchmarks/bench_ranking_run.py [--queries 10000] [--rounds 5] [--baseline SRC]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

from bench_saved_outputs import child_env, measure
from timing import compile_package, rounds_verdict

K = 10
BLAS_TIMEOUT_ENV = "OPENBLAS_THREAD_TIMEOUT"  # what the assay command sets for itself
METRICS = ("retrieval-hit-at-k", "retrieval-recall-at-k", "retrieval-mrr", "retrieval-ndcg-at-k")
TREC = {
    "retrieval-hit-at-k": f"success_{K}",
    "retrieval-recall-at-k": f"recall_{K}",
    "retrieval-mrr": "recip_rank",
    "retrieval-ndcg-at-k": f"ndcg_cut_{K}",
}


def write_files(directory: Path, queries: int, docs: int, seed: int) -> tuple[Path, Path]:
    """The dataset and the saved outputs as JSONL files."""
    # here, not at the top: the pytrec_eval and plain-loop children run this script too, and
    # bench_ranking imports pytrec_eval, numpy and assay, which neither child may be charged for
    from bench_ranking import make_data

    qrels, rankings = make_data(queries, docs, seed)
    dataset, outputs = directory / "dataset.jsonl", directory / "outputs.jsonl"
    with dataset.open("w", encoding="utf-8") as ds, outputs.open("w", encoding="utf-8") as out:
        for qid, gains in qrels.items():
            sample = {"id": qid, "input": {"query": qid}, "expected_output": gains}
            ds.write(json.dumps({**sample, "metadata": {"k": K}}) + "\n")
            out.write(json.dumps({"id": qid, "output": "", "retrieved": rankings[qid]}) + "\n")
    return dataset, outputs


def trec_child(dataset: Path, outputs: Path, dump: Path | None) -> None:
    """pytrec_eval's whole job: load the two files, build its dicts, evaluate."""
    import pytrec_eval

    with dataset.open(encoding="utf-8") as lines:
        qrels = {row["id"]: row["expected_output"] for row in map(json.loads, lines)}
    with outputs.open(encoding="utf-8") as lines:
        run = {}
        for row in map(json.loads, lines):
            docs = row["retrieved"]
            run[row["id"]] = {doc: float(len(docs) - rank) for rank, doc in enumerate(docs)}
    measures = {f"success.{K}", f"recall.{K}", "recip_rank", f"ndcg_cut.{K}"}
    results = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
    if dump is not None:
        dump.write_text(json.dumps(results), encoding="utf-8")


def loop_child(dataset: Path, outputs: Path) -> None:
    """The plain loop: the same reading, then assay's metrics' ``score()`` pair by pair."""
    from assay.data.dataset import Sample
    from assay.data.outputs import coerce_output
    from assay.metrics.retrieval import MRR, HitAtK, NDCGAtK, RecallAtK

    metrics = (HitAtK(), RecallAtK(), MRR(), NDCGAtK())
    with outputs.open(encoding="utf-8") as lines:
        saved = {row["id"]: row for row in map(json.loads, lines)}
    with dataset.open(encoding="utf-8") as lines:
        for row in map(json.loads, lines):
            sample = Sample(**row)
            entry = saved[sample.id]
            output = coerce_output({"output": entry["output"], "retrieved": entry["retrieved"]})
            for metric in metrics:
                metric.score(sample, output)


def assay_command(dataset: Path, outputs: Path, directory: Path) -> list[str]:
    for stale in directory.glob("runs.db*"):
        stale.unlink()
    command = [sys.executable, "-m", "assay", "run", str(dataset), "--outputs", str(outputs)]
    for name in METRICS:
        command += ["-m", name]
    report = directory / "report.json"
    return [*command, "-f", "json", "-o", str(report), "--store", str(directory / "runs.db"), "-q"]


def check_scores(directory: Path, dataset: Path, outputs: Path) -> float:
    """The largest |assay - pytrec_eval| over every (query, metric); exits when above 1e-9."""
    env = child_env()
    dump = directory / "trec.json"
    trec = [sys.executable, __file__, "--trec", str(dataset), str(outputs), "--dump", str(dump)]
    for command in (assay_command(dataset, outputs, directory), trec):
        *_, code, tail = measure(command, env)
        if code not in (0, 1):
            sys.exit(f"{command[2:4]} failed ({code}): {tail}")
    theirs = json.loads(dump.read_text(encoding="utf-8"))
    report = json.loads((directory / "report.json").read_text(encoding="utf-8"))
    worst, seen = 0.0, 0
    for row in report["rows"]:
        for metric, score in row["scores"].items():
            worst = max(worst, abs(score["score"] - theirs[row["id"]][TREC[metric]]))
            seen += 1
    if seen != len(theirs) * len(METRICS) or worst > 1e-9:
        sys.exit(f"assay differs from pytrec_eval: {seen} rows, max difference {worst:g}")
    return worst


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--docs", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--baseline", type=Path, help="another checkout's src/, timed alongside")
    parser.add_argument("--trec", nargs=2, type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--loop", nargs=2, type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--dump", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.trec:
        trec_child(*args.trec, args.dump)
        return
    if args.loop:
        loop_child(*args.loop)
        return
    print(compile_package())
    with tempfile.TemporaryDirectory() as temp:
        directory = Path(temp)
        dataset, outputs = write_files(directory, args.queries, args.docs, args.seed)
        worst = check_scores(directory, dataset, outputs)
        print(
            f"{args.queries:,} queries x {args.docs} docs, k={K}: dataset "
            f"{dataset.stat().st_size / 1e6:.1f} MB, outputs {outputs.stat().st_size / 1e6:.1f} MB;"
            f" max |assay - pytrec_eval| {worst:.1e}"
        )
        race_rounds(directory, dataset, outputs, args.rounds, args.baseline)


def race_rounds(
    directory: Path, dataset: Path, outputs: Path, rounds: int, baseline: Path | None
) -> None:
    """Interleaved rounds of the commands; medians and per-round ratios."""
    env = {k: v for k, v in child_env().items() if k != BLAS_TIMEOUT_ENV}
    # "pytrec_eval, idle BLAS asleep": the reference with the setting the assay command makes
    # for itself (assay.cli.let_idle_blas_threads_sleep), to show what assay's margin owes it
    asleep = {**env, BLAS_TIMEOUT_ENV: "4"}
    envs = {"assay run": env, "pytrec_eval": env, "pytrec_eval, BLAS asleep": asleep}
    envs["plain loop"] = env
    if baseline is not None:
        envs["baseline run"] = {**env, "PYTHONPATH": str(baseline.resolve())}
    seen: dict[str, list[tuple[float, float, float]]] = {name: [] for name in envs}
    for _ in range(rounds):
        for name, child in envs.items():
            if name.endswith(" run"):
                command = assay_command(dataset, outputs, directory)
            else:
                flag = "--trec" if name.startswith("pytrec_eval") else "--loop"
                command = [sys.executable, __file__, flag, str(dataset), str(outputs)]
            wall, cpu, peak, code, tail = measure(command, child)
            if code not in (0, 1):
                sys.exit(f"{name} failed ({code}): {tail}")
            seen[name].append((wall, cpu, peak))
    for name, rows in seen.items():
        wall = statistics.median(r[0] for r in rows)
        cpu = statistics.median(r[1] for r in rows)
        peak = max(r[2] for r in rows)
        print(f"  {name:24s} median of {rounds}: {cpu:.3f} s CPU, {wall:.3f} s wall, {peak:.0f} MB")
    runs = [name for name in seen if name.endswith(" run")]
    for ours in runs:
        for name in [n for n in seen if n != ours and not (n in runs and ours != "assay run")]:
            ratios = [a[1] / b[1] for a, b in zip(seen[ours], seen[name])]
            print(
                f"  {ours} CPU / {name} CPU, per round: median {statistics.median(ratios):.2f} "
                f"(rounds {', '.join(f'{r:.2f}' for r in ratios)}); {rounds_verdict(ratios)}"
            )


if __name__ == "__main__":
    main()
