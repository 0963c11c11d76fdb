"""Properties of the comparison and the renderers on arbitrary reports (hypothesis)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assay.compare.comparison import compare_reports
from assay.compare.gate import check_gate
from assay.compare.gate_rules import GateRules
from assay.report.html import render_html
from compare.factory import make_report

etree = pytest.importorskip("lxml.etree")

score = st.one_of(st.none(), st.floats(0.0, 1.0), st.sampled_from([0.0, 0.5, 1.0]))
ids = st.text(min_size=1, max_size=12)
tags = st.lists(st.sampled_from(["policy", "geo", "<b>", "x y"]), max_size=2, unique=True)


@st.composite
def reports(draw):
    names = draw(st.lists(ids, min_size=1, max_size=12, unique=True))
    reps = draw(st.integers(1, 3))
    samples = {
        name: {
            "tags": draw(tags),
            "scores": {
                "m": [draw(score) for _ in range(reps)],
                "k": [draw(score) for _ in range(reps)],
            },
        }
        for name in names
    }
    return samples


SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(reports())
def test_a_report_compared_with_itself_shows_no_change(samples):
    report = make_report(samples)
    result = compare_reports(report, report, resamples=200)
    assert not result.regressions and not result.flips and not result.new_failures
    assert not result.added and not result.removed
    for item in [*result.metrics, *result.cohorts]:
        assert item.verdict in ("no-detectable-change", "incomparable")
        for stat in (item.mean, item.pass_rate):
            assert stat.delta in (None, 0.0)
    assert check_gate(report, GateRules(max_failures=10**6), result).passed


@SETTINGS
@given(reports(), reports())
def test_swapping_sides_negates_deltas_and_swaps_flips(a, b):
    # same samples and tags (cohorts follow the current side's tags), scores from b where it has
    # them
    common = {
        name: {"tags": spec["tags"], "scores": b[name]["scores"]} if name in b else spec
        for name, spec in a.items()
    }
    current, reference = make_report(common), make_report(a)
    forward = compare_reports(current, reference, resamples=200)
    backward = compare_reports(reference, current, resamples=200)
    for f, r in zip(
        forward.metrics + forward.cohorts, backward.metrics + backward.cohorts, strict=True
    ):
        assert (f.metric, f.cohort_label) == (r.metric, r.cohort_label)
        for fs, rs in ((f.mean, r.mean), (f.pass_rate, r.pass_rate)):
            if fs.delta is None:
                assert rs.delta is None
            else:
                assert fs.delta == pytest.approx(-rs.delta, abs=1e-12)
                if (
                    fs.p_value is not None
                    and f.pass_rate.test == "mcnemar-exact"
                    and fs is f.pass_rate
                ):
                    assert fs.p_value == pytest.approx(rs.p_value)
        assert (f.pass_to_fail, f.fail_to_pass) == (r.fail_to_pass, r.pass_to_fail)
    assert forward.counts.pass_to_fail == backward.counts.fail_to_pass


@SETTINGS
@given(reports())
def test_html_is_well_formed_and_escapes_everything(samples):
    report = make_report(samples)
    document = render_html(report, compare_reports(report, report, resamples=50))
    parser = etree.HTMLParser(recover=False)
    tree = etree.fromstring(document.encode("utf-8"), parser)
    assert tree.xpath("count(//script)") == 0
    assert tree.xpath("count(//svg[@class='histogram'])") == len(report.metrics)
    text = "".join(tree.itertext())
    for sample in samples:
        if any(f.sample_id == sample for f in report.failures):
            cleaned = "".join(c for c in sample if ord(c) >= 32 or c in "\n\t")
            assert cleaned in text


def test_identical_scores_have_no_spread_and_no_p_value_claims():
    samples = {f"s{i}": {"scores": {"m": [0.7]}} for i in range(30)}
    report = make_report(samples)
    [row] = compare_reports(report, report).metrics
    assert row.mean.mdd is None and row.mean.p_value == 1.0
    assert row.mean.interval is not None and row.mean.interval.low == row.mean.interval.high == 0.0
    assert np.isclose(row.pass_rate.p_value, 1.0)
