"""The Student t quantile and tail from :mod:`math` alone: a report's mean interval needs one
number and a comparison's paired test another, and ``scipy.special`` costs ~0.2 s of start-up
to give the first (``scipy.stats``, for the second, about 0.5 s more).

With ``s = t / sqrt(df)``, ``x = 1 / (1 + s^2)``, ``y = 1 - x`` and f the t density, the two
probabilities either side of t are regularized incomplete beta functions (A&S 26.7.1):

    P(0 < T < t) = I_y(1/2, df/2) / 2 = t f(t) S          (S: DLMF 8.17.7's series)
    P(T > t)     = I_x(df/2, 1/2) / 2 = t f(t) h / df     (h: DLMF 8.17.22's fraction)

and, for df >= 20, P(T > t) also by an expansion in incomplete gamma functions (the terms
are erfc and powers) that stays exact where the fraction loses digits as df grows. The
quantile is the root of log P(t) = log target for whichever of the two targets, p - 1/2 or
1 - p, is smaller (both exact in floating point), found by Halley's method on log t from a
normal-quantile start with the Cornish-Fisher correction (A&S 26.7.5); df = 1 and df = 2
have closed forms.
"""

from __future__ import annotations

import math

_HALF_LOG_TWO_PI = 0.5 * math.log(2 * math.pi)
_STIRLING = (1 / 12, -1 / 360, 1 / 1260, -1 / 1680, 1 / 1188, -691 / 360360, 1 / 156)
"""B_2k / (2k (2k - 1)): the terms of log Gamma(x) after Stirling's formula, in 1 / x^(2k-1)."""
_STIRLING_FROM = 10.0
"""From here the seven terms above leave out less than 3e-17; below, Gamma itself is used."""
_TINY = 1e-300
_HUGE = 1e150
_FRACTION_TERMS = 10_000
_SERIES_TERMS = 10_000
_EXPANSION_FROM = 20.0
"""From this df on, P(T > t) comes from :func:`_tail_log_sum`; below, from the fraction."""
_LOG_ROOT_HALF_PI = 0.5 * math.log(math.pi / 2)
_ROOT_BERNOULLI = (
    1.0,
    0.25,
    0.010416666666666666,
    -0.0026041666666666665,
    -9.765625e-05,
    5.154079861111111e-05,
    1.2756024718915344e-06,
    -1.110097087880291e-06,
    -1.9670584004181822e-08,
    2.4836319884715677e-08,
    3.3966619960386745e-10,
    -5.690071833942187e-10,
    -6.3372301556671304e-12,
    1.3251315155878903e-11,
    1.2468358960996804e-13,
    -3.1229993780631886e-13,
    -2.546988626356897e-15,
    7.426702350918158e-15,
    5.3488858900327365e-17,
    -1.778579261088922e-16,
    -1.1473989542270475e-18,
    4.283476654726128e-18,
    2.5030337435180244e-20,
    -1.0363862910759544e-19,
    -5.535498379178477e-22,
    2.517185267159961e-21,
    1.2381595956438125e-23,
    -6.133662439105411e-23,
    -2.7961370314294057e-25,
    1.498765280596104e-24,
    6.366526460482833e-27,
    -3.671087546930156e-26,
    -1.4599270865193941e-28,
    9.010976669173599e-28,
    3.368660192590825e-30,
    -2.2159341408901155e-29,
    -7.815602857789675e-32,
    5.458327666294986e-31,
    1.8221419484278716e-33,
    -1.3464936033422798e-32,
)
"""The Taylor coefficients c_0..c_39 of sqrt(v / (1 - e^-v)) (computed in exact rational
arithmetic from the Bernoulli numbers: v / (1 - e^-v) = sum B_n^+ v^n / n!)."""
_STEPS = 60
_LAST_STEP = 1e-7
"""Halley's method triples the correct digits: after a step this small, t is exact to rounding."""
_CORNISH_FISHER = (
    ((1, 1), 4),
    ((5, 16, 3), 96),
    ((3, 19, 17, -15), 384),
    ((79, 776, 1482, -1920, -945), 92160),
)
"""A&S 26.7.5: t = z + g1(z)/df + g2(z)/df^2 + ...; each g_k's coefficients on z^(2k+1),
z^(2k-1), ..., z, and its denominator."""
_NORMAL_TAIL = ((2.515517, 0.802853, 0.010328), (1.0, 1.432788, 0.189269, 0.001308))
"""A&S 26.2.23: the upper normal quantile of q from w = sqrt(-2 ln q), within 4.5e-4."""


