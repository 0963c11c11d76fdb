"""A slice's scores past its cap go to a temporary file; the statistics over that file are
checked against numpy over the whole array: counts, extremes, histogram and percentiles equal
(percentiles bit for bit), the mean and standard deviation to 1e-12 relative. The cap is set
small here so that every test spills."""

from __future__ import annotations

import tempfile
from array import array

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.report.slices import SliceScores, cohort_metric, metric_aggregate
from assay.report.spilled import CHUNK, order_statistics, spill, summary_of_file
from assay.report.statistics import histogram, linear_percentile, mean_interval, wilson_interval


def _scores(rng: np.random.Generator, size: int) -> np.ndarray:
    """Scores as metrics give them: continuous values, and many ties at 0, 1 and 0.5."""
    values = rng.random(size)
    tied = rng.random(size) < 0.4
    values[tied] = rng.choice([0.0, 0.5, 1.0, 1 / 3], size=int(tied.sum()))
    return values


def _slice(values: np.ndarray, cap: int, step: int = 5) -> SliceScores:
    """A slice fed as a run feeds it: some values one at a time, the rest a column at a time."""
    scores = SliceScores(cap)
    for start in range(0, values.size, step * 2):
        for value in values[start : start + step].tolist():
            scores.append(value)
        scores.extend(values[start + step : start + 2 * step])
    return scores


@settings(max_examples=300, deadline=None)
@given(
    values=st.lists(st.floats(0, 1), min_size=1, max_size=80),
    q=st.sampled_from([0, 1, 5, 25, 50, 75, 95, 99, 100]),
)
def test_linear_percentile_is_numpys_bit_for_bit(values: list[float], q: int) -> None:
    ordered = sorted(values)
    got = linear_percentile(len(ordered), q, ordered.__getitem__)
    assert got == float(np.percentile(np.array(values), q, method="linear"))


@pytest.mark.parametrize("size", [1, 2, 3, 17, 1000, CHUNK + 3])
def test_order_statistics_are_the_sorted_values(size: int) -> None:
    rng = np.random.default_rng(size)
    values = _scores(rng, size)
    values[: size // 3] *= -1  # negative and positive doubles keep their order
    ranks = sorted({0, size - 1, size // 2, int(rng.integers(size))})
    with tempfile.TemporaryFile() as handle:
        spill(handle, array("d", values.tobytes()))
        assert order_statistics(handle, ranks) == np.sort(values)[ranks].tolist()


@pytest.mark.parametrize(
    ("size", "cap"), [(1, 0), (2, 1), (9, 4), (1001, 7), (2 * CHUNK + 5, 4096)]
)
@pytest.mark.parametrize("threshold", [0.0, 0.5, 0.7])
def test_spilled_aggregate_is_numpy_over_the_whole_array(
    size: int, cap: int, threshold: float
) -> None:
    rng = np.random.default_rng(size + cap)
    values = _scores(rng, size)
    scores = _slice(values, cap)
    assert scores.scored == size
    assert size <= max(cap, 1) or len(scores.values) < size  # the rest went to the file
    aggregate = metric_aggregate("m", scores, threshold)
    passed = int((values >= threshold).sum())
    assert (aggregate.scored, aggregate.failed, aggregate.attempted) == (size, size - passed, size)
    assert aggregate.p50 == float(np.percentile(values, 50))
    assert aggregate.p95 == float(np.percentile(values, 95))
    assert (aggregate.min, aggregate.max) == (float(values.min()), float(values.max()))
    assert aggregate.mean == pytest.approx(float(values.mean()), rel=1e-12, abs=0)
    assert aggregate.histogram == histogram(values)
    assert aggregate.pass_rate == passed / size
    assert aggregate.pass_rate_ci == wilson_interval(passed, size)
    expected = mean_interval(values)
    if expected is None:
        assert aggregate.mean_ci is None
    else:
        assert aggregate.mean_ci is not None
        assert aggregate.mean_ci.low == pytest.approx(expected.low, rel=1e-12, abs=1e-15)
        assert aggregate.mean_ci.high == pytest.approx(expected.high, rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("size", [2, 50, CHUNK + 1])
def test_spilled_standard_deviation_is_numpys(size: int) -> None:
    rng = np.random.default_rng(size)
    values = _scores(rng, size)
    with tempfile.TemporaryFile() as handle:
        spill(handle, array("d", values.tobytes()))
        found = summary_of_file(handle, size, 0.5)
    assert found.std == pytest.approx(float(values.std(ddof=1)), rel=1e-12, abs=0)
    assert found.mean == pytest.approx(float(values.mean()), rel=1e-12, abs=0)


def test_a_slice_under_its_cap_is_not_spilled_and_gives_numpys_numbers_exactly() -> None:
    values = _scores(np.random.default_rng(3), 500)
    aggregate = metric_aggregate("m", _slice(values, 500), 0.5)
    ordered = np.sort(values)
    assert aggregate.mean == float(ordered.mean())
    assert aggregate.mean_ci == mean_interval(ordered)
    assert aggregate.pass_rate == float((ordered >= 0.5).mean())


def test_a_spilled_cohort_and_its_errored_and_skipped_counts() -> None:
    values = _scores(np.random.default_rng(5), 300)
    scores = _slice(values, 16)
    scores.errored, scores.skipped = 4, 2
    cohort = cohort_metric("m", scores, 0.5)
    assert (cohort.scored, cohort.errored) == (300, 4)
    assert cohort.p95 == float(np.percentile(values, 95))
    aggregate = metric_aggregate("m", scores, 0.5)
    assert (aggregate.attempted, aggregate.skipped) == (306, 2)
    assert aggregate.coverage == 300 / 306


def test_a_slice_with_no_scores_has_no_statistics() -> None:
    scores = SliceScores(1)
    scores.errored = 3
    aggregate = metric_aggregate("m", scores, 0.5)
    assert (aggregate.scored, aggregate.mean, aggregate.p50, aggregate.mean_ci) == (
        0,
        None,
        None,
        None,
    )
    assert aggregate.histogram == histogram(np.empty(0))
    assert aggregate.coverage == 0.0
