"""The adversarial compliance summary in each report format (Markdown, HTML, JUnit).

Kept apart from the renderers so each of them adds one call; the JSON report carries the
summary as the ``adversarial`` key of the model.
"""

from __future__ import annotations

import html
import xml.etree.ElementTree as ET
from collections.abc import Sequence

from assay.report.compliance_model import Compliance, ComplianceSlice


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4f}"


def _cell(text: str) -> str:
    text = " ".join(str(text).split())
    return html.escape(text, quote=False).replace("|", "\\|").replace("`", "\\`")


def _numbers(item: ComplianceSlice) -> list[str]:
    return [
        str(item.samples),
        str(item.passed),
        str(item.failed),
        str(item.errored),
        _fmt(item.pass_rate),
        item.worst_severity_failed or "-",
    ]


_HEAD = ["samples", "passed", "failed", "errored", "pass-rate", "worst severity failed"]


def _md_table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    return lines + ["| " + " | ".join(row) + " |" for row in rows]


def markdown_lines(summary: Compliance | None) -> list[str]:
    """The ``## Adversarial compliance`` section (empty when the run has no adversarial sample)."""
    if summary is None:
        return []
    by_category = [
        [f"{_cell(c.label)} (`{c.category}`)", c.severity, *_numbers(c)] for c in summary.categories
    ]
    by_framework = [[_cell(f.framework), *_numbers(f)] for f in summary.frameworks]
    out = ["", "## Adversarial compliance", ""]
    out += [f"{summary.total_samples} adversarial samples.", "", "### By category", ""]
    out += _md_table(["category", "severity", *_HEAD], by_category)
    out += ["", "### By framework", ""]
    out += _md_table(["framework", *_HEAD], by_framework)
    return out + _drift_lines(summary)


def _drift_lines(summary: Compliance) -> list[str]:
    drift = summary.drift
    if drift is None:
        return []
    out = ["", f"### Drift gate: {_cell(str(drift.get('status')))}", ""]
    baseline = drift.get("baseline_run_id")
    out.append(f"Baseline run: {_cell(str(baseline)) if baseline else 'none yet'}.")
    checks = drift.get("checks") or []
    if checks:
        rows = [
            [
                _cell(str(c.get("target"))),
                _fmt(c.get("baseline_score")),
                _fmt(c.get("current_score")),
                _fmt(c.get("drop")),
                _fmt(c.get("max_drop")),
                _cell(str(c.get("status"))),
            ]
            for c in checks
        ]
        out += [
            "",
            *_md_table(["target", "baseline", "current", "drop", "max drop", "status"], rows),
        ]
    return out


def html_section(summary: Compliance | None) -> str:
    """An HTML ``<section>`` with the two tables (empty string without adversarial samples)."""
    if summary is None:
        return ""

    def table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
        header = "".join(f"<th>{html.escape(h)}</th>" for h in head)
        body = "".join(
            "<tr>" + "".join(f"<td>{html.escape(v)}</td>" for v in row) + "</tr>" for row in rows
        )
        return f"<table><thead><tr>{header}</tr></thead><tbody>{body}</tbody></table>"

    categories = [[c.label, c.category, c.severity, *_numbers(c)] for c in summary.categories]
    frameworks = [[f.framework, *_numbers(f)] for f in summary.frameworks]
    drift = summary.drift
    verdict = f"<p>Drift gate: {html.escape(str(drift.get('status')))}</p>" if drift else ""
    return (
        f"<section><h2>Adversarial compliance</h2><p>{summary.total_samples} adversarial "
        "samples.</p><h3>By category</h3>"
        + table(["category", "value", "severity", *_HEAD], categories)
        + "<h3>By framework</h3>"
        + table(["framework", *_HEAD], frameworks)
        + verdict
        + "</section>"
    )


def junit_suite(root: ET.Element, summary: Compliance | None, dataset: str) -> None:
    """A ``<testsuite>`` with one case per category and framework; failed ones fail.

    Updates the root's ``tests``/``failures`` totals, so call it after they are set.
    """
    if summary is None:
        return
    suite = ET.SubElement(root, "testsuite", name=f"{dataset} / adversarial compliance")
    cases: list[tuple[str, ComplianceSlice]] = [
        (f"category {c.category}", c) for c in summary.categories
    ]
    cases += [(f"framework {f.framework}", f) for f in summary.frameworks]
    failures = 0
    for name, item in cases:
        case = ET.SubElement(suite, "testcase", name=name, classname=f"assay.{dataset}", time="0")
        if item.failed:
            failures += 1
            message = (
                f"{item.failed} of {item.executions} executions failed; worst severity failed: "
                f"{item.worst_severity_failed}; pass-rate {_fmt(item.pass_rate)}"
            )
            ET.SubElement(case, "failure", message=message, type="adversarial")
    for key, value in (("tests", len(cases)), ("failures", failures), ("errors", 0)):
        suite.set(key, str(value))
        root.set(key, str(int(root.get(key, "0")) + value))