def t_quantile(df: float, p: float) -> float:
    """The ``p``-quantile of Student's t with ``df`` degrees of freedom: the t with
    P(T <= t) = p, what ``scipy.special.stdtrit(df, p)`` computes.

    ``df`` is a finite real >= 1 and ``p`` lies strictly between 0 and 1; anything else
    (NaN included) raises ValueError. ``t_quantile(df, 0.5) == 0``, and
    ``t_quantile(df, 1 - p) == -t_quantile(df, p)``: exactly for p in [1/2, 3/4], to rounding
    beyond.

    Accuracy, for integer df from 1 to 1e9 and p in [0.5, 0.9999], against 40-digit values:
    within 16 ulps (relative 2.5e-15). scipy's stdtrit agrees within 1.3e-14 for p >= 0.55;
    nearer 1/2 stdtrit itself loses digits (5e-12 at df = 4, p = 0.5025).
    """
    if not (math.isfinite(df) and df >= 1):
        raise ValueError(f"degrees of freedom must be a finite number >= 1, got {df!r}")
    if not 0 < p < 1:
        raise ValueError(f"a probability strictly between 0 and 1 is needed, got {p!r}")
    if p == 0.5:
        return 0.0
    # Both are exact where they matter: 1 - p for p >= 1/2, p - 1/2 for p in [1/4, 1].
    tail, centre = (1.0 - p, p - 0.5) if p > 0.5 else (p, 0.5 - p)
    if df == 1:
        t = _cauchy(centre, tail)
    elif df == 2:
        t = 2 * centre / math.sqrt(2 * (1.0 - tail) * tail)  # P(T < t) = 1/2 + t/(2 sqrt(2 + t^2))
    else:
        t = _solve(df, centre, tail)
    return t if p > 0.5 else -t


def t_tail(df: float, t: float) -> float:
    """P(T > t) for Student's t with ``df`` degrees of freedom and t >= 0: what
    ``scipy.stats.t.sf(t, df)`` computes.

    ``df`` is a finite real >= 1 and ``t`` a number >= 0 (infinity gives 0); anything else
    raises ValueError. Near the centre (s^2 < 3 / (df + 2), s = t / sqrt(df)) it is
    1/2 - P(0 < T < t) from the series; beyond, P(T > t) itself from the fraction or the
    large-df expansion, so a small tail keeps its digits.
    """
    if not (math.isfinite(df) and df >= 1):
        raise ValueError(f"degrees of freedom must be a finite number >= 1, got {df!r}")
    if not t >= 0:
        raise ValueError(f"t must be a number >= 0, got {t!r}")
    if t == math.inf:
        return 0.0
    if df == 1:
        return math.atan2(1.0, t) / math.pi
    if df == 2:
        root = math.sqrt(2 + t * t)
        return 1 / (root * (root + t))
    s = t / math.sqrt(df)
    log_scale = _log_density_at_zero(df)
    log_density = log_scale - 0.5 * (df + 1) * _log1p_square(s)
    if s * s < 3 / (df + 2):
        centre, _ = _centre_gap(df, t, s, 1.0, log_density) if t > 0 else (-math.inf, 0.0)
        return 0.5 - math.exp(centre)
    log_tail, _ = _tail_gap(df, t, s, 1.0, log_scale, log_density)
    return math.exp(log_tail)


def _cauchy(centre: float, tail: float) -> float:
    """df = 1: t = tan(pi (p - 1/2)), from whichever of the two probabilities is small (the
    tangent near pi/2 would magnify the rounding of its argument)."""
    return math.tan(math.pi * centre) if centre < 0.25 else 1 / math.tan(math.pi * tail)


def _solve(df: float, centre: float, tail: float) -> float:
    """The t > 0 with P(0 < T < t) = centre, equivalently P(T > t) = tail, by Halley's method
    on log t from the Cornish-Fisher start."""
    log_scale = _log_density_at_zero(df)
    t = _start(df, centre, tail)
    for _ in range(_STEPS):
        step = _halley_step(df, t, centre, tail, log_scale)
        t += t * math.expm1(step)
        if abs(step) < _LAST_STEP:
            break
    return t


