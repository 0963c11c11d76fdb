"""Every statistic against an independent implementation, on random data (hypothesis).

References: scikit-learn (kappa, confusion matrix, precision/recall/F1, MCC, MSE/MAE),
scipy.stats (spearmanr, kendalltau, pearsonr, ttest_rel), krippendorff (alpha) and statsmodels
(fleiss_kappa). Generated data includes ties, single-class columns and missing ratings; the
reference's NaN (or its misleading 0.0) must come back as None.
"""

from __future__ import annotations

import math
import warnings

import krippendorff
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy import stats as sps
from sklearn.metrics import (
    cohen_kappa_score,
    confusion_matrix,
    matthews_corrcoef,
    mean_absolute_error,
    mean_squared_error,
    precision_recall_fscore_support,
)
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss

from assay.calibration import stats

SETTINGS = settings(max_examples=150, deadline=None)


def _ref(fn, *args, **kwargs):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


def _same(ours: float | None, reference: float) -> None:
    if ours is None:
        assert math.isnan(reference), f"None but the reference says {reference}"
    else:
        assert not math.isnan(reference)
        assert ours == pytest.approx(reference, abs=1e-9)


@st.composite
def label_pairs(draw, max_k: int = 6):
    """Two label vectors over 0..k-1; sometimes single-class, often with many ties."""
    k = draw(st.integers(2, max_k))
    n = draw(st.integers(1, 40))
    width = draw(st.sampled_from([1, 2, k]))  # 1 => a single-class column
    t = draw(st.lists(st.integers(0, width - 1), min_size=n, max_size=n))
    p = draw(st.lists(st.integers(0, k - 1), min_size=n, max_size=n))
    if draw(st.booleans()):
        p = list(t) if draw(st.booleans()) else p
    return k, np.array(t), np.array(p)


@SETTINGS
@given(label_pairs(), st.sampled_from([None, "linear", "quadratic"]))
def test_cohen_kappa_matches_sklearn_with_full_labels(data, weights):
    k, t, p = data
    reference = _ref(cohen_kappa_score, t, p, labels=list(range(k)), weights=weights)
    _same(stats.cohen_kappa(t, p, labels=range(k), weights=weights), reference)


@SETTINGS
@given(label_pairs())
def test_vectorised_kappa_from_counts_matches_sklearn(data):
    """The bootstrap's count-based kappa and quadratic kappa equal scikit-learn's."""
    k, t, p = data
    counts = confusion_matrix(t, p, labels=list(range(k)))
    for weights, matrix in ((None, None), ("quadratic", stats.quadratic_weights(k))):
        reference = _ref(cohen_kappa_score, t, p, labels=list(range(k)), weights=weights)
        ours = float(stats.kappa_from_confusion(counts, matrix))
        if math.isnan(reference):
            assert math.isnan(ours)
        else:
            assert ours == pytest.approx(reference, abs=1e-9)


@st.composite
def rater_codes(draw, max_k: int = 6):
    """Raters x items codes over 0..k-1 with -1 for a missing rating; often much agreement."""
    k = draw(st.integers(1, max_k))
    raters, items = draw(st.integers(2, 6)), draw(st.integers(0, 30))
    truth = draw(st.lists(st.integers(0, k - 1), min_size=items, max_size=items))
    rows = []
    for _ in range(raters):
        row = [
            draw(st.sampled_from([value, value, -1, draw(st.integers(0, k - 1))]))
            for value in truth
        ]
        rows.append(row)
    return k, np.array(rows, dtype=np.int64).reshape(raters, items)


@SETTINGS
@given(rater_codes())
def test_pairwise_kappas_are_sklearns_bit_for_bit(data):
    """All pairs at once (inter-judge agreement: 500 judges are 124,750 pairs, once one
    scikit-learn call each) give exactly scikit-learn's value for each pair, not nearly."""
    k, codes = data
    expected = []
    for a in range(len(codes)):
        for b in range(a + 1, len(codes)):
            both = (codes[a] >= 0) & (codes[b] >= 0)
            if not both.any():  # no item in common: undefined, as stats.cohen_kappa says
                expected.append(None)
                continue
            value = _ref(cohen_kappa_score, codes[a][both], codes[b][both], labels=list(range(k)))
            expected.append(None if math.isnan(value) else value)
    assert stats.pairwise_cohen_kappas(codes, k) == expected


