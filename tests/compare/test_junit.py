"""JUnit XML: valid against the Jenkins/Ant JUnit schema, one case per sample x metric."""

from __future__ import annotations

from pathlib import Path

import pytest

from assay.report.junit import render_junit
from compare.factory import make_report
from compare.samples import HOSTILE_ID, METRICS, rich_report

etree = pytest.importorskip(
    "lxml.etree", reason="lxml is in the dev extra: pip install -e '.[dev]'"
)

SCHEMA = Path(__file__).parent / "data" / "junit.xsd"


@pytest.fixture(scope="module")
def schema():
    return etree.XMLSchema(etree.parse(str(SCHEMA)))


def parse(xml: str):
    return etree.fromstring(xml.encode("utf-8"))


def test_valid_against_junit_schema(schema):
    report, _ = rich_report()
    document = parse(render_junit(report))
    schema.assertValid(document)


def test_schema_rejects_malformed_junit(schema):
    """The schema is not a rubber stamp: a case without a name, or a bad count, is invalid."""
    assert not schema.validate(
        parse('<testsuites><testsuite name="s" tests="1"><testcase/></testsuite></testsuites>')
    )
    assert not schema.validate(parse('<testsuites><testsuite name="s" tests="-1"/></testsuites>'))
    assert not schema.validate(parse('<testsuites><testsuite tests="0"/></testsuites>'))
    assert schema.validate(parse('<testsuites><testsuite name="s" tests="0"/></testsuites>'))


def test_one_case_per_sample_and_metric_with_outcomes():
    report, _ = rich_report()
    root = parse(render_junit(report))
    verdict, *suites = root.findall("testsuite")  # the verdict first, then one per metric
    assert (
        verdict.get("name").endswith("/ verdict") and verdict.find("testcase").get("name") == "gate"
    )
    assert [s.find("properties/property[@name='metric']").get("value") for s in suites] == METRICS
    executions = len(report.rows)
    for suite, metric in zip(suites, METRICS, strict=True):
        cases = suite.findall("testcase")
        assert len(cases) == executions == int(suite.get("tests"))
        below = sum(1 for r in report.rows if metric in r.scores and r.scores[metric].score < 0.5)
        errored = sum(
            1
            for r in report.rows
            if r.errors and (metric in r.errors or "system-under-test" in r.errors)
        )
        assert len(suite.findall("testcase/failure")) == below == int(suite.get("failures"))
        assert len(suite.findall("testcase/error")) == errored == int(suite.get("errors"))
    assert int(root.get("tests")) == executions * len(METRICS) + 1
    # the hostile id is data, carried intact through XML escaping
    names = {case.get("name") for case in root.iter("testcase")}
    assert HOSTILE_ID in names
    broken = next(c for c in suites[0].findall("testcase") if c.get("name") == HOSTILE_ID)
    assert broken.find("error").get("type") == "metric-error"


def test_threshold_is_inclusive_and_repetitions_named():
    report = make_report({"s": {"scores": {"m": [0.5, 0.49, 1.0]}}})
    root = parse(render_junit(report))
    cases = root.findall("testsuite/testcase")
    assert [c.get("name") for c in cases] == ["s [rep 0]", "s [rep 1]", "s [rep 2]"]
    assert [c.find("failure") is not None for c in cases] == [False, True, False]


def test_control_characters_do_not_break_the_xml(schema):
    report = make_report(
        {"bad\x01id\ud800": {"scores": {"m": [None]}}, "ok": {"scores": {"m": [1.0]}}}
    )
    rows = [
        r.model_copy(update={"errors": {"m": "nul\x00 and esc\x1b"}}) if r.errors else r
        for r in report.rows
    ]
    xml = render_junit(report.model_copy(update={"rows": rows}))
    document = parse(xml)
    schema.assertValid(document)
    assert document.find(".//error").text == "nul and esc"


def test_tag_scoped_metrics_only_get_cases_where_they_apply():
    """A row with neither a score nor an error for a metric (it does not apply) has no test case."""
    from assay.data.results import ExecutionResult, ScoreResult
    from assay.report.aggregate import ReportBuilder
    from assay.report.model import DatasetInfo, RunInfo, SystemUnderTestInfo

    builder = ReportBuilder(
        ["exact-match", "ordinal-distance"], {"ordinal-distance": frozenset({"triage"})}
    )
    builder.add(ExecutionResult("fact", 0, {"exact-match": ScoreResult(1.0)}), ["geo"], "h1")
    builder.add(
        ExecutionResult(
            "ticket", 0, {"exact-match": ScoreResult(0.0), "ordinal-distance": ScoreResult(0.5)}
        ),
        ["triage"],
        "h2",
    )
    builder.add(ExecutionResult("broken", 0, {}, sut_error="boom"), ["triage"], "h3")
    report = builder.build(
        dataset=DatasetInfo(name="d", schema_version="assay.dataset.v1", samples=3),
        run=RunInfo(
            run_id="r",
            assay_version="0",
            started_at="t",
            finished_at="t",
            duration_seconds=0.0,
            system_under_test=SystemUnderTestInfo(kind="none"),
            repetitions=1,
        ),
    )
    root = parse(render_junit(report))
    cases = {(c.get("classname").rsplit(".", 1)[-1], c.get("name")) for c in root.iter("testcase")}
    assert ("ordinal-distance", "fact") not in {(m, n.split()[0]) for m, n in cases}
    assert len(cases) == 5  # exact-match x 3 rows, ordinal-distance x ticket + broken
    assert {suite.get("skipped") for suite in root.iter("testsuite")} == {"0"}
