"""compute_agreement end to end: numbers against scikit-learn / scipy / krippendorff /
statsmodels on pairs filtered independently here, plus every seed-002 edge case."""

from __future__ import annotations

import itertools
import math
import warnings

import krippendorff
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps
from sklearn.metrics import accuracy_score, cohen_kappa_score, matthews_corrcoef
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss

from assay.calibration import (
    Aggregation,
    LabelSet,
    compute_agreement,
    consensus,
    labels_from_data,
    weighted_scores,
)
from assay.calibration.model import FAILED, MISSING
from assay.errors import CalibrationError, UsageError

from .builders import binary, document, label_sets, nominal, ordinal

MODES = ("exclude", "as_unmet", "as_category")


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


def _none_or(reference: float) -> float | None:
    return None if math.isnan(reference) else reference


# --------------------------------------------------------------------------- independent pairing


def reference_pairs(criterion, human_labels, judge_labels, errored, mode):
    """Re-derive the (human, judge) label pairs of one criterion from the mode rules, as strings."""
    abstain = (
        {"CANNOT_ASSESS"}
        if criterion.options is None
        else {o.label for o in criterion.options if o.na}
    )
    real = (
        ["MET", "UNMET"]
        if criterion.options is None
        else [o.label for o in criterion.options if not o.na]
    )
    if criterion.options is None:
        worst = "UNMET"
    else:
        values = {o.label: o.value for o in criterion.options if not o.na}
        if all(v is None for v in values.values()):
            worst = real[0]
        elif criterion.weight >= 0:
            worst = min(real, key=lambda lab: (values[lab], real.index(lab)))
        else:
            worst = min(real, key=lambda lab: (-values[lab], real.index(lab)))
    category = sorted(abstain)[0] if len(abstain) == 1 else "NA"
    labels = list(real) + ([category] if mode == "as_category" and abstain else [])
    out_t, out_p = [], []
    for h, j, err in zip(human_labels, judge_labels, errored):
        if err or h is None or j is None:
            continue
        pair = []
        for v in (h, j):
            if v in abstain:
                if mode == "exclude":
                    break
                v = worst if mode == "as_unmet" else category
            pair.append(labels.index(v))
        if len(pair) == 2:
            out_t.append(pair[0])
            out_p.append(pair[1])
    return np.array(out_t, dtype=int), np.array(out_p, dtype=int), labels


def decode(criterion, codes):
    return [None if c < 0 else criterion.labels[c] for c in codes]


@settings(max_examples=80, deadline=None)
@given(label_sets(), st.sampled_from(MODES))
def test_every_criterion_statistic_matches_sklearn_and_scipy(labels, mode):
    if mode == "as_category" and any(
        c.kind == "ordinal" and any(o.na for o in c.options) for c in labels.criteria
    ):
        with pytest.raises(UsageError, match="ordinal with an NA option"):
            compute_agreement(labels, cannot_assess_mode=mode, na_mode=mode)
        return
    result = compute_agreement(labels, cannot_assess_mode=mode, na_mode=mode)
    assert result.cannot_assess_mode == mode and result.na_mode == mode
    total_correct = total_n = 0
    for j, block in enumerate(result.per_judge):
        for c, (criterion, got) in enumerate(zip(labels.criteria, block.criteria)):
            if (
                criterion.kind == "ordinal"
                and mode == "as_category"
                and any(o.na for o in criterion.options)
            ):
                pass  # categories include NA; checked through accuracy/kappa below
            t, p, names = reference_pairs(
                criterion,
                decode(criterion, labels.human[c]),
                decode(criterion, labels.votes[j, c]),
                labels.item_errored,
                mode,
            )
            assert got.n_samples == len(t)
            assert got.has_data == (len(t) > 0)
            if len(t) == 0:
                assert got.accuracy is None and got.kappa is None and not got.is_degenerate
                continue
            assert got.accuracy == pytest.approx(accuracy_score(t, p))
            kappa = _none_or(_quiet(cohen_kappa_score, t, p, labels=list(range(len(names)))))
            assert got.kappa == (pytest.approx(kappa) if kappa is not None else None)
            assert got.is_degenerate == (kappa is None)
            assert got.confusion_matrix.labels == names
            if criterion.kind == "binary":
                mt, mp = (t == 0).astype(int), (p == 0).astype(int)
                if len(set(mt)) > 1 and len(set(mp)) > 1:
                    assert got.phi == pytest.approx(matthews_corrcoef(mt, mp))
                else:
                    assert got.phi is None
            if criterion.kind == "ordinal":
                m = len([o for o in criterion.options if not o.na])
                on = (t < m) & (p < m)
                qwk = (
                    _none_or(
                        _quiet(
                            cohen_kappa_score,
                            t[on],
                            p[on],
                            labels=list(range(m)),
                            weights="quadratic",
                        )
                    )
                    if on.any()
                    else None
                )
                assert got.weighted_kappa == (pytest.approx(qwk) if qwk is not None else None)
                if on.sum() >= 3:
                    values = np.array([o.value for o in criterion.options if not o.na])
                    vt, vp = values[t[on]], values[p[on]]
                    if np.ptp(vt) > 0 and np.ptp(vp) > 0:
                        rho = sps.spearmanr(vp, vt).statistic
                        assert got.spearman.coefficient == pytest.approx(rho)
            if j == 0:
                total_correct += int(np.sum(t == p))
                total_n += len(t)
    first = result.per_judge[0].aggregate
    assert first.n_samples == total_n
    assert first.accuracy_micro == (pytest.approx(total_correct / total_n) if total_n else None)