def _halley_step(df: float, t: float, centre: float, tail: float, log_scale: float) -> float:
    """One Halley step on G(u) = log P(e^u) - log target: P is P(0 < T < t), with target
    ``centre``, or P(T > t), with target ``tail``, whichever target is smaller (the root's
    relative error is then at most ~1.2 times P's); below df = 20, where P(T > t) comes from
    a continued fraction, the choice is where that converges.

    G'(u) = +-t f(t) / P(t) for the density f, and G''(u) = G'(1 + t f'(t)/f(t) - G'), with
    t f'(t)/f(t) = -(df + 1) y.
    """
    s = t / math.sqrt(df)
    log_density = log_scale - 0.5 * (df + 1) * _log1p_square(s)
    if centre <= tail if df >= _EXPANSION_FROM else s * s < 3 / (df + 2):
        gap, slope = _centre_gap(df, t, s, centre, log_density)
    else:
        gap, slope = _tail_gap(df, t, s, tail, log_scale, log_density)
    y = s * s / (1 + s * s) if s < _HUGE else 1.0
    newton = gap / slope
    bend = 1 - 0.5 * newton * (1 - (df + 1) * y - slope)
    return -newton / bend if bend > 0.5 else -newton


def _centre_gap(
    df: float, t: float, s: float, centre: float, log_density: float
) -> tuple[float, float]:
    """log P(0 < T < t) - log centre, and G'; P = t f(t) S, S the series of
    I_y(1/2, df/2) (DLMF 8.17.7): positive terms, so no cancellation."""
    y = s * s / (1 + s * s)
    term = total = 1.0
    for n in range(_SERIES_TERMS):
        term *= (0.5 + 0.5 * df + n) / (1.5 + n) * y
        total += term
        if term < 1e-17 * total:
            break
    # t / centre is near 1/f(0): no large logarithms to cancel when p is near 1/2
    return math.log(t / centre * total) + log_density, 1 / total


def _tail_gap(
    df: float, t: float, s: float, tail: float, log_scale: float, log_density: float
) -> tuple[float, float]:
    """log P(T > t) - log tail, and G': by the large-df expansion where it holds, else by
    the continued fraction of I_x(df/2, 1/2), P = t f(t) h / df (it loses digits as df
    grows: 1e-14 at df = 1e3, 1e-8 at 1e9)."""
    xi = _log1p_square(s)
    if df >= _EXPANSION_FROM and xi <= 1.5:
        log_probability = log_scale + _LOG_ROOT_HALF_PI + _tail_log_sum(0.5 * df, xi)
        return log_probability - math.log(tail), -t * math.exp(log_density - log_probability)
    x = 1 / (1 + s * s) if s < _HUGE else (1 / s) ** 2
    fraction = _beta_fraction(0.5 * df, 0.5, x)
    gap = math.log(t * fraction / df) - math.log(tail) + log_density
    return gap, -df / fraction


def _tail_log_sum(a: float, xi: float) -> float:
    """log(P(T > t) / (sqrt(pi/2) f(0))), for a = df/2 and xi = log(1 + t^2/df).

    With u = e^-v in the beta integral, I_x(a, 1/2) = (1/B(a, 1/2)) sum_k c_k
    Gamma(1/2 + k, a xi) / a^(1/2 + k), c_k the Taylor coefficients of sqrt(v/(1 - e^-v)).
    Gamma(1/2, w) = sqrt(pi) erfc(sqrt(w)) and Gamma(s + 1, w) = s Gamma(s, w) + w^s e^-w
    give the rest, all positive, each kept times e^w (no underflow far in the tail). The c_k
    shrink like (2 pi)^-k: for xi <= 1.5 and a >= 10 the terms fall below 1e-17 of the sum
    within the 40 kept.
    """
    w = a * xi
    gamma = _scaled_erfc(math.sqrt(w))  # e^w Gamma(1/2 + k, w) / (sqrt(pi) a^k)
    power = math.sqrt(w / math.pi) / a  # w^(1/2 + k) / (sqrt(pi) a^(k + 1))
    total = gamma
    for k, coefficient in enumerate(_ROOT_BERNOULLI[1:], start=1):
        gamma = (k - 0.5) * gamma / a + power
        power *= w / a
        term = coefficient * gamma
        total += term
        if abs(term) < 1e-17 * total:
            break
    return math.log(total) - w


