"""JUnit XML: one test case per sample and metric, so CI systems list what failed where.

One ``<testsuite>`` per metric. A case fails (``<failure>``) when its score is below the
pass threshold 0.5 and is an error (``<error>``) when the metric or the system under test
raised; both turn a CI test view red. With repetitions, each execution is its own case
(``id [rep N]``). Messages carry scores and error messages only, never sample content.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from assay.report.compliance import junit_suite
from assay.report.model import Report, Row

PASS_THRESHOLD = 0.5
SUT_KEY = "system-under-test"
_INVALID_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _case_name(row: Row, repetitions: int) -> str:
    return row.id if repetitions <= 1 else f"{row.id} [rep {row.repetition}]"


def _sanitise_surrogates(text: str) -> str:
    return "".join(c if not 0xD800 <= ord(c) <= 0xDFFF else "\ufffd" for c in text)


def _text(value: str) -> str:
    return _INVALID_XML.sub("", _sanitise_surrogates(value))


def render_junit(report: Report) -> str:
    """The report as JUnit XML (the Jenkins/Ant format that CI test views read)."""
    dataset = _text(report.dataset.name)
    repetitions = max(
        report.run.repetitions, max((row.repetition + 1 for row in report.rows), default=1)
    )
    root = ET.Element("testsuites", name=f"assay: {dataset}")
    totals = {"tests": 0, "failures": 0, "errors": 0}
    names = [m.name for m in report.metrics]
    for metric in names:
        suite = ET.SubElement(root, "testsuite", name=f"{dataset} / {_text(metric)}")
        properties = ET.SubElement(suite, "properties")
        for key, value in (
            ("run_id", report.run.run_id),
            ("dataset", report.dataset.name),
            ("metric", metric),
            ("pass_threshold", str(PASS_THRESHOLD)),
            ("assay_version", report.run.assay_version),
        ):
            ET.SubElement(properties, "property", name=key, value=_text(value))
        counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        classname = f"assay.{dataset}.{_text(metric)}"
        for row in report.rows:
            if SUT_KEY not in row.errors and metric not in row.errors and metric not in row.scores:
                continue  # a tag-scoped metric that does not apply to this sample: no test case
            case = ET.SubElement(
                suite,
                "testcase",
                name=_text(_case_name(row, repetitions)),
                classname=classname,
                time="0",
            )
            counts["tests"] += 1
            if SUT_KEY in row.errors:
                message = _text(row.errors[SUT_KEY])
                error = ET.SubElement(
                    case,
                    "error",
                    message=f"system under test failed: {message}",
                    type="system-under-test",
                )
                error.text = message
                counts["errors"] += 1
            elif metric in row.errors:
                message = _text(row.errors[metric])
                error = ET.SubElement(
                    case, "error", message=f"metric failed: {message}", type="metric-error"
                )
                error.text = message
                counts["errors"] += 1
            elif metric in row.scores:
                score = row.scores[metric].score
                if score < PASS_THRESHOLD:
                    failure = ET.SubElement(
                        case,
                        "failure",
                        message=f"{metric} scored {score:.4f}, below the pass threshold {PASS_THRESHOLD}",
                        type="below-threshold",
                    )
                    failure.text = f"score={score:.6f} threshold={PASS_THRESHOLD}"
                    counts["failures"] += 1
        suite.set("tests", str(counts["tests"]))
        suite.set("failures", str(counts["failures"]))
        suite.set("errors", str(counts["errors"]))
        suite.set("skipped", str(counts["skipped"]))
        suite.set("time", "0")
        suite.set("timestamp", _text(report.run.started_at))
        for key in totals:
            totals[key] += counts[key]
    for key, value in totals.items():
        root.set(key, str(value))
    junit_suite(root, report.adversarial, dataset)
    root.set("time", f"{report.run.duration_seconds:.3f}")
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