# --------------------------------------------------------------------------- modes, by hand


def _one_binary(human, judge, **kw):
    labels = LabelSet.from_labels([binary("q")], [[h] for h in human], {"j": [[v] for v in judge]})
    return compute_agreement(labels, **kw)


def test_modes_on_cannot_assess_are_recorded_and_change_the_pairs():
    human = ["MET", "MET", "UNMET", "CANNOT_ASSESS", "UNMET", "MET"]
    judge = ["MET", "CANNOT_ASSESS", "UNMET", "CANNOT_ASSESS", "MET", "MET"]
    exclude = _one_binary(human, judge)
    assert exclude.overall.criteria[0].n_samples == 4
    assert exclude.overall.criteria[0].accuracy == pytest.approx(3 / 4)
    cov = exclude.overall.criteria[0].coverage
    assert (cov.n_total, cov.n_covered, cov.n_judge_abstain, cov.n_human_abstain) == (6, 4, 2, 1)
    assert cov.coverage == pytest.approx(4 / 6)
    unmet = _one_binary(human, judge, cannot_assess_mode="as_unmet")
    assert unmet.cannot_assess_mode == "as_unmet"
    t = [0, 0, 1, 1, 1, 0]
    p = [0, 1, 1, 1, 0, 0]
    assert unmet.overall.criteria[0].kappa == pytest.approx(cohen_kappa_score(t, p, labels=[0, 1]))
    category = _one_binary(human, judge, cannot_assess_mode="as_category")
    t3 = [0, 0, 1, 2, 1, 0]
    p3 = [0, 2, 1, 2, 0, 0]
    got = category.overall.criteria[0]
    assert got.confusion_matrix.labels == ["MET", "UNMET", "CANNOT_ASSESS"]
    assert got.kappa == pytest.approx(cohen_kappa_score(t3, p3, labels=[0, 1, 2]))
    assert got.accuracy == pytest.approx(4 / 6)


def test_na_as_unmet_maps_to_the_worst_option_weight_aware():
    positive = nominal("n", labels=("low", "high"), na=True, values=(0.2, 0.9))
    human = [["none"], ["high"]]
    judge = [["low"], ["none"]]
    result = compute_agreement(
        LabelSet.from_labels([positive], human, {"j": judge}), na_mode="as_unmet"
    )
    # NA -> "low" (lowest value) on both sides: pairs (low, low), (high, low)
    assert result.overall.criteria[0].confusion_matrix.matrix == [[1, 0], [1, 0]]
    penalty = positive.model_copy(update={"weight": -1.0})
    result = compute_agreement(
        LabelSet.from_labels([penalty], human, {"j": judge}), na_mode="as_unmet"
    )
    # for a penalty criterion the worst answer is the highest value: NA -> "high"
    assert result.overall.criteria[0].confusion_matrix.matrix == [[0, 0], [1, 1]]