def _scaled_erfc(r: float) -> float:
    """e^(r^2) erfc(r) for r >= 0; from r = 24 by its asymptotic series (A&S 7.1.23), whose
    terms there shrink at least 1000-fold each (erfc itself would underflow by r = 27)."""
    if r < 24:
        return math.exp(r * r) * math.erfc(r)
    inverse = 1 / (2 * r * r)
    term = total = 1.0
    for k in range(1, 12):
        term *= -(2 * k - 1) * inverse
        total += term
    return total / (r * math.sqrt(math.pi))


def _log1p_square(s: float) -> float:
    """log(1 + s^2), without overflow for huge s."""
    return math.log1p(s * s) if s < _HUGE else 2 * math.log(s)


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction h of DLMF 8.17.22: I_x(a, b) = x^a (1 - x)^b h / (a B(a, b)),
    by the modified Lentz method; converges fast for x < (a + 1) / (a + b + 2)."""
    value, c, d = 1.0, 1.0, 0.0
    for j in range(1, _FRACTION_TERMS):
        m = j // 2
        if j % 2:  # d_(2m+1): the factors are paired so that a huge df cannot overflow
            coefficient = -((a + m) / (a + 2 * m)) * ((a + b + m) / (a + 2 * m + 1)) * x
        else:  # d_(2m)
            coefficient = (m / (a + 2 * m - 1)) * ((b - m) / (a + 2 * m)) * x
        d = 1 + coefficient * d
        d = 1 / (d if abs(d) > _TINY else _TINY)
        c = 1 + coefficient / c
        c = c if abs(c) > _TINY else _TINY
        value *= c * d
        if abs(c * d - 1) <= 2**-52:
            break
    return 1 / value


def _log_density_at_zero(df: float) -> float:
    """log of the t density at 0, Gamma((df + 1)/2) / (sqrt(df pi) Gamma(df/2)).

    For large df the two Gammas are huge and nearly equal: their ratio is taken from
    Stirling's series, log Gamma(x) = (x - 1/2) log x - x + log(2 pi)/2 + S(x), where
    log(Gamma(a + 1/2) / Gamma(a)) - log(a)/2 = a log(1 + 1/(2a)) - 1/2 + S(a + 1/2) - S(a).
    """
    a = 0.5 * df
    if a < _STIRLING_FROM:
        return math.log(math.gamma(a + 0.5) / math.gamma(a)) - 0.5 * math.log(df * math.pi)
    ratio = a * math.log1p(0.5 / a) - 0.5 + log_gamma_remainder(a + 0.5) - log_gamma_remainder(a)
    return ratio - _HALF_LOG_TWO_PI


def log_gamma_remainder(x: float) -> float:
    """S(x): log Gamma(x) less Stirling's formula (x - 1/2) log x - x + log(2 pi)/2, for
    x >= 10 (also log x! less Stirling's formula for x!: Loader's stirlerr(x))."""
    inverse_square = 1 / (x * x)
    total = 0.0
    for coefficient in reversed(_STIRLING):
        total = total * inverse_square + coefficient
    return total / x


def _start(df: float, centre: float, tail: float) -> float:
    """The Cornish-Fisher value z + g1(z)/df + ... + g4(z)/df^4 from a normal quantile z: within
    1e-3 or so except for small df far in the tail, where Halley's method on log t still
    converges from it in a few more steps."""
    z = _normal_quantile(centre, tail)
    square = z * z
    t, power = z, 1.0
    for coefficients, denominator in _CORNISH_FISHER:
        power /= df
        g = 0.0
        for coefficient in coefficients:
            g = g * square + coefficient
        t += z * g / denominator * power
    return t


def _normal_quantile(centre: float, tail: float) -> float:
    """The standard normal z > 0 with P(0 < Z < z) = centre, roughly (a start for Newton):
    the probit's Taylor series near the centre, A&S 26.2.23 in the tail."""
    if centre < 0.3:
        u = math.sqrt(2 * math.pi) * centre
        v = u * u
        return u * (1 + v * (1 / 6 + v * (7 / 120 + v * 127 / 5040)))
    w = math.sqrt(-2 * math.log(tail))
    (c0, c1, c2), (d0, d1, d2, d3) = _NORMAL_TAIL
    return w - (c0 + w * (c1 + w * c2)) / (d0 + w * (d1 + w * (d2 + w * d3)))