def test_quadratic_kappa_uses_the_full_option_list():
    """Reference §8.2: without labels= sklearn weighs by the ranks of observed labels only.

    On a 5-point scale where nobody picked option 2, 0 vs 3 is 3 steps apart; sklearn without
    labels sees ranks 0 and 2 (2 steps) and reports a different kappa.
    """
    t = np.array([0, 0, 1, 3, 4, 4, 1, 3])
    p = np.array([0, 1, 1, 4, 3, 4, 0, 3])
    full = stats.cohen_kappa(t, p, labels=range(5), weights="quadratic")
    assert full == pytest.approx(
        cohen_kappa_score(t, p, labels=[0, 1, 2, 3, 4], weights="quadratic")
    )
    observed_only = cohen_kappa_score(t, p, weights="quadratic")
    assert full != pytest.approx(observed_only)


@SETTINGS
@given(label_pairs(max_k=4))
def test_confusion_matrix_matches_sklearn(data):
    k, t, p = data
    assert np.array_equal(stats.confusion(t, p, k), confusion_matrix(t, p, labels=list(range(k))))


@SETTINGS
@given(st.lists(st.tuples(st.integers(0, 1), st.integers(0, 1)), min_size=1, max_size=40))
def test_met_precision_recall_f1_and_phi(pairs):
    t = np.array([a for a, _ in pairs])
    p = np.array([b for _, b in pairs])
    precision, recall, f1 = stats.met_scores(t, p)
    ref = _ref(
        precision_recall_fscore_support, t, p, labels=[1], average=None, zero_division=np.nan
    )
    _same(precision, ref[0][0])
    _same(recall, ref[1][0])
    _same(f1, ref[2][0])
    phi = stats.phi(t, p)
    if len(set(t)) < 2 or len(set(p)) < 2:
        assert phi is None  # sklearn reports a misleading 0.0 here
    else:
        _same(phi, _ref(matthews_corrcoef, t, p))


finite = st.floats(min_value=-1e3, max_value=1e3, allow_nan=False, allow_infinity=False)


@st.composite
def paired_floats(draw):
    n = draw(st.integers(0, 30))
    pool = draw(st.lists(finite, min_size=1, max_size=5))  # few distinct values => ties
    xs = draw(st.lists(st.sampled_from(pool) | finite, min_size=n, max_size=n))
    ys = draw(st.lists(st.sampled_from(pool) | finite, min_size=n, max_size=n))
    return np.array(xs, dtype=float), np.array(ys, dtype=float)


@SETTINGS
@given(paired_floats(), st.sampled_from(["spearman", "kendall", "pearson"]))
def test_correlations_match_scipy(data, method):
    x, y = data
    result = stats.correlation(x, y, method)
    assert result.n == len(x)
    if len(x) < 3:
        assert (result.coefficient, result.p_value, result.interpretation) == (
            None,
            None,
            "insufficient data",
        )
        return
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        assert result.coefficient is None and result.p_value is None
        return
    # scale spread guards near-constant input the way scipy itself warns about
    assume(np.ptp(x) > 1e-6 and np.ptp(y) > 1e-6)
    func = {"spearman": sps.spearmanr, "kendall": sps.kendalltau, "pearson": sps.pearsonr}[method]
    ref = _ref(func, x, y)
    _same(result.coefficient, float(ref.statistic))
    if result.p_value is not None:
        assert result.p_value == pytest.approx(float(ref.pvalue), rel=1e-7, abs=1e-12)


@SETTINGS
@given(paired_floats())
def test_rmse_mae_match_sklearn(data):
    x, y = data
    if len(x) == 0:
        assert stats.rmse(x, y) is None and stats.mae(x, y) is None
        return
    assert stats.rmse(x, y) == pytest.approx(math.sqrt(mean_squared_error(x, y)))
    assert stats.mae(x, y) == pytest.approx(mean_absolute_error(x, y))


