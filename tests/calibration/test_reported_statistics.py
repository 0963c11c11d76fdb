"""Issue 15 points 2-4: linear-weighted kappa, macro and per-option P/R/F1, pooled kappa over all
criteria, mean alpha, correlation intervals and the opt-in bootstrap distribution.

Every expected number comes from an independent source: scikit-learn, scipy, statsmodels, the
`krippendorff` package, or counts taken by hand in the test.
"""

from __future__ import annotations

import json
import math
import warnings

import krippendorff
import numpy as np
import pytest
from scipy import stats as sps
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import fleiss_kappa

from assay.calibration import LabelSet, compute_agreement
from assay.cli import main

from .builders import binary, nominal, ordinal

N = 40


def _data(seed: int = 3) -> tuple[LabelSet, dict[str, list[list[str]]]]:
    """Binary, ordinal (5 options) and nominal criteria; one human, two judges, no abstention."""
    rng = np.random.default_rng(seed)
    crits = (binary("correct"), ordinal("clarity", na=False), nominal("tone"))
    pools = (["MET", "UNMET"], list("12345"), ["red", "green", "blue"])
    human: list[list[str]] = []
    judges: dict[str, list[list[str]]] = {"a": [], "b": []}
    for _ in range(N):
        row = [str(rng.choice(pool)) for pool in pools]
        human.append(row)
        for name in judges:
            judged = []
            for c, pool in enumerate(pools):
                if rng.random() < 0.7:
                    judged.append(row[c])
                elif c == 1:  # near misses on the ordinal scale
                    judged.append(str(min(5, max(1, int(row[c]) + int(rng.choice([-1, 1]))))))
                else:
                    judged.append(str(rng.choice(pool)))
            judges[name].append(judged)
    labels = LabelSet.from_labels(crits, human, judges)
    return labels, {"human": human, **judges}


def _column(rows: list[list[str]], c: int) -> list[str]:
    return [r[c] for r in rows]


def _by_name(block, name):
    return next(c for c in block.criteria if c.name == name)


def test_linear_and_quadratic_weighted_kappa_equal_sklearn() -> None:
    labels, raw = _data()
    result = compute_agreement(labels)
    for j, block in zip(("a", "b"), result.per_judge):
        clarity = _by_name(block, "clarity")
        h, p = _column(raw["human"], 1), _column(raw[j], 1)
        options = list("12345")
        for weights, got in (
            ("linear", clarity.weighted_kappa_linear),
            ("quadratic", clarity.weighted_kappa),
        ):
            expected = cohen_kappa_score(h, p, labels=options, weights=weights)
            assert got == pytest.approx(expected, abs=1e-12)
        assert clarity.weighted_kappa_linear != pytest.approx(clarity.weighted_kappa)
    agg = result.per_judge[0].aggregate
    assert agg.mean_weighted_kappa_linear_macro == pytest.approx(
        _by_name(result.per_judge[0], "clarity").weighted_kappa_linear
    )


def _hand_prf(h: list[str], p: list[str], label: str) -> tuple[float, float, float]:
    tp = sum(a == label and b == label for a, b in zip(h, p))
    predicted = sum(b == label for b in p)
    actual = sum(a == label for a in h)
    precision = tp / predicted if predicted else math.nan
    recall = tp / actual if actual else math.nan
    f1 = 2 * tp / (predicted + actual) if predicted + actual else math.nan
    return precision, recall, f1