def test_ordinal_na_as_category_is_refused_naming_the_criterion():
    """Seed 002: NA as its own category on an ordinal criterion with an NA option raises."""
    crit = ordinal("clarity", labels="123", na=True)
    human = [["1"], ["2"], ["n/a"], ["3"], ["3"]]
    judge = [["1"], ["3"], ["n/a"], ["n/a"], ["3"]]
    labels = LabelSet.from_labels([crit], human, {"j": judge})
    with pytest.raises(UsageError, match="criterion 'clarity' is ordinal with an NA option"):
        compute_agreement(labels, na_mode="as_category")
    # exclude still works, and an ordinal criterion without NA accepts as_category
    assert compute_agreement(labels, na_mode="exclude").overall is not None
    plain = LabelSet.from_labels(
        [ordinal("o", labels="123", na=False)], [["1"], ["2"]], {"j": [["1"], ["3"]]}
    )
    assert compute_agreement(plain, na_mode="as_category").na_mode == "as_category"


def test_bad_mode_is_a_usage_error():
    labels = LabelSet.from_labels([binary("q")], [["MET"]], {"j": [["MET"]]})
    with pytest.raises(UsageError, match="cannot_assess_mode"):
        compute_agreement(labels, cannot_assess_mode="as_worst")


# --------------------------------------------------------------------------- seed-002 edge cases


def test_degenerate_single_class_is_none_not_zero():
    result = _one_binary(["MET"] * 5, ["MET"] * 5)
    got = result.overall.criteria[0]
    assert got.accuracy == 1.0
    assert got.kappa is None and got.is_degenerate and got.has_data
    assert got.kappa_interpretation == "undefined"
    assert got.phi is None  # sklearn's matthews_corrcoef says 0.0 here
    with pytest.warns(UserWarning, match="single label"):  # what assay guards against
        assert matthews_corrcoef([1] * 5, [1] * 5) == 0.0
    assert got.fpr is None  # no human UNMET: false-positive rate undefined
    assert result.overall.aggregate.mean_kappa_macro is None
    assert any("Degenerate (single-class)" in w and "q" in w for w in result.warnings)


def test_every_item_abstained_is_no_data_not_degenerate():
    result = _one_binary(["MET", "UNMET", "MET"], ["CANNOT_ASSESS"] * 3)
    got = result.overall.criteria[0]
    assert not got.has_data and not got.is_degenerate
    assert got.n_samples == 0
    assert (got.accuracy, got.kappa, got.precision, got.recall, got.f1, got.phi) == (None,) * 6
    assert got.confusion_matrix is None
    assert got.coverage.coverage == 0.0 and got.coverage.judge_abstain_rate == 1.0
    assert result.overall.aggregate.accuracy_micro is None
    assert any("No usable pair" in w for w in result.warnings)


def test_fewer_than_three_samples_leave_correlations_undefined():
    result = _one_binary(["MET", "UNMET"], ["MET", "MET"])
    scores = result.overall.scores
    assert scores.n == 2
    for corr in (scores.spearman, scores.kendall, scores.pearson):
        assert corr.coefficient is None and corr.p_value is None
        assert corr.interpretation == "insufficient data"
    assert scores.rmse == pytest.approx(math.sqrt(0.5))
    assert any("correlations need at least 3" in w for w in result.warnings)


