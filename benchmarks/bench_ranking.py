"""Ranking metrics on 10,000 queries x 100 documents: assay vs pytrec_eval (and ranx if installed).

End to end, both sides start from the same plain Python dicts: relevance judgements
``{qid: {doc: gain}}`` and rankings ``{qid: [doc, ...]}`` (best first). pytrec_eval needs a run
with scores, so building that dict is part of its time; assay needs a Sample and an Output per
query, so building those is part of its time. The four metrics are hit@k (success), recall@k,
MRR (recip_rank) and nDCG@k (ndcg_cut, linear gains). The script checks that both sides give the
same numbers before it prints timings. Run:  python benchmarks/bench_ranking.py [--queries N]
"""

from __future__ import annotations

import argparse
import random

import pytrec_eval
from timing import race

from assay.dataset import Sample
from assay.metrics.retrieval import MRR, HitAtK, NDCGAtK, RecallAtK
from assay.outputs import Output, Retrieved

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--docs", type=int, default=100)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()
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
                Output("", tuple(Retrieved(doc) for doc in docs)),
            )
            for qid, docs in rankings.items()
        ]

    def score(pairs: list[tuple[Sample, Output]]) -> dict[str, dict[str, float]]:
        return {s.id: {n: m.score(s, o).value for n, m in zip(names, metrics)} for s, o in pairs}

    def run_assay() -> dict[str, dict[str, float]]:
        return score(build())

    theirs = run_pytrec_eval()
    ours = run_assay()
    worst = max(abs(ours[q][n] - theirs[q][n]) for q in ours for n in names)
    if worst > 1e-9:
        raise SystemExit(f"results differ by {worst:g}; the timings would not be comparable")
    prebuilt = build()
    on = race(args.repeat, {"trec": run_pytrec_eval, "assay": run_assay})
    off = race(
        args.repeat,
        {
            "trec": run_pytrec_eval,
            "assay": run_assay,
            "build": build,
            "metrics": lambda: score(prebuilt),
        },
        collect=False,
    )
    trec_s, assay_s, trec_nogc_s, assay_nogc_s = on["trec"], on["assay"], off["trec"], off["assay"]
    build_s, metrics_s = off["build"], off["metrics"]

    n = len(rankings)
    print(
        f"ranking metrics (hit@{k}, recall@{k}, mrr, ndcg@{k}), {n:,} queries x {args.docs} docs, best of {args.repeat}, interleaved"
    )
    print(f"  max |difference| assay vs pytrec_eval: {worst:.1e}")
    print("                                  GC on      GC paused (as timeit)")
    print(f"  pytrec_eval end to end       {trec_s:8.3f} s   {trec_nogc_s:8.3f} s")
    print(f"  assay end to end             {assay_s:8.3f} s   {assay_nogc_s:8.3f} s")
    print(
        f"  ratio (assay / pytrec_eval)  {assay_s / trec_s:8.2f}     {assay_nogc_s / trec_nogc_s:8.2f}     (<= 1.0: assay at least as fast)"
    )
    print("where assay's time goes (GC paused):")
    print(f"  Sample + Output(retrieved=Retrieved x {args.docs}) per query  {build_s:8.3f} s")
    print(
        f"  the 4 metric calls per query                    {metrics_s:8.3f} s   ({metrics_s / n / 4 * 1e6:.1f} us per call)"
    )
    try:
        import ranx  # type: ignore[import-not-found]  # noqa: F401
    except ImportError:
        print("  ranx: not installed, skipped (pip install ranx to compare)")
    else:
        print("  ranx: installed, but this script does not time it yet")


if __name__ == "__main__":
    main()
