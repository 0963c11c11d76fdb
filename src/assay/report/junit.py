"""JUnit XML: one test case per sample and metric, so CI systems list what failed where.

One ``<testsuite>`` per metric. A case *fails* (``<failure>``) when its score is below the
metric's threshold and *errors* (``<error>``) when the metric or the system under test could
not score it; both turn a CI test view red. With repetitions, each execution is its own case
(``id [rep N]``). A failure reads like an assertion: expected vs actual (truncated), from the
report's failing rows; with ``--redact`` only scores and thresholds remain.
"""

from __future__ import annotations

import contextlib
import re
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import IO

from assay.data.results import passes
from assay.errors import AssayError
from assay.report.compliance import junit_suite
from assay.report.model import FailingRow, Report, Row
from assay.report.verdict import verdict_of

SUT_KEY = "system-under-test"
SPOOL_BYTES = 8 << 20  # each metric's test cases stay in memory up to this size, then on disk
_CASE_BREAK = "\n    "  # what precedes a test case inside its suite (ET.indent's layout)
_PROPERTIES_END = "</properties>"
_SUITE_END = "\n  </testsuite>"
_INVALID_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _case_name(row: Row, repetitions: int) -> str:
    return row.id if repetitions <= 1 else f"{row.id} [rep {row.repetition}]"


def _sanitise_surrogates(text: str) -> str:
    return "".join(c if not 0xD800 <= ord(c) <= 0xDFFF else "\ufffd" for c in text)


def _text(value: str) -> str:
    return _INVALID_XML.sub("", _sanitise_surrogates(value))


def _assertion(metric: str, score: float, threshold: float, row: FailingRow | None) -> str:
    """The metric's reason: ``exact-match: expected 'Canberra', got 'Sydney' (...)``."""
    if row is not None:
        return f"{metric}: {row.reason}"
    return f"{metric} {score:.4f} < threshold {threshold:g}"


def _details(score: float, threshold: float, row: FailingRow | None) -> str:
    lines = [f"score={score:.6f} threshold={threshold:g}"]
    if row is not None:
        for label, value in (
            ("input", row.input),
            ("expected", row.expected),
            ("actual", row.actual),
        ):
            if value is not None:
                lines.append(f"{label}: {value}")
    return "\n".join(lines)


def render_junit(report: Report) -> str:
    """The report as JUnit XML (the Jenkins/Ant format that CI test views read)."""
    repetitions = max(
        report.run.repetitions, max((row.repetition + 1 for row in report.rows), default=1)
    )
    return b"".join(iter_junit(report, report.rows, repetitions=repetitions)).decode("utf-8")


def iter_junit(report: Report, rows: Iterable[Row], *, repetitions: int) -> Iterator[bytes]:
    """The JUnit XML of :func:`render_junit` as UTF-8 pieces, over rows read once, in order.

    Each metric's test cases go to a temporary file that stays in memory up to
    ``SPOOL_BYTES``, so a million rows stream from the run store without being held. A suite's
    counts open its tag, so the document is put together once every row has been seen.
    """
    metrics = [(m.name, m.threshold) for m in report.metrics]
    texts = {(r.sample_id, r.repetition, r.metric): r for r in report.failing_rows}
    with contextlib.ExitStack() as stack:
        spools: list[IO[str]] = [
            stack.enter_context(tempfile.SpooledTemporaryFile(SPOOL_BYTES, "w+", encoding="utf-8"))
            for _ in metrics
        ]
        counts = _write_cases(report, rows, metrics, texts, spools, repetitions)
        pieces = _skeleton(report, metrics, counts)
        yield pieces[0].encode("utf-8")
        for spool, after in zip(spools, pieces[1:]):
            spool.seek(0)
            while block := spool.read(1 << 20):
                yield block.encode("utf-8")
            yield after.encode("utf-8")


def _write_cases(
    report: Report,
    rows: Iterable[Row],
    metrics: list[tuple[str, float]],
    texts: Mapping[tuple[str, int, str], FailingRow],
    spools: list[IO[str]],
    repetitions: int,
) -> list[dict[str, int]]:
    """Every row's test case under each metric that applies to it; each suite's counts."""
    dataset = _text(report.dataset.name)
    counts = [{"tests": 0, "failures": 0, "errors": 0, "skipped": 0} for _ in metrics]
    classnames = (f"assay.{dataset}.{_text(name)}" for name, _ in metrics)
    # A test case as ElementTree writes it: <testcase name="..." classname="..." time="0" />,
    # or with its error or failure inside, indented as ET.indent lays it out.
    tails = [f'" classname="{escape_attribute(classname)}" time="0"' for classname in classnames]
    for row in rows:
        name = escape_attribute(_text(_case_name(row, repetitions)))
        head = f'{_CASE_BREAK}<testcase name="{name}'
        for (metric, threshold), spool, tally, tail in zip(metrics, spools, counts, tails):
            if SUT_KEY not in row.errors and metric not in row.errors and metric not in row.scores:
                continue  # a tag-scoped metric that does not apply to this sample: no test case
            tally["tests"] += 1
            outcome = _outcome(row, metric, threshold, texts.get((row.id, row.repetition, metric)))
            if outcome is None:
                spool.write(f"{head}{tail} />")
                continue
            tally[outcome.counted] += 1
            spool.write(f"{head}{tail}>{outcome.xml()}\n    </testcase>")
    return counts