def test_errored_items_and_failed_cells_are_excluded_and_counted():
    data = document(
        [binary("a"), binary("b")],
        [
            {"id": "1", "human": {"a": "MET", "b": "UNMET"}, "judge": {"a": "MET", "b": "UNMET"}},
            {
                "id": "2",
                "human": {"a": "MET", "b": "MET"},
                "judge": {"a": "UNMET", "b": "UNMET"},
                "error": "infrastructure: timeout",
            },
            {
                "id": "3",
                "human": {"a": "UNMET", "b": "MET"},
                "judge": {"a": "UNMET", "b": {"error": "parse: not JSON"}},
            },
        ],
    )
    result = compute_agreement(labels_from_data(data))
    assert result.n_errored_items == 1 and result.n_items_used == 2
    cov = result.overall.aggregate.coverage
    assert (cov.n_total, cov.n_errored, cov.n_failed, cov.n_covered) == (6, 2, 1, 3)
    assert cov.error_rate == pytest.approx(3 / 6)
    assert result.overall.criteria[0].coverage.n_errored == 1
    assert result.overall.criteria[0].accuracy == 1.0  # the errored item's wrong verdict is out
    assert result.overall.scores.n == 2
    assert any("grading errored" in w for w in result.warnings)
    assert any("failed" in w for w in result.warnings)


def test_mixed_binary_and_multichoice_rubric_pools_all_criteria():
    """Reference §8.1/§8.3: micro accuracy counts every criterion (not only binary ones) and
    the macro kappa averages one statistic (unweighted Cohen) with QWK reported separately."""
    crits = [binary("b"), ordinal("o", labels="123", na=False), nominal("n")]
    human = [
        ["MET", "1", "red"],
        ["UNMET", "2", "green"],
        ["MET", "3", "blue"],
        ["UNMET", "3", "red"],
    ]
    judge = [["MET", "1", "red"], ["MET", "3", "green"], ["MET", "3", "red"], ["UNMET", "2", "red"]]
    result = compute_agreement(LabelSet.from_labels(crits, human, {"j": judge}))
    agg = result.overall.aggregate
    assert agg.accuracy_micro == pytest.approx(8 / 12)
    assert agg.accuracy_macro == pytest.approx(np.mean([3 / 4, 2 / 4, 3 / 4]))
    kappas = [
        cohen_kappa_score([0, 1, 0, 1], [0, 0, 0, 1], labels=[0, 1]),
        cohen_kappa_score([0, 1, 2, 2], [0, 2, 2, 1], labels=[0, 1, 2]),
        cohen_kappa_score([0, 1, 2, 0], [0, 1, 0, 0], labels=[0, 1, 2]),
    ]
    assert agg.mean_kappa_macro == pytest.approx(np.mean(kappas))
    assert agg.mean_weighted_kappa_macro == pytest.approx(
        cohen_kappa_score([0, 1, 2, 2], [0, 2, 2, 1], labels=[0, 1, 2], weights="quadratic")
    )
    assert agg.binary_micro is not None and agg.binary_micro.n_criteria == 1
    assert agg.binary_micro.n_samples == 4
    assert (result.n_binary, result.n_ordinal, result.n_nominal) == (1, 1, 1)
    assert any("Mixed rubric" in w for w in result.warnings)


def test_no_human_label_and_one_rater_is_a_calibration_error():
    labels = LabelSet.from_labels([binary("q")], [[None]], {"j": [["MET"]]})
    with pytest.raises(CalibrationError, match="no item carries a human label"):
        compute_agreement(labels)


def test_no_judges_is_a_calibration_error():
    labels = LabelSet.from_labels([binary("q")], [["MET"]], {})
    with pytest.raises(CalibrationError, match="no judge verdicts"):
        compute_agreement(labels)


def test_constant_scores_give_undefined_correlation_and_bias_test():
    result = _one_binary(["MET"] * 4, ["MET"] * 4)
    assert result.overall.scores.spearman.interpretation == "undefined"
    assert result.overall.scores.bias.p_value is None
    assert result.overall.scores.bias.mean_bias == 0.0


# --------------------------------------------------------------------------- scores


def test_weighted_score_skips_abstentions_in_numerator_and_denominator():
    """Reference §1.5: MET(w=5) + CANNOT_ASSESS(w=10) + UNMET(w=3) -> 5 / 8 = 0.625."""
    crits = [binary("a", 5), binary("b", 10), binary("c", 3)]
    codes = np.array([[0], [2], [1]])
    assert weighted_scores(crits, codes)[0] == pytest.approx(0.625)


