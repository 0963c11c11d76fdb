"""assay.testing.assert_metric: the score when it passes, expected vs actual when it does not."""

from __future__ import annotations

import pytest

from assay import MetricScore
from assay.errors import UsageError
from assay.testing import assert_metric, assert_metric_async


def test_a_passing_check_returns_the_score():
    assert assert_metric("exact-match", "Paris", "Paris") == 1.0
    assert assert_metric("regex", "ORD-104233", r"/^ORD-\d{6}$/") == 1.0


def test_a_failing_check_names_metric_threshold_expected_and_actual():
    with pytest.raises(AssertionError) as caught:
        assert_metric("exact-match", "Lyon", "Paris", input={"question": "capital?"})
    assert str(caught.value).splitlines() == [
        "exact-match scored 0.0000, below the threshold 0.5000",
        '  input:    {"question": "capital?"}',
        '  expected: "Paris"',
        '  actual:   "Lyon"',
    ]


def test_threshold_is_the_callers():
    # rouge-l F1 of "the cat sat" vs "the cat sat on the mat": lcs 3, p=1, r=0.5 -> 2/3
    score = assert_metric("rouge-l", "the cat sat", "the cat sat on the mat", threshold=0.6)
    assert score == pytest.approx(2 / 3)
    with pytest.raises(AssertionError, match=r"below the threshold 0\.7000"):
        assert_metric("rouge-l", "the cat sat", "the cat sat on the mat", threshold=0.7)


def test_the_metrics_own_threshold_option_is_the_default():
    spec = {"name": "rouge-l", "threshold": 0.7}
    with pytest.raises(AssertionError, match=r"below the threshold 0\.7000"):
        assert_metric(spec, "the cat sat", "the cat sat on the mat")
    assert assert_metric(spec, "the cat sat", "the cat sat on the mat", threshold=0.6) > 0.6


def test_an_answer_the_metric_cannot_score_fails_as_errored_not_as_zero():
    with pytest.raises(AssertionError, match=r"regex could not score the answer \(errored\)"):
        assert_metric("regex", "ORD-1", "not delimited")


def test_long_values_are_cut():
    with pytest.raises(AssertionError) as caught:
        assert_metric("exact-match", "x" * 5000, "y")
    actual = str(caught.value).splitlines()[-1]
    assert actual.endswith("xxx...") and len(actual) < 450


class AsyncLength:
    name = "async-length"

    async def score(self, sample, output):
        return MetricScore(min(1.0, len(output.text) / 10))


def test_async_metric_outside_a_loop():
    assert assert_metric(AsyncLength(), "0123456789") == 1.0


async def test_async_metric_inside_a_loop_needs_the_async_form():
    with pytest.raises(UsageError, match="assert_metric_async"):
        assert_metric(AsyncLength(), "0123456789")
    assert await assert_metric_async(AsyncLength(), "01234567") == pytest.approx(0.8)
    with pytest.raises(AssertionError, match=r"async-length scored 0\.2000"):
        await assert_metric_async(AsyncLength(), "01")