@SETTINGS
@given(paired_floats())
def test_systematic_bias_matches_scipy_ttest_rel(data):
    pred, true = data
    bias = stats.systematic_bias(pred, true)
    n = len(pred)
    assert bias.n == n
    if n == 0:
        assert bias.mean_bias is None and bias.direction is None
        return
    diff = pred - true
    assert bias.mean_bias == pytest.approx(float(np.mean(diff)))
    if n == 1:
        assert bias.p_value is None and bias.std_bias is None
        return
    sd = float(np.std(diff, ddof=1))
    assert bias.std_bias == pytest.approx(sd)
    if sd <= 1e-12 * max(1.0, abs(float(np.mean(diff)))):
        assert bias.p_value is None and bias.is_significant is None and bias.effect_size is None
        return
    ref = sps.ttest_rel(pred, true)
    assert bias.p_value == pytest.approx(float(ref.pvalue), rel=1e-7, abs=1e-300)
    assert bias.t_statistic == pytest.approx(float(ref.statistic))
    lo, hi = sps.t.interval(0.95, n - 1, loc=np.mean(diff), scale=sd / math.sqrt(n))
    assert (bias.ci_low, bias.ci_high) == (pytest.approx(lo), pytest.approx(hi))
    assert bias.effect_size == pytest.approx(np.mean(diff) / sd)
    assert bias.is_significant == (ref.pvalue < 0.05)


def test_bias_float_noise_is_not_significant():
    """Reference §3.10: [0.8, 0.7, 0.9] vs [0.7, 0.6, 0.8] differ by 0.1 up to float noise;
    scipy alone reports p ~ 1e-31. The difference does not vary, so the test is undefined."""
    bias = stats.systematic_bias(np.array([0.8, 0.7, 0.9]), np.array([0.7, 0.6, 0.8]))
    assert bias.mean_bias == pytest.approx(0.1)
    assert bias.p_value is None and bias.is_significant is None and bias.effect_size is None
    assert bias.direction == "positive"


# --------------------------------------------------------------------------- inter-rater


@st.composite
def reliability(draw):
    raters = draw(st.integers(2, 5))
    units = draw(st.integers(1, 15))
    k = draw(st.integers(1, 5))
    cells = draw(
        st.lists(
            st.one_of(st.none(), st.integers(0, k - 1)),
            min_size=raters * units,
            max_size=raters * units,
        )
    )
    data = np.array([np.nan if c is None else float(c) for c in cells]).reshape(raters, units)
    return data, k


@SETTINGS
@given(reliability(), st.sampled_from(["nominal", "ordinal", "interval"]))
def test_krippendorff_alpha_matches_the_krippendorff_package(data, level):
    matrix, k = data
    domain = list(range(max(k, 2)))
    ours = stats.krippendorff_alpha(matrix, level, domain)
    pairable = np.sum(~np.isnan(matrix), axis=0) >= 2
    if pairable.sum() < 2:
        assert ours is None
        return
    try:
        reference = _ref(
            krippendorff.alpha,
            reliability_data=matrix[:, pairable],
            level_of_measurement=level,
            value_domain=domain,
        )
    except ValueError:
        assert ours is None
        return
    _same(ours, float(reference))


@st.composite
def count_tables(draw):
    items = draw(st.integers(2, 20))
    raters = draw(st.integers(2, 8))
    k = draw(st.integers(2, 5))
    rows = []
    for _ in range(items):
        votes = draw(
            st.lists(
                st.integers(0, draw(st.sampled_from([0, k - 1]))), min_size=raters, max_size=raters
            )
        )
        rows.append(np.bincount(votes, minlength=k))
    return np.array(rows)


@SETTINGS
@given(count_tables())
def test_fleiss_kappa_matches_statsmodels(table):
    _same(stats.fleiss_kappa(table), float(_ref(sm_fleiss, table, method="fleiss")))


def test_fleiss_needs_equal_rater_counts_and_two_items():
    assert stats.fleiss_kappa(np.array([[2, 1], [1, 1]])) is None
    assert stats.fleiss_kappa(np.array([[2, 1]])) is None


def test_complete_case_counts_drop_items_with_a_missing_vote():
    codes = np.array([[0, 1, -1, 2], [0, 1, 1, 2], [1, 1, 0, -1]])
    table = stats.complete_case_counts(codes, 3)
    assert table.tolist() == [[2, 1, 0], [0, 3, 0]]


# --------------------------------------------------------------------------- worked examples

KRIPPENDORFF_2011 = np.array(
    [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, np.nan, np.nan, np.nan],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, np.nan, 3],
        [np.nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, np.nan],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, np.nan],
    ]
)