def test_weighted_score_penalties_and_nothing_scored():
    crits = [binary("good", 2), binary("bad", -1)]
    assert weighted_scores(crits, np.array([[0], [0]]))[0] == pytest.approx(0.5)  # (2 - 1) / 2
    only_penalty = [binary("bad", -2)]
    assert weighted_scores(only_penalty, np.array([[0]]))[0] == pytest.approx(0.0)
    assert weighted_scores(only_penalty, np.array([[1]]))[0] == pytest.approx(1.0)
    assert math.isnan(weighted_scores(crits, np.array([[2], [MISSING]]))[0])


def test_supplied_scores_override_derived_ones():
    data = document(
        [binary("a")],
        [
            {
                "id": str(i),
                "human": {"a": "MET"},
                "human_score": h,
                "judge": {"a": "MET"},
                "judge_scores": {"judge": j},
            }
            for i, (h, j) in enumerate([(0.9, 0.8), (0.5, 0.7), (0.1, 0.2), (0.4, 0.4)])
        ],
    )
    result = compute_agreement(labels_from_data(data))
    h = np.array([0.9, 0.5, 0.1, 0.4])
    j = np.array([0.8, 0.7, 0.2, 0.4])
    assert result.overall.scores.pearson.coefficient == pytest.approx(sps.pearsonr(j, h).statistic)
    assert result.overall.scores.bias.p_value == pytest.approx(sps.ttest_rel(j, h).pvalue)


# --------------------------------------------------------------------------- consensus


def test_binary_majority_tie_breaks_to_the_worst_case():
    votes = np.array([[0, 0, 2], [1, 0, 2]])  # item 0 tie, item 1 MET, item 2 all abstain
    assert consensus(binary("p"), votes).tolist() == [1, 0, 2]
    assert consensus(binary("n", -1), votes).tolist() == [0, 0, 2]  # penalty: tie -> MET
    assert consensus(binary("p"), votes, strategy=Aggregation(binary="unanimous")).tolist() == [
        1,
        0,
        2,
    ]
    weighted = consensus(binary("p"), votes, np.array([2.0, 1.0]), Aggregation(binary="weighted"))
    assert weighted.tolist() == [0, 0, 2]


def test_ordinal_median_snaps_and_nominal_mode():
    crit = ordinal("o", labels="12345", na=True)
    votes = np.array([[0, 5, 1], [1, 5, FAILED], [4, 2, FAILED]])
    # item 0: values 0, .25, 1 -> median .25 -> "2"; item 1: NA, NA, "3" -> "3"; item 2: "2"
    assert consensus(crit, votes).tolist() == [1, 2, 1]
    all_failed = np.array([[FAILED], [FAILED]])
    assert consensus(crit, all_failed).tolist() == [FAILED]
    nom = nominal("n")
    assert consensus(nom, np.array([[0, 2], [1, 2], [1, 0]])).tolist() == [1, 2]


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.lists(st.integers(-2, 5), min_size=6, max_size=6), min_size=2, max_size=5),
    st.randoms(use_true_random=False),
)
def test_consensus_does_not_depend_on_judge_order(rows, rnd):
    crit = ordinal("o", labels="12345", na=True)
    votes = np.array(rows)
    order = list(range(len(rows)))
    rnd.shuffle(order)
    shuffled = votes[order]
    for strategy in (
        Aggregation(ordinal="median"),
        Aggregation(ordinal="mean"),
        Aggregation(ordinal="mode"),
    ):
        assert (
            consensus(crit, votes, strategy=strategy).tolist()
            == consensus(crit, shuffled, strategy=strategy).tolist()
        )


def test_single_judge_overall_equals_its_per_judge_block(simple_doc):
    simple_doc["items"] = [
        {**item, "judges": {"j1": item["judges"]["j1"]}} for item in simple_doc["items"]
    ]
    result = compute_agreement(labels_from_data(simple_doc))
    assert result.overall.model_dump(exclude={"rater"}) == result.per_judge[0].model_dump(
        exclude={"rater"}
    )
    assert result.inter_judge is None


