"""The Markdown view: seed 000's section order, four decimals, n/a, escaping of user strings."""

from __future__ import annotations

import re

from assay.data.results import ExecutionResult, ScoreResult
from assay.report.aggregate import ReportBuilder
from assay.report.markdown import render_markdown
from assay.report.model import (
    ComparisonSummary,
    DatasetInfo,
    Report,
    RunInfo,
    SystemUnderTestInfo,
)

from .reports import check_report


def report_with(items: list[tuple[ExecutionResult, list[str]]], metrics: list[str]) -> Report:
    builder = ReportBuilder(metrics)
    for result, tags in items:
        builder.add(result, tags, "h")
    report = builder.build(
        dataset=DatasetInfo(
            name="demo | <b>set</b>",
            schema_version="assay.dataset.v1",
            samples=builder.sample_count,
        ),
        run=RunInfo(
            run_id="run-1",
            assay_version="0",
            started_at="2026-01-01T00:00:00+00:00",
            finished_at="2026-01-01T00:00:02+00:00",
            duration_seconds=2.0,
            system_under_test=SystemUnderTestInfo(kind="saved-outputs", target="o.json"),
            repetitions=1,
        ),
    )
    check_report(report)
    return report


def test_sections_numbers_and_escaping() -> None:
    items = [
        (
            ExecutionResult(
                "geo-1",
                0,
                {"exact-match": ScoreResult(1.0), "never": ScoreResult(None, error="no scale")},
            ),
            ["geography"],
        ),
        (
            ExecutionResult(
                "geo-2",
                0,
                {"exact-match": ScoreResult(0.0), "never": ScoreResult(None, error="no scale")},
            ),
            ["geography"],
        ),
        (
            ExecutionResult(
                "<script>x|y</script>",
                0,
                {
                    "exact-match": ScoreResult(1.0),
                    "never": ScoreResult(None, error="bad `tick`\nsecond line"),
                },
            ),
            ["policy"],
        ),
    ]
    text = render_markdown(report_with(items, ["exact-match", "never"]))
    headings = [line for line in text.splitlines() if line.startswith("#")]
    assert headings[0] == "# Eval report — demo \\| &lt;b&gt;set&lt;/b&gt;"
    order = [  # the verdict first, then the failing rows, then the numbers
        "## Verdict",
        "## Failed and errored rows",
        "## Summary",
        "## Per-metric aggregates",
        "## Macro-F1",
        "## Cohorts by metadata.tags",
        "## Score histograms",
        "## Errors",
    ]
    positions = [
        next(i for i, h in enumerate(headings) if h.startswith(section)) for section in order
    ]
    assert positions == sorted(positions)

    # exact-match: scores 1, 0, 1 -> mean 0.6667, p50 1, p95 1, pass-rate 0.6667
    assert "| exact-match | 0.6667 | 1.0000 | 1.0000 | 0.6667 | 0.50 | 3 | 1 | 0 |" in text
    # a metric with no score shows n/a, never 0
    assert "| never | n/a | n/a | n/a | n/a | 0.50 | 0 | 0 | 3 |" in text
    assert "## Macro-F1 (avg pass-rate across all metrics): 0.6667" in text
    assert "| geography | 2 | exact-match | 0.5000 | 0.5000 |" in text

    histogram = re.findall(r"^\| (\d\.\d-\d\.\d(?: inclusive)?) \| (\d+) \|$", text, flags=re.M)
    labels = [label for label, _ in histogram[:10]]
    assert labels[0] == "0.0-0.1" and labels[-1] == "0.9-1.0 inclusive" and len(labels) == 10
    assert [int(count) for _, count in histogram[:10]] == [1, 0, 0, 0, 0, 0, 0, 0, 0, 2]

    # user strings are escaped and single-lined: no raw HTML, no broken table or code span
    assert "<script>" not in text
    assert "&lt;script&gt;x\\|y&lt;/script&gt;" in text
    assert "bad \\`tick\\` second line" in text


def test_no_failures_says_none() -> None:
    text = render_markdown(
        report_with([(ExecutionResult("a", 0, {"m": ScoreResult(0.5)}), [])], ["m"])
    )
    assert "## Failed and errored rows\n\nNo row failed or errored.\n\n## Summary" in text
    assert "## Usage summary" not in text  # no provider calls, no usage section


def test_baseline_comparison_section_lists_regressions() -> None:
    report = report_with(
        [(ExecutionResult("a", 0, {"exact-match": ScoreResult(1.0)}), [])], ["exact-match"]
    )
    digest = ComparisonSummary.model_validate(
        {
            "reference_run_id": "base-1",
            "join_key": "row_hash",
            "comparable": True,
            "alpha": 0.05,
            "macro_f1_delta": -0.125,
            "pass_rate_delta": -0.1,
            "counts": {
                "compared": 40,
                "pass_to_fail": 5,
                "fail_to_pass": 1,
                "new_failures": 0,
                "added": 2,
                "removed": 0,
                "regressions": 1,
            },
            "regressions": [
                {
                    "metric": "exact-match",
                    "scope": "cohort",
                    "cohort_label": "policy",
                    "statistic": "pass_rate",
                    "reference": 0.9,
                    "current": 0.6,
                    "delta": -0.3,
                    "p_value": 0.004,
                    "p_adjusted": 0.012,
                    "mdd": None,
                    "message": "exact-match in cohort 'policy': pass-rate fell",
                }
            ],
        }
    )
    text = render_markdown(report.model_copy(update={"comparison": digest}))
    section = text.split("## Baseline comparison", 1)[1].split("\n## ", 1)[0]
    assert "Against run base-1" in section
    assert "| -0.1250 | -0.1000 | 40 | 5 | 1 | 0 | 2 | 0 | 1 |" in section
    assert "| exact-match | policy | pass_rate | 0.9000 | 0.6000 | -0.3000 | 0.0120 |" in section
    assert "No regression" not in section