def _skeleton(
    report: Report, metrics: list[tuple[str, float]], counts: list[dict[str, int]]
) -> list[str]:
    """The document cut where each metric's test cases go: one more piece than metrics."""
    dataset = _text(report.dataset.name)
    root = ET.Element("testsuites", name=f"assay: {dataset}")
    totals = _verdict_suite(root, report, dataset)
    for (metric, threshold), tally in zip(metrics, counts):
        suite = ET.SubElement(root, "testsuite", name=f"{dataset} / {_text(metric)}")
        _properties(suite, report, metric, threshold)
        for key, count in tally.items():
            suite.set(key, str(count))
        suite.set("time", "0")
        suite.set("timestamp", _text(report.run.started_at))
        for key in totals:
            totals[key] += tally[key]
    for name, count in totals.items():
        root.set(name, str(count))
    junit_suite(root, report.adversarial, dataset)
    root.set("time", f"{report.run.duration_seconds:.3f}")
    ET.indent(root)
    document = '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode")
    # Markup in names and values is escaped, so this text occurs only where a metric suite's
    # properties end: once per metric, in order. Its cases go between the two tags.
    pieces = (document + "\n").split(_PROPERTIES_END + _SUITE_END)
    if len(pieces) != len(metrics) + 1:
        raise AssayError("JUnit: each metric's suite must end once in the skeleton")
    last = len(pieces) - 1
    return [
        (_SUITE_END if i else "") + piece + (_PROPERTIES_END if i < last else "")
        for i, piece in enumerate(pieces)
    ]


def _verdict_suite(root: ET.Element, report: Report, dataset: str) -> dict[str, int]:
    """The first suite: one 'gate' case that fails with the deciding rules, the run's counts in
    its output (the verdict first, as in every format); the totals it adds."""
    verdict = verdict_of(report)
    if verdict.passed is None:  # no gate ran: no verdict to report
        return {"tests": 0, "failures": 0, "errors": 0}
    suite = ET.SubElement(root, "testsuite", name=f"{dataset} / verdict")
    failed = 0 if verdict.passed else 1
    suite.attrib.update(tests="1", failures=str(failed), errors="0", skipped="0", time="0")
    case = ET.SubElement(suite, "testcase", name="gate", classname=f"assay.{dataset}.verdict")
    case.set("time", "0")
    if failed:
        rules = "; ".join(verdict.rules)
        ET.SubElement(case, "failure", message=_text(rules), type="gate").text = _text(
            "\n".join(verdict.rules)
        )
    said = f"{verdict.headline}: {'; '.join(verdict.rules)}. {verdict.counts}."
    ET.SubElement(case, "system-out").text = _text(said)
    return {"tests": 1, "failures": failed, "errors": 0}


def _properties(suite: ET.Element, report: Report, metric: str, threshold: float) -> None:
    """The suite's ``<properties>``: which run, dataset, metric and threshold it is."""
    properties = ET.SubElement(suite, "properties")
    for key, value in (
        ("run_id", report.run.run_id),
        ("dataset", report.dataset.name),
        ("metric", metric),
        ("pass_threshold", str(threshold)),
        ("assay_version", report.run.assay_version),
    ):
        ET.SubElement(properties, "property", name=key, value=_text(value))


@dataclass(frozen=True)
class _Outcome:
    """A test case's ``<error>`` or ``<failure>``, and which of the suite's counts it adds to."""

    counted: str
    tag: str
    message: str
    kind: str
    text: str

    def xml(self) -> str:
        """The element as ElementTree writes it inside an indented test case."""
        start = (
            f'\n      <{self.tag} message="{escape_attribute(self.message)}" '
            f'type="{escape_attribute(self.kind)}"'
        )
        if not self.text:  # ET writes an element with no text short
            return start + " />"
        return f"{start}>{escape_text(self.text)}</{self.tag}>"


def _outcome(row: Row, metric: str, threshold: float, shown: FailingRow | None) -> _Outcome | None:
    """The case's error or failure; None when it passed."""
    if SUT_KEY in row.errors:
        message = _text(row.errors[SUT_KEY])
        return _Outcome("errors", "error", f"system under test failed: {message}", SUT_KEY, message)
    if metric in row.errors:
        message = _text(row.errors[metric])
        return _Outcome("errors", "error", f"metric failed: {message}", "metric-error", message)
    score = row.scores[metric].score
    if passes(score, threshold):
        return None
    return _Outcome(
        "failures",
        "failure",
        _text(_assertion(metric, score, threshold, shown)),
        "below-threshold",
        _text(_details(score, threshold, shown)),
    )


_ATTRIBUTE_ENTITIES = str.maketrans(
    {
        "&": "&amp;",
        "<": "&lt;",
        ">": "&gt;",
        '"': "&quot;",
        "\r": "&#13;",
        "\n": "&#10;",
        "\t": "&#09;",
    }
)
_TEXT_ENTITIES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;"})


def escape_attribute(value: str) -> str:
    """An attribute value as ElementTree writes it (``&<>"`` and CR, LF, tab as references)."""
    return value.translate(_ATTRIBUTE_ENTITIES)


def escape_text(value: str) -> str:
    """Element text as ElementTree writes it (``&``, ``<`` and ``>`` as references)."""
    return value.translate(_TEXT_ENTITIES)