def test_recorded_consensus_is_used_when_present(simple_doc):
    for item in simple_doc["items"]:
        item["consensus"] = {"correct": "UNMET"}
    result = compute_agreement(labels_from_data(simple_doc))
    assert "recorded" in result.consensus
    assert result.overall.criteria[0].accuracy == pytest.approx(1 / 2)


# --------------------------------------------------------------------------- inter-judge


def test_inter_judge_matches_krippendorff_and_statsmodels():
    rng = np.random.default_rng(3)
    crit = binary("q")
    n, judges = 40, 4
    votes = rng.integers(0, 3, size=(judges, 1, n)).astype(np.int16)
    votes[0, 0, :4] = MISSING
    votes[1, 0, 4:6] = FAILED
    human = rng.integers(0, 2, size=(1, n)).astype(np.int16)
    labels = LabelSet(
        criteria=(crit,),
        item_ids=tuple(map(str, range(n))),
        judges=tuple(f"j{j}" for j in range(judges)),
        human=human,
        votes=votes,
    )
    for mode in MODES:
        result = compute_agreement(labels, cannot_assess_mode=mode)
        got = result.inter_judge[0]
        codes = votes[:, 0, :].astype(float)
        codes[codes < 0] = np.nan
        if mode == "exclude":
            codes[codes == 2] = np.nan
        elif mode == "as_unmet":
            codes[codes == 2] = 1
        reference = krippendorff.alpha(reliability_data=codes, level_of_measurement="nominal")
        assert got.krippendorff_alpha == pytest.approx(reference)
        complete = ~np.any(np.isnan(codes), axis=0)
        k = 3 if mode == "as_category" else 2
        table = np.array(
            [np.bincount(codes[:, i].astype(int), minlength=k) for i in np.nonzero(complete)[0]]
        )
        assert got.fleiss_n_items == len(table)
        assert got.fleiss_kappa == pytest.approx(sm_fleiss(table, method="fleiss"))
        pairwise = []
        for a, b in itertools.combinations(range(judges), 2):
            both = ~np.isnan(codes[a]) & ~np.isnan(codes[b])
            pairwise.append(
                cohen_kappa_score(codes[a][both], codes[b][both], labels=list(range(k)))
            )
        assert got.mean_pairwise_kappa == pytest.approx(np.mean(pairwise))


def test_ordinal_inter_judge_alpha_uses_the_full_scale():
    crit = ordinal("o", labels="12345", na=False)
    votes = np.array([[[0, 1, 4, 4, 0]], [[0, 1, 4, 3, 1]], [[1, 1, 4, 4, 0]]], dtype=np.int16)
    human = np.zeros((1, 5), dtype=np.int16)
    labels = LabelSet(
        criteria=(crit,), item_ids=tuple("abcde"), judges=("x", "y", "z"), human=human, votes=votes
    )
    got = compute_agreement(labels).inter_judge[0]
    assert got.alpha_level == "ordinal"
    reference = krippendorff.alpha(
        reliability_data=votes[:, 0, :].astype(float),
        level_of_measurement="ordinal",
        value_domain=[0, 1, 2, 3, 4],
    )
    assert got.krippendorff_alpha == pytest.approx(reference)
    values = votes[:, 0, :] / 4.0
    assert got.krippendorff_alpha_interval == pytest.approx(
        krippendorff.alpha(reliability_data=values, level_of_measurement="interval")
    )


