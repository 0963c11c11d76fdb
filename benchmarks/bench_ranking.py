"""Ranking metrics on 10,000 queries x 100 documents: assay vs pytrec_eval (and ranx if installed).

End to end, every side starts from the same plain Python dicts: relevance judgements
``{qid: {doc: gain}}`` and rankings ``{qid: [doc, ...]}`` (best first). pytrec_eval needs a run
with scores, so building that dict is part of its time. The four metrics are hit@k (success),
recall@k, MRR (recip_rank) and nDCG@k (ndcg_cut, linear gains). assay is timed three ways: one
``score()`` call per (query, metric) and ``score_batch()`` over all queries per metric (the
runner's batch path), both from a Sample and an Output per query built as a user would write
it, ``Output("", tuple(map(Retrieved, docs)))``, whose building is part of their time (the
Output keeps the ranking as one ``RankedDocs`` of plain id tuples and drops the ``Retrieved``
objects); and ``score_rankings()`` straight from the dicts' values (plain lists, the input
pytrec_eval and ranx get too). Three diagnostic lines follow the timings, with the GC on, in
their own interleaved rounds with pytrec_eval (their ratios are to that time): the
``Sample``/``Output`` building alone; the same from id lists (``coerce_output``, the path of a
saved-outputs file, which builds no ``Retrieved``); and the four metrics through ``Runner``
(the engine of ``assay run``: chunks of 2,048 executions under its own GC settings) from a
saved-outputs mapping that builds each ``Output`` on lookup from a line's id list.
ranx (``pip install ranx``; its numba kernels are compiled before timing, so it is timed warm)
is compared when installed. The script checks that every side gives the same numbers before it
prints timings. Run:

    python benchmarks/bench_ranking.py [--queries N] [--repeat R]
"""

from __future__ import annotations

import argparse
import random
import warnings
from collections.abc import Iterator, Mapping
from typing import Any

import pytrec_eval
from timing import race

from assay.data.dataset import Sample
from assay.data.executions import Execution, ResultChunk
from assay.data.outputs import Output, Retrieved, coerce_output
from assay.engine.runner import Runner
from assay.engine.sut import SavedOutputs
from assay.metrics.retrieval import MRR, HitAtK, NDCGAtK, RecallAtK, score_rankings

Qrels = dict[str, dict[str, int]]
Rankings = dict[str, list[str]]


def make_data(queries: int, docs: int, seed: int) -> tuple[Qrels, Rankings]:
    rng = random.Random(seed)
    corpus = [f"doc-{n}" for n in range(5 * docs)]
    qrels: Qrels = {}
    rankings: Rankings = {}
    for q in range(queries):
        qid = f"q{q}"
        judged = rng.sample(corpus, 20)
        gains = {doc: rng.choice((0, 0, 1, 1, 2, 3)) for doc in judged}
        gains[judged[0]] = max(gains[judged[0]], 1)
        pool = rng.sample(judged, rng.randint(0, 20)) + rng.sample(corpus, docs)
        rankings[qid] = list(dict.fromkeys(pool))[:docs]
        rng.shuffle(rankings[qid])
        qrels[qid] = gains
    return qrels, rankings