def test_macro_and_per_option_scores_equal_hand_counts() -> None:
    labels, raw = _data()
    block = compute_agreement(labels).per_judge[1]
    for c, name, options in (
        (0, "correct", ["MET", "UNMET"]),
        (1, "clarity", list("12345")),
        (2, "tone", ["red", "green", "blue"]),
    ):
        h, p = _column(raw["human"], c), _column(raw["b"], c)
        per = [_hand_prf(h, p, o) for o in options if o in h or o in p]
        got = _by_name(block, name)
        for k, field in enumerate(("macro_precision", "macro_recall", "macro_f1")):
            defined = [x[k] for x in per if not math.isnan(x[k])]
            assert getattr(got, field) == pytest.approx(np.mean(defined), abs=1e-12)
        if name == "correct":
            assert got.per_option is None
            continue
        assert [o.label for o in got.per_option] == options
        for option, label in zip(got.per_option, options):
            precision, recall, f1 = _hand_prf(h, p, label)
            assert option.precision == pytest.approx(precision, abs=1e-12)
            assert option.recall == pytest.approx(recall, abs=1e-12)
            assert option.f1 == pytest.approx(f1, abs=1e-12)
            assert option.support_human == h.count(label)
            assert option.support_judge == p.count(label)
    assert block.aggregate.macro_f1_macro == pytest.approx(
        np.mean([c.macro_f1 for c in block.criteria]), abs=1e-12
    )


def test_unused_option_has_none_not_zero() -> None:
    crit = nominal("tone")
    labels = LabelSet.from_labels(
        (crit,), [["red"], ["green"], ["red"]], {"j": [["red"], ["red"], ["red"]]}
    )
    got = compute_agreement(labels).overall.criteria[0]
    blue = next(o for o in got.per_option if o.label == "blue")
    green = next(o for o in got.per_option if o.label == "green")
    assert (blue.precision, blue.recall, blue.f1) == (None, None, None)
    assert green.precision is None and green.recall == 0.0


def test_pooled_micro_kappa_covers_every_criterion() -> None:
    labels, raw = _data()
    block = compute_agreement(labels).per_judge[0]
    h = [f"{c}:{row[c]}" for c in range(3) for row in raw["human"]]
    p = [f"{c}:{row[c]}" for c in range(3) for row in raw["a"]]
    assert block.aggregate.kappa_micro == pytest.approx(cohen_kappa_score(h, p), abs=1e-12)
    binary_only = cohen_kappa_score(_column(raw["human"], 0), _column(raw["a"], 0))
    assert block.aggregate.binary_micro.kappa == pytest.approx(binary_only, abs=1e-12)
    assert block.aggregate.kappa_micro != pytest.approx(binary_only)


def test_mean_krippendorff_alpha_is_the_mean_over_criteria() -> None:
    labels, raw = _data()
    result = compute_agreement(labels)
    alphas = []
    for c, level, domain in (
        (0, "nominal", ["MET", "UNMET"]),
        (1, "ordinal", list("12345")),
        (2, "nominal", ["red", "green", "blue"]),
    ):
        matrix = np.array(
            [[domain.index(row[c]) for row in raw[j]] for j in ("a", "b")], dtype=float
        )
        alphas.append(
            krippendorff.alpha(
                reliability_data=matrix, level_of_measurement=level, value_domain=range(len(domain))
            )
        )
        if level == "nominal":  # the pairwise table also feeds statsmodels' Fleiss
            table = np.array(
                [[np.sum(matrix[:, i] == k) for k in range(len(domain))] for i in range(N)]
            )
            assert result.inter_judge[c].fleiss_kappa == pytest.approx(fleiss_kappa(table))
    assert result.mean_krippendorff_alpha == pytest.approx(np.mean(alphas), abs=1e-9)


def _fisher(r: float, n: int, variance: float) -> tuple[float, float]:
    z = 1.959963984540054 * math.sqrt(variance)
    return math.tanh(math.atanh(r) - z), math.tanh(math.atanh(r) + z)


def test_correlation_intervals_equal_fisher_z() -> None:
    labels, _ = _data(5)
    scores = compute_agreement(labels).per_judge[0].scores
    n = scores.n
    assert n == N
    pearson, spearman, kendall = scores.pearson, scores.spearman, scores.kendall
    assert pearson.ci == pytest.approx(_fisher(pearson.coefficient, n, 1 / (n - 3)), abs=1e-9)
    assert spearman.ci == pytest.approx(_fisher(spearman.coefficient, n, 1.06 / (n - 3)), abs=1e-9)
    assert kendall.ci == pytest.approx(_fisher(kendall.coefficient, n, 0.437 / (n - 4)), abs=1e-9)
    for c in (pearson, spearman, kendall):
        assert c.ci[0] < c.coefficient < c.ci[1]


