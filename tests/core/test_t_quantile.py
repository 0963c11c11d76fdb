"""assay.report.t_quantile against independent implementations: scipy's Student t quantile
(``scipy.special.stdtrit``), a round trip through scipy's t distribution function (``stdtr``,
and ``betainc`` for P(0 < T < t)) and published table values."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import betainc, stdtr, stdtrit

from assay.report.t_quantile import _ROOT_BERNOULLI, t_quantile, t_tail

TOLERANCE = 1e-13
DFS = [*range(1, 31), 40, 50, 60, 99, 100, 101, 120, 1000, 12345, 10**5, 10**6, 10**7, 10**9]
PS = [0.55, 0.6, 0.7, 0.75, 0.8, 0.9, 0.95, 0.975, 0.99, 0.995, 0.999, 0.9995, 0.9999]
PS += [float(p) for p in np.linspace(0.55, 0.9999, 37)]
NEAR_HALF = [0.5 + d for d in (1e-15, 1e-12, 1e-9, 1e-6, 1e-4, 0.0025, 0.01, 0.03, 0.05)]


def round_trip_error(df: float, p: float) -> float:
    """Relative error of the smaller of P(0 < T < t) and P(T > t) at t = t_quantile(df, p),
    against p - 1/2 or 1 - p: the first by scipy's betainc (A&S 26.7.1), the second by its
    stdtr."""
    t = t_quantile(df, p)
    if p - 0.5 <= 1 - p:
        y = t * t / (df + t * t)
        return abs(float(betainc(0.5, df / 2, y)) / 2 - (p - 0.5)) / (p - 0.5)
    # stdtr takes t itself: I_x(df/2, 1/2) would lose digits to x's rounding when df is huge
    return abs(float(stdtr(df, -t)) - (1 - p)) / (1 - p)


@pytest.mark.parametrize(
    ("df", "p", "table", "digits"),
    [
        (1, 0.975, 12.706204736, 9),
        (10, 0.975, 2.228138852, 9),
        (30, 0.975, 2.042272456, 9),
        (5, 0.995, 4.032142984, 9),
        (2, 0.95, 2.920, 3),  # NIST/SEMATECH e-Handbook, table 1.3.6.7.2
        (20, 0.99, 2.528, 3),
        (120, 0.975, 1.980, 3),
    ],
)
def test_published_table_values(df: int, p: float, table: float, digits: int) -> None:
    assert t_quantile(df, p) == pytest.approx(table, abs=0.5 * 10**-digits)


def test_agrees_with_scipy_over_a_grid() -> None:
    """Integer df from 1 to 1e9, p from 0.55 to 0.9999 (nearer 1/2 stdtrit itself loses
    digits: 5e-12 at df = 4, p = 0.5025; see the round trip below)."""
    worst = max(abs(t_quantile(df, p) - stdtrit(df, p)) / stdtrit(df, p) for df in DFS for p in PS)
    assert worst <= TOLERANCE


def test_round_trip_through_the_cdf_near_and_far_from_one_half() -> None:
    worst = max(round_trip_error(df, p) for df in DFS for p in [*NEAR_HALF, *PS])
    assert worst <= TOLERANCE


@settings(max_examples=300, deadline=None)
@given(df=st.integers(1, 10**9), p=st.floats(0.55, 0.9999))
def test_agrees_with_scipy_for_any_integer_df(df: int, p: float) -> None:
    assert t_quantile(df, p) == pytest.approx(float(stdtrit(df, p)), rel=TOLERANCE)


@settings(max_examples=300, deadline=None)
@given(df=st.floats(1, 1e9), p=st.floats(0.5, 0.9999, exclude_min=True))
def test_round_trip_for_any_df_and_p(df: float, p: float) -> None:
    assert round_trip_error(df, p) <= TOLERANCE


@settings(max_examples=200, deadline=None)
@given(df=st.floats(1, 1e9), p=st.floats(0.5, 0.75))
def test_the_lower_half_mirrors_the_upper(df: float, p: float) -> None:
    assert t_quantile(df, 1 - p) == -t_quantile(df, p)


@pytest.mark.parametrize("df", [1, 2, 7, 1e9])
def test_the_median_is_zero(df: float) -> None:
    assert t_quantile(df, 0.5) == 0.0


@pytest.mark.parametrize(
    ("df", "p"),
    [
        *[(df, 0.9) for df in (0.5, 0.0, -3.0, math.nan, math.inf)],
        *[(5.0, p) for p in (0.0, 1.0, -0.1, 1.5, math.nan)],
    ],
)
def test_degrees_of_freedom_below_one_and_probabilities_outside_0_1_raise(
    df: float, p: float
) -> None:
    with pytest.raises(ValueError):
        t_quantile(df, p)


@pytest.mark.parametrize("v", [-2.0, -0.5, 0.25, 1.0, 2.0])
def test_the_expansion_coefficients_are_sqrt_v_over_1_minus_exp_minus_v(v: float) -> None:
    series = sum(c * v**k for k, c in enumerate(_ROOT_BERNOULLI))
    assert series == pytest.approx(math.sqrt(v / -math.expm1(-v)), rel=1e-15)


TAIL_DFS = [*range(2, 31), 40, 99, 100, 101, 1000, 12345, 10**5, 10**6, 10**9]
TAIL_TS = [0.0, 1e-9, 1e-4, 0.05, 0.3, 0.7, 1.0, 1.5, 2.0, 2.5, 3.0, 5.0, 10.0, 30.0, 1e3, 1e6]


@pytest.mark.parametrize("df", TAIL_DFS)
def test_the_tail_matches_scipy(df: float) -> None:
    """P(T > t) against scipy's t distribution function (stdtr(df, -t) = P(T < -t))."""
    for t in TAIL_TS:
        expected = float(stdtr(df, -t))
        if expected < 1e-290:  # scipy rounds to 0 or a subnormal there
            continue
        assert t_tail(df, t) == pytest.approx(expected, rel=1e-12, abs=0), t


@settings(max_examples=300, deadline=None)
@given(df=st.floats(2, 1e7), t=st.floats(0, 60))
def test_the_tail_matches_scipy_anywhere(df: float, t: float) -> None:
    expected = float(stdtr(df, -t))
    if expected > 1e-290:
        assert t_tail(df, t) == pytest.approx(expected, rel=1e-11, abs=0)


@pytest.mark.parametrize("t", [0.0, 1e-12, 1e-3, 0.5, 1.0, 3.0, 1e8])
def test_one_degree_of_freedom_is_the_cauchy_tail(t: float) -> None:
    """df = 1: P(T > t) = 1/2 - arctan(t) / pi (scipy's stdtr loses digits near t = 0)."""
    assert t_tail(1, t) == pytest.approx(0.5 - math.atan(t) / math.pi, rel=1e-14)


def test_the_tail_at_the_edges() -> None:
    assert t_tail(5, 0.0) == 0.5 and t_tail(5, math.inf) == 0.0
    for df, t in [(0.5, 1.0), (math.nan, 1.0), (5.0, -1.0), (5.0, math.nan)]:
        with pytest.raises(ValueError):
            t_tail(df, t)
