"""`assay view` driven in real headless Chromium: pages load, tables filter, flips show.

Set ASSAY_VIEW_SCREENSHOTS=docs/img to refresh the screenshots the docs show.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from compare.cdp import Browser, find_chromium

from .conftest import BROKEN, FIXED

VISIBLE_IDS = (
    "[...document.querySelectorAll('#samples tbody tr.row')]"
    ".filter(r => !r.hidden).map(r => r.dataset.id)"
)


@pytest.fixture
def browser(tmp_path):
    executable = find_chromium()
    if executable is None:
        pytest.skip("chromium not installed: apt-get install -y chromium to run the browser tests")
    with Browser(executable, tmp_path / "profile") as running:
        yield running


def _open(browser, url: str) -> str:
    session = browser.open_page(url)
    browser.send(
        "Emulation.setDeviceMetricsOverride",
        {"width": 1280, "height": 900, "deviceScaleFactor": 1, "mobile": False},
        session=session,
    )
    return session


def _keep(browser, session: str, tmp_path: Path, name: str) -> None:
    shot = browser.screenshot(session, tmp_path / name)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    target = os.environ.get("ASSAY_VIEW_SCREENSHOTS")
    if target:
        Path(target).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(target) / name)


def _filter(browser, session: str, **values: str) -> list[str]:
    for name, value in values.items():
        browser.evaluate(
            session,
            f"(() => {{const el = document.getElementById('f-{name}'); el.value = {value!r};"
            "el.dispatchEvent(new Event('input')); })()",
        )
    return browser.evaluate(session, VISIBLE_IDS)


def _wait_text(browser, session: str, expression: str, needle: str) -> str:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        text = browser.evaluate(session, expression) or ""
        if needle in text:
            return text
        time.sleep(0.1)
    raise AssertionError(f"{needle!r} never appeared; last text: {text[:500]!r}")


def test_runs_page_loads_with_trend_charts_and_nothing_external(browser, server, runs, tmp_path):
    session = _open(browser, server.url + "/")
    charts = browser.evaluate(
        session,
        "[...document.querySelectorAll('svg.trend')].map(s => s.querySelectorAll('circle').length)",
    )
    assert len(charts) == len(runs.reports[runs.first]["metrics"])
    assert all(points == 2 for points in charts)  # both runs scored every metric
    _keep(browser, session, tmp_path, "view-runs.png")
    assert browser.console_errors() == []
    assert all(url.startswith(server.url) for url in browser.requested_urls())


def test_run_page_filters_and_expands_a_row(browser, server, runs, tmp_path):
    rows = runs.reports[runs.first]["rows"]
    session = _open(browser, f"{server.url}/run/{runs.first}")
    assert len(browser.evaluate(session, VISIBLE_IDS)) == len(rows)
    failed = [r["id"] for r in rows if not r["passed"] and not r["errors"]]
    assert failed and _filter(browser, session, status="failed") == failed
    assert _filter(browser, session, status="all", metric="exact-match") == [
        r["id"] for r in rows if "exact-match" in r["scores"] or "exact-match" in r["errors"]
    ]
    assert _filter(browser, session, status="failed") == [FIXED]
    triage = [r["id"] for r in rows if "triage" in r["tags"]]
    assert _filter(browser, session, status="all", metric="", tag="triage") == triage
    assert _filter(browser, session, tag="", text="SYDNEY") == [FIXED]  # search the answers too
    count = browser.evaluate(session, "document.getElementById('f-count').textContent")
    assert count == f"1 of {len(rows)} rows"

    browser.evaluate(session, f"document.querySelector('tr.row[data-id=\"{FIXED}\"]').click()")
    detail = _wait_text(
        browser, session, "document.querySelector('tr.detail')?.innerText", "Canberra"
    )
    assert "What is the capital of Australia?" in detail and "Sydney" in detail
    _keep(browser, session, tmp_path, "view-run.png")
    assert browser.console_errors() == []


def test_compare_page_shows_the_flips_first_and_filters_changed_rows(
    browser, server, runs, tmp_path
):
    session = _open(browser, f"{server.url}/compare?a={runs.first}&b={runs.second}")
    first = browser.evaluate(
        session,
        "(() => { const r = document.querySelector('#pairs tbody tr');"
        " return [r.dataset.id, r.className, getComputedStyle(r.cells[0]).backgroundColor]; })()",
    )
    assert first[0] == BROKEN and first[1] == "flip-down"
    assert first[2] not in ("rgba(0, 0, 0, 0)", "transparent")  # highlighted
    browser.evaluate(
        session,
        "(() => {const b = document.getElementById('f-changed'); b.checked = true;"
        "b.dispatchEvent(new Event('input')); })()",
    )
    shown = browser.evaluate(
        session,
        "[...document.querySelectorAll('#pairs tbody tr')].filter(r => !r.hidden)"
        ".map(r => r.dataset.id)",
    )
    assert shown == [BROKEN, FIXED]
    browser.evaluate(
        session,
        "(() => {const b = document.getElementById('f-changed'); b.checked = false;"
        "b.dispatchEvent(new Event('input')); })()",
    )
    _keep(browser, session, tmp_path, "view-compare.png")
    assert browser.console_errors() == []