def test_abstention_agreement_is_mode_independent_and_matches_sklearn():
    crits = [binary("a"), binary("b"), ordinal("o", labels="123", na=True)]
    human = [
        ["MET", "CANNOT_ASSESS", "1"],
        ["CANNOT_ASSESS", "UNMET", "n/a"],
        ["MET", "MET", "2"],
        ["UNMET", None, "n/a"],
    ]
    judge = [
        ["CANNOT_ASSESS", "CANNOT_ASSESS", "n/a"],
        ["CANNOT_ASSESS", "MET", "n/a"],
        ["MET", "MET", "2"],
        ["UNMET", "MET", "3"],
    ]
    labels = LabelSet.from_labels(crits, human, {"j": judge})
    blocks = [
        compute_agreement(
            labels, cannot_assess_mode=m, na_mode="as_unmet" if m == "as_category" else m
        ).overall.abstention
        for m in MODES
    ]
    assert blocks[0] == blocks[1] == blocks[2]
    ca, na = blocks[0]
    assert (ca.kind, ca.n_criteria, ca.n_pairs) == ("cannot_assess", 2, 7)
    # flags of criterion a over items 0-3, then b over items 0-2 (item 3 has no human label)
    h = [0, 1, 0, 0, 1, 0, 0]
    j = [1, 1, 0, 0, 1, 0, 0]
    assert (ca.human_abstain, ca.judge_abstain, ca.both_abstain, ca.judge_only, ca.human_only) == (
        2,
        3,
        2,
        1,
        0,
    )
    assert ca.kappa == pytest.approx(cohen_kappa_score(h, j, labels=[0, 1]))
    assert (na.kind, na.n_pairs, na.both_abstain, na.judge_only, na.human_only) == (
        "na",
        4,
        1,
        1,
        1,
    )
    assert na.kappa == pytest.approx(cohen_kappa_score([0, 1, 0, 1], [1, 1, 0, 0], labels=[0, 1]))


def _reference_score(criteria, codes, policy="skip"):
    """Reference §1.5 written out as a plain loop (the independent check of weighted_scores)."""
    total = positive = negative = 0.0
    for criterion, code in zip(criteria, codes):
        if code < 0:
            continue
        if code in criterion.abstain_codes:
            if policy == "skip":
                continue
            code = criterion.worst_code if policy == "worst" else None
        if code is None:
            value = 0.0
        elif criterion.options is None:
            value = 1.0 if code == 0 else 0.0
        else:
            value = criterion.options[code].value
            if value is None:
                continue
        total += value * criterion.weight
        if criterion.weight > 0:
            positive += criterion.weight
        elif criterion.weight < 0:
            negative += -criterion.weight
    if positive > 0:
        return min(1.0, max(0.0, total / positive))
    if negative > 0:
        return min(1.0, max(0.0, 1.0 + total / negative))
    return None


@settings(max_examples=150, deadline=None)
@given(label_sets(), st.sampled_from(["skip", "zero", "worst"]))
def test_weighted_scores_match_the_reference_formula(labels, policy):
    got = weighted_scores(labels.criteria, labels.human, policy)
    for i in range(labels.n_items):
        expected = _reference_score(labels.criteria, labels.human[:, i], policy)
        if expected is None:
            assert math.isnan(got[i])
        else:
            assert got[i] == pytest.approx(expected)
            assert 0.0 <= got[i] <= 1.0


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.lists(st.sampled_from([0, 1, 2, MISSING, FAILED]), min_size=1, max_size=1),
        min_size=1,
        max_size=6,
    ),
    st.sampled_from([1.0, -1.0]),
)
def test_binary_majority_matches_a_head_count(rows, weight):
    crit = binary("b", weight)
    votes = np.array(rows)
    got = int(consensus(crit, votes)[0])
    column = [r[0] for r in rows]
    met, unmet = column.count(0), column.count(1)
    if all(v < 0 for v in column):
        expected = FAILED if FAILED in column else MISSING
    elif met + unmet == 0:
        expected = 2  # every real vote abstained
    elif met == unmet:
        expected = 1 if weight >= 0 else 0
    else:
        expected = 0 if met > unmet else 1
    assert got == expected


def test_penalty_ordinal_mode_tie_breaks_to_the_highest_value():
    crit = ordinal("o", labels="123", na=True, weight=-1.0)
    votes = np.array([[0, 3], [2, 3]])  # item 0: "1" vs "3" tie; item 1: both NA
    assert consensus(crit, votes, strategy=Aggregation(ordinal="mode")).tolist() == [2, 3]
    positive = ordinal("p", labels="123", na=True)
    assert consensus(positive, votes, strategy=Aggregation(ordinal="mode")).tolist() == [0, 3]
