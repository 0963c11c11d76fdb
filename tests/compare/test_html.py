"""HTML report: parsed structure, escaping, self-containment, and a real headless browser."""

from __future__ import annotations

import os
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest

from assay.report.html import render_html
from compare.cdp import Browser, find_chromium
from compare.factory import make_report
from compare.samples import HOSTILE_ID, HOSTILE_MESSAGE, HOSTILE_TAG, METRICS, rich_report


class Collector(HTMLParser):
    """Every start tag with its attributes, and the page's text."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)


def parse(document: str) -> Collector:
    collector = Collector()
    collector.feed(document)
    collector.close()
    return collector


@pytest.fixture(scope="module")
def rendered() -> tuple[str, object, object]:
    report, comparison = rich_report()
    return render_html(report, comparison), report, comparison


def test_one_chart_per_metric_with_ten_bars(rendered):
    document, report, _ = rendered
    page = parse(document)
    charts = [
        attrs for tag, attrs in page.tags if tag == "svg" and attrs.get("class") == "histogram"
    ]
    assert [c["data-metric"] for c in charts] == METRICS
    bars = re.findall(r'<rect class="bar"', document)
    assert len(bars) == 10 * len(METRICS)
    # bar titles carry the counts: they add up to each metric's scored executions
    for metric in report.metrics:
        chart = document.split(f'data-metric="{metric.name}" role="img"')[1].split("</svg>")[0]
        counts = [
            int(n)
            for n in re.findall(r"\): (\d+)</title>|\]: (\d+)</title>", chart)
            for n in n
            if n
        ]
        assert sum(counts) == metric.scored


def test_sections_and_numbers(rendered):
    document, report, comparison = rendered
    text = " ".join(parse(document).text)
    for heading in (
        "Summary",
        "Per-metric aggregates",
        "Score histograms",
        "Comparison with the baseline",
        "Cohorts by tag",
        "Errors: could not score (2)",
    ):
        assert heading in text
    assert "Gate failed" in text
    assert f"{report.summary.macro_f1:.4f}" in text
    judge = report.metric("judge")
    assert f"{judge.mean:.4f}" in text and f"{judge.p95:.4f}" in text
    assert "regressed" in text and "No regression" not in text
    assert comparison.regression_count > 0


def test_user_strings_are_escaped(rendered):
    document, _, _ = rendered
    page = parse(document)
    assert not [
        t for t, _ in page.tags if t in ("script", "img", "iframe", "object", "embed", "link")
    ]
    assert not any(name.startswith("on") for _, attrs in page.tags for name in attrs)
    text = "".join(page.text)
    assert HOSTILE_ID in text and HOSTILE_TAG in text
    assert "timeout & <b>bold</b>" in text and "\x07" not in document
    assert "&lt;script&gt;" in document and "support &lt;faq&gt; &amp; more" in document
    assert HOSTILE_MESSAGE.replace("\x07", "") in text


def test_self_contained_no_network(rendered):
    document, _, _ = rendered
    assert "Content-Security-Policy" in document and "default-src 'none'" in document
    page = parse(document)
    assert [
        a
        for _, attrs in page.tags
        for a in attrs
        if a in ("href", "src", "srcset", "action", "data")
    ] == []
    assert "http://" not in document.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "https://" not in document and "@import" not in document


def test_without_comparison_or_gate_and_with_empty_metric():
    report = make_report({"a": {"scores": {"m": [None]}}, "b": {"scores": {"m": [None]}}})
    document = render_html(report)
    text = " ".join(parse(document).text)
    assert "Comparison" not in text and "Gate" not in text
    assert "n/a" in text  # undefined mean printed as n/a, not 0
    assert document.count('class="histogram"') == 1


def _browser_or_skip() -> str:
    executable = find_chromium()
    if executable is None:
        pytest.skip(
            "chromium not installed: apt-get install -y chromium (Debian) to run the browser test"
        )
    return executable


def test_report_renders_in_headless_chromium(rendered, tmp_path):
    executable = _browser_or_skip()
    document, report, _ = rendered
    page_path = tmp_path / "report.html"
    page_path.write_text(document, encoding="utf-8")
    with Browser(executable, tmp_path / "profile") as browser:
        session = browser.open_page(page_path.as_uri())
        charts = browser.evaluate(
            session,
            """Array.from(document.querySelectorAll('svg.histogram')).map(svg => {
                 const box = svg.getBoundingClientRect();
                 return {metric: svg.dataset.metric, width: box.width, height: box.height,
                         bars: svg.querySelectorAll('rect.bar').length};
               })""",
        )
        scripts = browser.evaluate(session, "document.scripts.length")
        title = browser.evaluate(session, "document.title")
        body_text = browser.evaluate(session, "document.body.innerText")
        shot = browser.screenshot(session, tmp_path / "report.png")
        errors = browser.console_errors()
        requests = browser.requested_urls()
    assert errors == []
    assert [c["metric"] for c in charts] == [m.name for m in report.metrics]
    assert all(c["bars"] == 10 and c["width"] > 100 and c["height"] > 50 for c in charts)
    assert scripts == 0
    assert title == f"assay report — {report.dataset.name}"
    assert HOSTILE_ID in body_text  # shown as text, never run
    assert requests == [page_path.as_uri()]  # nothing fetched besides the page itself
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
    keep = os.environ.get("ASSAY_SCREENSHOT_DIR")
    if keep:  # CI can keep the screenshot as an artifact
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(keep) / "report.png")


def test_the_browser_harness_does_see_console_errors(tmp_path):
    """Guard against a vacuous 'no console errors': a broken page must be reported."""
    executable = _browser_or_skip()
    page_path = tmp_path / "broken.html"
    page_path.write_text(
        "<!DOCTYPE html><html><body><script>console.error('boom'); missingFunction();</script>"
        '<img src="missing.png"></body></html>',
        encoding="utf-8",
    )
    with Browser(executable, tmp_path / "profile") as browser:
        browser.open_page(page_path.as_uri())
        errors = browser.console_errors()
    assert any("boom" in e for e in errors)
    assert any("missingFunction" in e or "Uncaught" in e for e in errors)


def test_usage_and_unstable_samples_sections():
    from assay.report.model import Interval, ModelUsage, Repetitions, SampleAggregate, Usage

    report = make_report(
        {
            "flaky<1>": {"scores": {"m": [1.0, 0.0, 1.0]}},
            "steady": {"scores": {"m": [1.0, 1.0, 1.0]}},
        }
    )
    usage = Usage(
        calls=3,
        prompt_tokens=30,
        completion_tokens=6,
        total_tokens=36,
        latency_ms_mean=12.5,
        cost_usd=None,
        complete=False,
        unpriced_models=["judge-x"],
        models=[
            ModelUsage(
                model="judge-x",
                calls=3,
                cached_calls=1,
                prompt_tokens=30,
                completion_tokens=6,
                total_tokens=36,
                cost_usd=None,
                priced=False,
            )
        ],
    )
    aggregate = SampleAggregate(
        id="flaky<1>",
        row_hash="h",
        repetitions=3,
        passed=2,
        errored=0,
        pass_rate=2 / 3,
        pass_rate_ci=Interval(low=0.2077, high=0.9385, confidence=0.95),
        unstable=True,
        score_mean=2 / 3,
        score_stddev=0.4714,
    )
    report = report.model_copy(
        update={
            "usage": usage,
            "repetitions": Repetitions(count=3, unstable_samples=["flaky<1>"], samples=[aggregate]),
        }
    )
    text = " ".join(parse(render_html(report)).text)
    assert "Usage" in text and "judge-x" in text and "12.5 ms mean" in text
    assert "n/a (incomplete)" in text  # unpriced spend is unknown, never $0
    assert "Unstable samples (1)" in text and "flaky<1>" in text and "2/3" in text
