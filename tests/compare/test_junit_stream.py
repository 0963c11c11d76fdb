"""JUnit from a row stream: the same document as from a report holding its rows, read once.

``assay run --format junit`` with a run store streams the rows from the store through
:func:`iter_junit`; each metric's cases spill to disk past a size. The document must equal
what :func:`render_junit` writes from the rows in memory, byte for byte, whatever the names.
"""

from __future__ import annotations

import random
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.report import junit
from assay.report.junit import iter_junit, render_junit
from assay.report.model import Row
from compare.factory import make_report
from compare.samples import rich_report

# Markup, quotes, control characters, a lone surrogate, and the text that ends a suite's
# properties in the layout: escaping must keep all of them out of the document's structure.
PIECES = ["a", "<", ">", "&", '"', "'", "\x01", "\ud800", "é", "\n", " ", "]]>"]
PIECES.append("</properties>\n  </testsuite>")


def once(rows: list[Row]) -> Iterator[Row]:
    """The rows as a one-pass iterator, as the run store gives them."""
    yield from rows


def random_report(rng: random.Random) -> Any:
    def word() -> str:
        return "".join(rng.choice(PIECES) for _ in range(rng.randint(1, 5)))

    metrics = [f"{word()}{i}" for i in range(rng.randint(0, 4))]
    repetitions = rng.randint(1, 3)
    samples: dict[str, Any] = {}
    for i in range(rng.randint(0, 12)):
        spec: dict[str, Any] = {"tags": [rng.choice(["x", "y"])], "scores": {}}
        for metric in metrics:
            if rng.random() < 0.8:
                choices = [None, 0.0, 0.5, 1.0, rng.random()]
                spec["scores"][metric] = [rng.choice(choices) for _ in range(repetitions)]
        if rng.random() < 0.2:
            spec["sut_error"] = [0]
        samples[f"{word()}{i}"] = spec
    return make_report(samples, dataset=word(), metrics=metrics or None)


@pytest.mark.parametrize("spool", [junit.SPOOL_BYTES, 64])
def test_streamed_junit_equals_the_in_memory_document(spool: int, monkeypatch: Any) -> None:
    monkeypatch.setattr(junit, "SPOOL_BYTES", spool)  # 64: every suite's cases go to disk
    rng = random.Random(13)
    reports = [random_report(rng) for _ in range(150)] + [rich_report()[0]]
    for report in reports:
        repetitions = max(report.run.repetitions, *(r.repetition + 1 for r in report.rows), 1)
        streamed = b"".join(iter_junit(report, once(report.rows), repetitions=repetitions))
        assert streamed.decode("utf-8") == render_junit(report)


def test_a_suite_without_cases_and_a_report_without_metrics() -> None:
    empty = make_report({}, metrics=["exact-match"])
    document = render_junit(empty)
    assert '<testsuite name="demo / exact-match" tests="0"' in document
    assert document.endswith("</properties>\n  </testsuite>\n</testsuites>\n")
    bare = ET.fromstring(render_junit(make_report({})))
    assert bare.tag == "testsuites" and len(bare) == 0 and bare.get("tests") == "0"


@settings(max_examples=300, deadline=None)
@given(
    name=st.text(),
    classname=st.text(),
    outcome=st.none()
    | st.tuples(st.sampled_from(["error", "failure"]), st.text(), st.text(), st.text()),
)
def test_test_cases_are_written_as_elementtree_writes_them(
    name: str, classname: str, outcome: tuple[str, str, str, str] | None
) -> None:
    # Test cases skip ElementTree (a string each); the text must be ET's own, indented as
    # ET.indent lays out a case inside a suite.
    case = ET.Element("testcase", name=name, classname=classname, time="0")
    escape = junit.escape_attribute
    head = f'<testcase name="{escape(name)}" classname="{escape(classname)}" time="0"'
    if outcome is None:
        ours = head + " />"
    else:
        tag, message, kind, text = outcome
        child = ET.SubElement(case, tag, message=message, type=kind)
        child.text = text
        ours = (
            head
            + ">"
            + junit._Outcome("errors", tag, message, kind, text).xml()
            + "\n    </testcase>"
        )
    ET.indent(case, space="  ", level=2)
    assert ET.tostring(case, encoding="unicode") == ours