@pytest.mark.parametrize(
    ("level", "published"),
    [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849), ("ratio", 0.797)],
)
def test_krippendorff_2011_worked_example(level, published):
    """Krippendorff, K. (2011). Computing Krippendorff's Alpha-Reliability. University of
    Pennsylvania, ScholarlyCommons (Departmental Papers, ASC 43), section C: 4 observers x 12
    units with missing data; published alpha: nominal .743, ordinal .815, interval .849,
    ratio .797. Also cross-checked against the krippendorff package."""
    ours = stats.krippendorff_alpha(KRIPPENDORFF_2011, level)
    assert ours == pytest.approx(published, abs=5e-4)
    reference = krippendorff.alpha(reliability_data=KRIPPENDORFF_2011, level_of_measurement=level)
    assert ours == pytest.approx(reference, abs=1e-12)


FLEISS_TABLE = np.array(
    [
        [0, 0, 0, 0, 14],
        [0, 2, 6, 4, 2],
        [0, 0, 3, 5, 6],
        [0, 3, 9, 2, 0],
        [2, 2, 8, 1, 1],
        [7, 7, 0, 0, 0],
        [3, 2, 6, 3, 0],
        [2, 5, 3, 2, 2],
        [6, 5, 2, 1, 0],
        [0, 2, 2, 3, 7],
    ]
)


def test_fleiss_worked_example():
    """The widely reproduced worked example of Fleiss' kappa (Wikipedia, "Fleiss' kappa",
    Worked example: 10 subjects x 14 raters x 5 categories; P_bar = 0.378, P_e = 0.213,
    kappa = 0.210), applying the formulas of Fleiss, J. L. (1971), "Measuring nominal scale
    agreement among many raters", Psychological Bulletin 76(5), 378-382. Also checked
    against statsmodels."""
    ours = stats.fleiss_kappa(FLEISS_TABLE)
    assert ours == pytest.approx(0.210, abs=5e-4)
    assert ours == pytest.approx(sm_fleiss(FLEISS_TABLE, method="fleiss"), abs=1e-12)
    p_j = FLEISS_TABLE.sum(axis=0) / FLEISS_TABLE.sum()
    assert float(np.sum(p_j**2)) == pytest.approx(0.213, abs=5e-4)


# Fleiss (1971), Table 1: 30 patients, 6 psychiatrists each, 5 diagnoses (1 depression,
# 2 personality disorder, 3 schizophrenia, 4 neurosis, 5 other); one string per patient.
FLEISS_1971 = [
    "444444",
    "222555",
    "233335",
    "555555",
    "222444",
    "113333",
    "333355",
    "113334",
    "114444",
    "555555",
    "144444",
    "124444",
    "222333",
    "144444",
    "224445",
    "333335",
    "111455",
    "111112",
    "224444",
    "133555",
    "555555",
    "244444",
    "224555",
    "114444",
    "144445",
    "222224",
    "111155",
    "224444",
    "133333",
    "555555",
]


def test_fleiss_1971_original_example():
    """Fleiss, J. L. (1971). Measuring nominal scale agreement among many raters.
    Psychological Bulletin 76(5), 378-382: the psychiatric-diagnosis example (also shipped as
    the `diagnoses` data of R's irr package); published kappa = .430."""
    table = np.array([[row.count(str(k)) for k in range(1, 6)] for row in FLEISS_1971])
    ours = stats.fleiss_kappa(table)
    assert ours == pytest.approx(0.430, abs=5e-4)
    assert ours == pytest.approx(sm_fleiss(table, method="fleiss"), abs=1e-12)
    # the same ratings as a raters x items code matrix through the complete-case path
    codes = np.array([[int(ch) - 1 for ch in row] for row in FLEISS_1971]).T
    assert stats.fleiss_kappa(stats.complete_case_counts(codes, 5)) == pytest.approx(ours)


def test_alpha_nominal_fleiss_identity():
    """Reference §3.8: on complete nominal data alpha = kappa_F + (1 - kappa_F) / (N R)."""
    rng = np.random.default_rng(7)
    codes = rng.integers(0, 3, size=(3, 30))
    alpha = stats.krippendorff_alpha(codes.astype(float), "nominal", [0, 1, 2])
    kf = stats.fleiss_kappa(stats.complete_case_counts(codes, 3))
    assert alpha == pytest.approx(kf + (1 - kf) / (30 * 3), abs=1e-12)


