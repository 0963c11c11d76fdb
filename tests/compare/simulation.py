"""A simulated baseline scenario: is the gate's regression rule powerful and quiet?

200 samples in four cohorts, two metrics:

* ``judge``: a graded score; each sample has a latent quality q ~ Beta(6, 2) and every run
  scores clip(q + N(0, 0.1), 0, 1), so re-running the same system moves every score;
* ``exact-match``: pass/fail; 70% of samples pass reliably (p ~ Beta(20, 1)), 30% mostly
  fail (p ~ Beta(1, 5)); every run draws pass ~ Bernoulli(p).

A baseline run and a current run of the *same* system differ only by this repetition noise;
a *true 10-point drop* lowers every judge quality by 0.10, or breaks reliable exact-match
samples (p -> 0) until the expected pass-rate is 10 points lower. The gate is
``check_gate(current, GateRules(), compare_reports(current, baseline))``: no floors, the
default ``max_regressions = 0``.

Run ``python tests/compare/simulation.py`` to print the false-alarm and detection rates.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from assay.compare.comparison import compare_reports
from assay.compare.gate import check_gate
from assay.compare.gate_rules import GateRules

try:  # imported as tests/compare/simulation.py (pytest) or run as a script
    from compare.factory import from_matrix
except ImportError:  # pragma: no cover
    from factory import from_matrix  # type: ignore[no-redef]

N_SAMPLES = 200
DROP = 0.10
COHORTS = (["policy"], ["geography"], ["billing"], [])


@dataclass(frozen=True)
class Population:
    quality: np.ndarray  # judge latent quality per sample
    pass_prob: np.ndarray  # exact-match pass probability per sample
    tags: list[list[str]]


def population(rng: np.random.Generator, n: int = N_SAMPLES) -> Population:
    reliable = rng.random(n) < 0.7
    pass_prob = np.where(reliable, rng.beta(20, 1, n), rng.beta(1, 5, n))
    return Population(
        quality=rng.beta(6, 2, n),
        pass_prob=pass_prob,
        tags=[list(COHORTS[i % len(COHORTS)]) for i in range(n)],
    )


def dropped(pop: Population, metric: str, rng: np.random.Generator) -> Population:
    """The same population after a true 10-point drop in one metric."""
    if metric == "judge":
        return Population(np.clip(pop.quality - DROP, 0, 1), pop.pass_prob, pop.tags)
    target = DROP * pop.pass_prob.size  # expected passes to remove
    pass_prob = pop.pass_prob.copy()
    removed = 0.0
    for index in rng.permutation(np.flatnonzero(pass_prob > 0.8)):
        if removed >= target:
            break
        removed += pass_prob[index]
        pass_prob[index] = 0.0
    return Population(pop.quality, pass_prob, pop.tags)


def run(pop: Population, rng: np.random.Generator, *, repetitions: int = 1, run_id: str = "run"):
    n = pop.quality.size
    judge = np.clip(pop.quality[:, None] + rng.normal(0, 0.1, (n, repetitions)), 0, 1)
    exact = (rng.random((n, repetitions)) < pop.pass_prob[:, None]).astype(float)
    return from_matrix({"judge": judge, "exact-match": exact}, tags=pop.tags, run_id=run_id)


def trial(seed: int, *, drop: str | None, repetitions: int = 1, defaults: bool = False):
    """One baseline-vs-current gate decision; returns (gate result, comparison). ``defaults``:
    the gate's real defaults (the flip rule on at 0 for one repetition), as `assay run
    --compare` applies them."""
    rng = np.random.default_rng([seed, repetitions])
    pop = population(rng)
    baseline = run(pop, rng, repetitions=repetitions, run_id=f"baseline-{seed}")
    current_pop = dropped(pop, drop, rng) if drop else pop
    current = run(current_pop, rng, repetitions=repetitions, run_id=f"current-{seed}")
    comparison = compare_reports(current, baseline, seed=seed)
    # A stochastic system: its rows flip by noise, so the exact flip rule (default 0 for one
    # repetition) is switched off and the statistical rule is what this models.
    rules = GateRules() if defaults else GateRules(max_flips=N_SAMPLES * repetitions)
    return check_gate(current, rules, comparison), comparison


def rates(trials: int = 100, *, defaults: bool = False) -> dict[str, tuple[int, int]]:
    """(gate failures, trials) for each scenario (``defaults``: under the real default rules)."""
    out: dict[str, tuple[int, int]] = {}
    for label, drop, reps in (
        ("noise only, 1 repetition", None, 1),
        ("noise only, 3 repetitions", None, 3),
        ("judge -10 points, 1 repetition", "judge", 1),
        ("exact-match -10 points, 1 repetition", "exact-match", 1),
        ("exact-match -10 points, 3 repetitions", "exact-match", 3),
    ):
        failed = sum(
            not trial(seed, drop=drop, repetitions=reps, defaults=defaults)[0].passed
            for seed in range(trials)
        )
        out[label] = (failed, trials)
    return out


if __name__ == "__main__":  # pragma: no cover
    for defaults in (False, True):
        print("real default rules" if defaults else "flip rule off (statistical rule only)")
        for label, (failed, total) in rates(defaults=defaults).items():
            print(f"  {label:<40} gate failed in {failed:>3} of {total} trials")