def test_pearson_interval_equals_scipy_and_hand_fisher_z() -> None:
    from assay.calibration.stats import correlation

    rng = np.random.default_rng(0)
    x = rng.normal(size=50)
    y = 0.5 * x + rng.normal(scale=0.8, size=50)
    got = correlation(x, y, "pearson")
    r = got.coefficient
    low, high = sps.pearsonr(x, y).confidence_interval(0.95)
    assert got.ci == pytest.approx((low, high), abs=1e-12)
    assert got.ci == pytest.approx(_fisher(r, 50, 1 / 47), abs=1e-9)


def test_rank_interval_undefined_below_its_sample_size() -> None:
    from assay.calibration.stats import correlation

    got = correlation(np.array([1.0, 2, 3, 4]), np.array([1.0, 3, 2, 4]), "kendall")
    assert got.coefficient is not None and got.ci is None
    perfect = correlation(np.arange(6.0), np.arange(6.0), "spearman")
    assert perfect.coefficient == 1.0 and perfect.ci is None


def test_bootstrap_distribution_is_opt_in_and_equals_scipy() -> None:
    rng = np.random.default_rng(11)
    human = rng.integers(0, 2, 50)
    judge = np.where(rng.random(50) < 0.75, human, 1 - human)
    labels = LabelSet(
        criteria=(binary("q"),),
        item_ids=tuple(map(str, range(50))),
        judges=("j",),
        human=human.reshape(1, 50).astype(np.int16),
        votes=judge.reshape(1, 1, 50).astype(np.int16),
    )
    plain = compute_agreement(labels, bootstrap=200, seed=4)
    assert plain.bootstrap.bootstrap_distribution is None
    kept = compute_agreement(labels, bootstrap=200, seed=4, keep_distribution=True)
    dist = kept.bootstrap.bootstrap_distribution
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = sps.bootstrap(
            ((human == judge).astype(float),),
            np.mean,
            n_resamples=200,
            method="percentile",
            rng=np.random.default_rng(4),
        )
    assert dist.accuracy_micro == pytest.approx(list(ref.bootstrap_distribution), abs=1e-12)
    assert len(dist.mean_kappa_macro) == len(dist.rmse) == 200


def _cli(*args: str) -> int:
    try:
        main(["agreement", *args])
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


def test_cli_reports_the_new_statistics(tmp_path, capsys) -> None:
    labels, raw = _data()
    items = [
        {
            "id": str(i),
            "human": dict(zip(("correct", "clarity", "tone"), raw["human"][i])),
            "judges": {j: dict(zip(("correct", "clarity", "tone"), raw[j][i])) for j in "ab"},
        }
        for i in range(N)
    ]
    doc = {
        "criteria": [c.model_dump(exclude_none=True, by_alias=True) for c in labels.criteria],
        "items": items,
    }
    path = tmp_path / "labels.json"
    path.write_text(json.dumps(doc))
    args = ["--format", "json", "--bootstrap", "20", "--seed", "1", "--bootstrap-distribution"]
    assert _cli(str(path), *args) == 0
    out = json.loads(capsys.readouterr().out)
    assert len(out["bootstrap"]["bootstrap_distribution"]["accuracy_micro"]) == 20
    clarity = next(c for c in out["overall"]["criteria"] if c["name"] == "clarity")
    assert clarity["weighted_kappa_linear"] is not None
    assert out["mean_krippendorff_alpha"] is not None
    assert out["overall"]["scores"]["pearson"]["ci"] is not None
    assert _cli(str(path)) == 0
    text = capsys.readouterr().out
    assert "LWK" in text and "linear" in text and "all criteria pooled)" in text
    assert "Mean Krippendorff's alpha" in text