@pytest.mark.parametrize(
    ("value", "band"),
    [
        (None, "undefined"),
        (-0.01, "poor (worse than chance)"),
        (0.0, "slight"),
        (0.20, "slight"),
        (0.21, "fair"),
        (0.40, "fair"),
        (0.41, "moderate"),
        (0.60, "moderate"),
        (0.61, "substantial"),
        (0.80, "substantial"),
        (0.81, "almost perfect"),
        (1.0, "almost perfect"),
    ],
)
def test_kappa_bands_follow_landis_and_koch(value, band):
    """Landis & Koch (1977), Biometrics 33(1) 159-174, Table: <0 poor, 0.00-0.20 slight,
    0.21-0.40 fair, 0.41-0.60 moderate, 0.61-0.80 substantial, 0.81-1.00 almost perfect."""
    from assay.calibration.bands import kappa_band

    assert kappa_band(value) == band


def test_alpha_and_correlation_bands():
    from assay.calibration.bands import alpha_band, correlation_band, effect_size_band

    assert [alpha_band(v) for v in (None, 0.8, 0.7999, 0.667, 0.5)] == [
        "undefined",
        "reliable",
        "tentative",
        "tentative",
        "unreliable",
    ]
    assert correlation_band(-0.95) == "very strong negative"
    assert correlation_band(0.3) == "weak positive"
    assert correlation_band(0.29) == "very weak positive"
    assert [effect_size_band(v) for v in (0.1, -0.3, 0.6, 2.0)] == [
        "negligible",
        "small",
        "medium",
        "large",
    ]


SHROUT_FLEISS = np.array(
    [[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9], [6, 2, 4, 7]],
    dtype=float,
)


def test_icc_shrout_fleiss_1979_worked_example():
    """Shrout, P. E. & Fleiss, J. L. (1979). Intraclass correlations: uses in assessing rater
    reliability. Psychological Bulletin 86(2), 420-428: Table 2 (6 targets x 4 judges),
    Table 4: ICC(1,1) = .17, ICC(2,1) = .29, ICC(3,1) = .71."""
    got = stats.icc(SHROUT_FLEISS)
    assert got["icc1"] == pytest.approx(0.17, abs=5e-3)
    assert got["icc2"] == pytest.approx(0.29, abs=5e-3)
    assert got["icc3"] == pytest.approx(0.71, abs=5e-3)


@SETTINGS
@given(st.integers(2, 12), st.integers(2, 5), st.data())
def test_icc_mean_squares_match_a_statsmodels_anova(n, k, data):
    """The same ICCs from the two-way ANOVA table that statsmodels' OLS produces."""
    import pandas as pd
    import statsmodels.formula.api as smf
    from statsmodels.stats.anova import anova_lm

    values = data.draw(st.lists(st.integers(0, 6), min_size=n * k, max_size=n * k))
    x = np.array(values, dtype=float).reshape(n, k)
    frame = pd.DataFrame(
        {"y": x.ravel(), "target": np.repeat(np.arange(n), k), "rater": np.tile(np.arange(k), n)}
    )
    ours = stats.icc(x)
    if np.ptp(x) == 0:
        assert ours == {"icc1": None, "icc2": None, "icc3": None}
        return
    table = _ref(anova_lm, smf.ols("y ~ C(target) + C(rater)", data=frame).fit())
    ms_rows = table.loc["C(target)", "sum_sq"] / (n - 1)
    ms_cols = table.loc["C(rater)", "sum_sq"] / (k - 1)
    ms_error = table.loc["Residual", "sum_sq"] / ((n - 1) * (k - 1))
    icc3_den = ms_rows + (k - 1) * ms_error
    icc2_den = icc3_den + k * (ms_cols - ms_error) / n
    for key, den in (("icc3", icc3_den), ("icc2", icc2_den)):
        if abs(den) <= 1e-9:
            continue
        assert ours[key] == pytest.approx((ms_rows - ms_error) / den, abs=1e-7)


def test_icc_separates_agreement_from_consistency():
    """A judge that is always 0.2 higher is perfectly consistent but not in absolute agreement."""
    human = np.array([0.1, 0.3, 0.5, 0.2, 0.6])
    got = stats.icc(np.column_stack([human, human + 0.2]))
    assert got["icc3"] == pytest.approx(1.0)
    assert got["icc2"] < 0.8
