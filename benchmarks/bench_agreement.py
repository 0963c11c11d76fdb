"""Benchmark: agreement on 10,000 items x 5 judges x 10 criteria with a 1,000-resample bootstrap.

Run:  python benchmarks/bench_agreement.py [--items N] [--judges J] [--resamples B] [--seed S]

Prints the wall time of each stage and, as a same-process reference, the time of the naive
bootstrap of one criterion's kappa (re-running scikit-learn's cohen_kappa_score on every
resample) against assay's vectorised count-based bootstrap of the same criterion, with the
ratio. Synthetic labels: 6 binary, 2 ordinal (5 options + NA) and 2 nominal (4 options)
criteria; judges agree with the human 70-85% of the time, abstain sometimes, and 0.5% of the
items errored.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from assay.calibration import Criterion, LabelSet, Option, compute_agreement
from assay.calibration.agreement import make_pairs
from assay.calibration.bootstrap import bootstrap


def build(n_items: int, n_judges: int, seed: int) -> LabelSet:
    rng = np.random.default_rng(seed)
    criteria: list[Criterion] = [
        Criterion(name=f"binary_{i}", weight=1.0 + i % 3) for i in range(5)
    ]
    criteria.append(Criterion(name="penalty", weight=-2.0))
    for i in range(2):
        criteria.append(
            Criterion(
                name=f"ordinal_{i}",
                type="ordinal",
                options=[Option(label=str(v)) for v in range(1, 6)]
                + [Option(label="n/a", na=True)],
            )
        )
    for i in range(2):
        criteria.append(
            Criterion(
                name=f"nominal_{i}",
                type="nominal",
                options=[Option(label=x) for x in ("a", "b", "c", "d")],
            )
        )
    n_codes = np.array([len(c.labels) for c in criteria])
    human = np.stack([rng.integers(0, k, n_items) for k in n_codes]).astype(np.int16)
    votes = np.empty((n_judges, len(criteria), n_items), dtype=np.int16)
    for j in range(n_judges):
        agree = rng.random(human.shape) < (0.70 + 0.15 * j / max(n_judges - 1, 1))
        noise = np.stack([rng.integers(0, k, n_items) for k in n_codes])
        votes[j] = np.where(agree, human, noise)
    votes[rng.random(votes.shape) < 0.002] = -2  # failed judgments
    errored = rng.random(n_items) < 0.005
    return LabelSet(
        criteria=tuple(criteria),
        item_ids=tuple(str(i) for i in range(n_items)),
        judges=tuple(f"judge_{j}" for j in range(n_judges)),
        human=human,
        votes=votes,
        item_errored=errored,
    )


def naive_kappa_bootstrap(
    t: np.ndarray, p: np.ndarray, k: int, resamples: int, seed: int
) -> np.ndarray:
    from sklearn.metrics import cohen_kappa_score

    rng = np.random.default_rng(seed)
    out = np.empty(resamples)
    for b in range(resamples):
        idx = rng.integers(0, len(t), len(t))
        out[b] = cohen_kappa_score(t[idx], p[idx], labels=list(range(k)))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--judges", type=int, default=5)
    parser.add_argument("--resamples", type=int, default=1_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    start = time.perf_counter()
    labels = build(args.items, args.judges, args.seed)
    built = time.perf_counter() - start

    compute_agreement(build(50, 2, 1))  # warm-up: imports of sklearn / scipy / krippendorff

    start, cpu = time.perf_counter(), time.process_time()
    compute_agreement(labels)
    t_point, c_point = time.perf_counter() - start, time.process_time() - cpu

    start, cpu = time.perf_counter(), time.process_time()
    result = compute_agreement(labels, bootstrap=args.resamples, seed=args.seed)
    t_full, c_full = time.perf_counter() - start, time.process_time() - cpu

    print(
        f"labels: {args.items} items x {args.judges} judges x {len(labels.criteria)} criteria "
        f"(built in {built:.2f} s)"
    )
    print(f"compute_agreement, no bootstrap:           wall {t_point:6.2f} s  cpu {c_point:6.2f} s")
    print(
        f"compute_agreement + {args.resamples} bootstrap resamples: wall {t_full:6.2f} s  "
        f"cpu {c_full:6.2f} s"
    )
    boot = result.bootstrap
    assert boot is not None
    acc = boot.accuracy_micro
    kap = boot.mean_kappa_macro
    print(f"  accuracy (micro) {acc.estimate:.4f} percentile {acc.percentile} BCa {acc.bca}")
    print(f"  mean kappa (macro) {kap.estimate:.4f} percentile {kap.percentile} BCa {kap.bca}")

    # same-process reference: one criterion's kappa bootstrap, naive sklearn loop vs vectorised
    crit = labels.criteria[0]
    pairs = make_pairs(crit, labels.human[0], labels.votes[0, 0], labels.item_errored, "exclude")
    keep = pairs.keep
    t, p = pairs.true[keep], pairs.pred[keep]
    reference_resamples = min(args.resamples, 200)
    start = time.perf_counter()
    naive_kappa_bootstrap(t, p, pairs.scale.k, reference_resamples, args.seed)
    t_naive = (time.perf_counter() - start) * args.resamples / reference_resamples
    start = time.perf_counter()
    nan = np.full(len(labels.item_ids), np.nan)
    bootstrap([pairs], nan, nan, n_resamples=args.resamples, seed=args.seed)
    t_vec = time.perf_counter() - start
    print(
        f"one criterion, {args.resamples} resamples: naive sklearn loop {t_naive:.2f} s "
        f"(extrapolated from {reference_resamples}), vectorised {t_vec:.3f} s, "
        f"ratio {t_naive / t_vec:.0f}x"
    )


if __name__ == "__main__":
    main()