class OutputsOnLookup(Mapping[str, Output]):
    """Saved outputs that build each ``Output`` when it is looked up, from what a JSONL line
    of ids holds, as ``assay run`` reads a saved-outputs file (``coerce_output``; the JSON
    parsing itself is left out)."""

    def __init__(self, rankings: Rankings) -> None:
        self.rankings = rankings

    def __getitem__(self, qid: str) -> Output:
        return coerce_output({"output": "", "retrieved": self.rankings[qid]})

    def __iter__(self) -> Iterator[str]:
        return iter(self.rankings)

    def __len__(self) -> int:
        return len(self.rankings)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--docs", type=int, default=100)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()
    warnings.filterwarnings("ignore", module="ranx")  # numba type-safety chatter
    k = args.k
    qrels, rankings = make_data(args.queries, args.docs, args.seed)
    metrics = (HitAtK(k=k), RecallAtK(k=k), MRR(), NDCGAtK(k=k))
    names = ("hit", "recall", "mrr", "ndcg")

    def run_pytrec_eval() -> dict[str, dict[str, float]]:
        run = {
            qid: {doc: float(len(docs) - rank) for rank, doc in enumerate(docs)}
            for qid, docs in rankings.items()
        }
        measures = {f"success.{k}", f"recall.{k}", "recip_rank", f"ndcg_cut.{k}"}
        results = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
        keys = (f"success_{k}", f"recall_{k}", "recip_rank", f"ndcg_cut_{k}")
        return {qid: dict(zip(names, (row[key] for key in keys))) for qid, row in results.items()}

    def build() -> list[tuple[Sample, Output]]:
        return [
            (
                Sample(id=qid, input={}, expected_output=qrels[qid]),
                Output("", tuple(map(Retrieved, docs))),
            )
            for qid, docs in rankings.items()
        ]

    def build_from_ids() -> list[tuple[Sample, Output]]:
        return [
            (
                Sample(id=qid, input={}, expected_output=qrels[qid]),
                coerce_output({"output": "", "retrieved": docs}),
            )
            for qid, docs in rankings.items()
        ]

    def score(pairs: list[tuple[Sample, Output]]) -> dict[str, dict[str, float]]:
        return {s.id: {n: m.score(s, o).value for n, m in zip(names, metrics)} for s, o in pairs}

    def run_assay() -> dict[str, dict[str, float]]:
        return score(build())

    batched = all(hasattr(m, "score_batch") for m in metrics)

    def run_batch() -> dict[str, dict[str, float]]:
        pairs = build()
        samples, outputs = [s for s, _ in pairs], [o for _, o in pairs]
        columns = [m.score_batch(samples, outputs).values.tolist() for m in metrics]  # type: ignore[attr-defined]
        return {s.id: dict(zip(names, row)) for s, row in zip(samples, zip(*columns))}

    def run_lists() -> dict[str, dict[str, float]]:
        qids = list(rankings)
        columns = score_rankings(metrics, [qrels[q] for q in qids], list(rankings.values()))
        rows = zip(*(c.values.tolist() for c in columns))
        return {qid: dict(zip(names, row)) for qid, row in zip(qids, rows)}

    def run_runner() -> dict[str, dict[str, float]]:
        samples = [Sample(id=qid, input={}, expected_output=qrels[qid]) for qid in rankings]
        columns: dict[str, list[float]] = {m.name: [] for m in metrics}

        def on_chunk(chunk: ResultChunk) -> None:
            for name, column in chunk.columns.items():
                columns[name] += column.values.tolist()

        sut = SavedOutputs(OutputsOnLookup(rankings), "outputs.jsonl")
        runner = Runner(metrics, sut, on_result=lambda *_: None, on_chunk=on_chunk)
        runner.run(Execution(n, sample, 0) for n, sample in enumerate(samples))
        rows = zip(*(columns[m.name] for m in metrics))
        return {s.id: dict(zip(names, row)) for s, row in zip(samples, rows)}

    theirs = run_pytrec_eval()
    candidates = {"trec": run_pytrec_eval, "assay": run_assay}
    if batched:
        candidates["batch"] = run_batch
    candidates["lists"] = run_lists
    ranx_run = ranx_candidate(qrels, rankings, k, names)
    if ranx_run is not None:
        candidates["ranx"] = ranx_run
    worst = 0.0
    for label, candidate in {**candidates, "runner": run_runner}.items():
        ours = candidate()
        diff = max(abs(ours[q][n] - theirs[q][n]) for q in theirs for n in names)
        if diff > 1e-9:
            raise SystemExit(
                f"{label} differs from pytrec_eval by {diff:g}; timings not comparable"
            )
        worst = max(worst, diff)
    prebuilt = build()
    on = race(args.repeat, candidates)
    off = race(
        args.repeat,
        {**candidates, "build": build, "metrics": lambda: score(prebuilt)},
        collect=False,
    )
    diagnostics = race(  # pytrec_eval again, so each ratio below compares interleaved times
        args.repeat,
        {"trec": run_pytrec_eval, "build": build, "from_ids": build_from_ids, "runner": run_runner},
    )
    trec_s, assay_s, trec_nogc_s, assay_nogc_s = on["trec"], on["assay"], off["trec"], off["assay"]
    build_s, metrics_s = off["build"], off["metrics"]

    n = len(rankings)
    print(
        f"ranking metrics (hit@{k}, recall@{k}, mrr, ndcg@{k}), {n:,} queries x {args.docs} docs, "
        f"best of {args.repeat}, interleaved"
    )
    print(f"  max |difference| assay vs pytrec_eval: {worst:.1e}")
    print("                                  GC on      GC paused (as timeit)")
    print(f"  pytrec_eval end to end       {trec_s:8.3f} s   {trec_nogc_s:8.3f} s")
    print(f"  assay end to end             {assay_s:8.3f} s   {assay_nogc_s:8.3f} s")
    print(
        f"  ratio (assay / pytrec_eval)  {assay_s / trec_s:8.2f}     "
        f"{assay_nogc_s / trec_nogc_s:8.2f}     (<= 1.0: assay at least as fast)"
    )
    print("where assay's time goes (GC paused):")
    print(f"  Sample + Output(retrieved=Retrieved x {args.docs}) per query  {build_s:8.3f} s")
    print(
        f"  the 4 metric calls per query                    {metrics_s:8.3f} s   "
        f"({metrics_s / n / 4 * 1e6:.1f} us per call)"
    )
    labels = (
        ("assay score_batch", "batch"),
        ("assay score_rankings (lists)", "lists"),
        ("ranx (warm)", "ranx"),
    )
    for label, key in labels:
        if key not in on:
            print(f"  {label}: not available, skipped")
            continue
        print(
            f"  {label:28s} {on[key]:8.3f} s   {off[key]:8.3f} s   "
            f"pytrec_eval / it: {trec_s / on[key]:.2f} (GC on), {trec_nogc_s / off[key]:.2f} "
            "(paused)"
        )
    trec_again = diagnostics["trec"]
    print(
        "diagnostics (GC on, own interleaved rounds after those above, with pytrec_eval "
        f"again: {trec_again:.3f} s):"
    )
    print(
        f"  Sample + Output building alone {diagnostics['build']:8.3f} s   "
        f"pytrec_eval / it: {trec_again / diagnostics['build']:.2f}"
    )
    print(
        f"  the same from id lists         {diagnostics['from_ids']:8.3f} s   "
        f"pytrec_eval / it: {trec_again / diagnostics['from_ids']:.2f}   (coerce_output)"
    )
    print(
        f"  Runner (assay run's engine)    {diagnostics['runner']:8.3f} s   "
        f"pytrec_eval / it: {trec_again / diagnostics['runner']:.2f}"
    )
    if "ranx" in on:
        for label, key in (("score_batch", "batch"), ("score_rankings", "lists")):
            if key in on:
                print(
                    f"  ranx / assay {label}: {on['ranx'] / on[key]:.2f} (GC on), "
                    f"{off['ranx'] / off[key]:.2f} (paused)"
                )


def ranx_candidate(qrels: Qrels, rankings: Rankings, k: int, names: tuple[str, ...]) -> Any:
    """ranx end to end from the same dicts, or None when ranx is not installed."""
    try:
        import ranx  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        return None
    measures = [f"hit_rate@{k}", f"recall@{k}", "mrr", f"ndcg@{k}"]

    def run_ranx() -> dict[str, dict[str, float]]:
        run = {
            qid: {doc: float(len(docs) - rank) for rank, doc in enumerate(docs)}
            for qid, docs in rankings.items()
        }
        qrels_obj, run_obj = ranx.Qrels(qrels), ranx.Run(run)
        scores = ranx.evaluate(qrels_obj, run_obj, measures, return_mean=False)
        columns = [scores[m].tolist() for m in measures]
        return {qid: dict(zip(names, row)) for qid, row in zip(list(run_obj.keys()), zip(*columns))}

    return run_ranx


if __name__ == "__main__":
    main()
