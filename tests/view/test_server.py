"""`assay view` over HTTP: pages, the sample API, errors, read-only store, loopback only."""

from __future__ import annotations

import hashlib
import html
import http.client
import json
import re
import sqlite3
import urllib.error
import urllib.request

import pytest

from assay.store.runs import RunStore

from .conftest import BROKEN, FIXED, serving


def get(server, path: str) -> tuple[int, str, dict[str, str]]:
    try:
        with urllib.request.urlopen(server.url + path, timeout=30) as response:
            return response.status, response.read().decode(), dict(response.headers)
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode(), dict(error.headers)


def test_index_lists_both_runs_with_their_gate_verdicts_and_a_trend_per_metric(server, runs):
    status, body, headers = get(server, "/")
    assert status == 200
    assert "default-src 'none'" in headers["Content-Security-Policy"]
    assert set(re.findall(r'href="/run/([^"]+)"', body)) == {runs.first, runs.second}
    # first run: the quickstart declares no gate rule -> passed; second: --min-macro-f1 0.99
    assert runs.reports[runs.first]["gate"]["passed"] is True
    assert runs.reports[runs.second]["gate"]["passed"] is False
    assert body.count('<span class="chip pass">passed</span>') == 1
    assert body.count('<span class="chip fail">failed</span>') == 1
    metrics = [m["name"] for m in runs.reports[runs.first]["metrics"]]
    assert re.findall(r'<svg class="trend" data-metric="([^"]+)"', body) == sorted(metrics)


def test_run_page_has_every_row_and_the_metric_intervals(server, runs):
    report = runs.reports[runs.first]
    status, body, _ = get(server, f"/run/{runs.first}")
    assert status == 200
    assert body.count('<tr class="row"') == len(report["rows"])
    failed = [r["id"] for r in report["rows"] if not r["passed"]]
    assert set(re.findall(r'data-id="([^"]+)" data-status="(?:failed|errored)"', body)) == set(
        failed
    )
    exact = next(m for m in report["metrics"] if m["name"] == "exact-match")
    low, high = exact["mean_ci"]["low"], exact["mean_ci"]["high"]
    assert f"[{low:.3f}, {high:.3f}]" in body
    assert body.count('class="histogram"') == len(report["metrics"])


def test_failing_rows_show_what_the_report_shows_for_a_ranking(server, runs):
    """A retrieval row's answer is the ranking it scored and its reason names the rank, as in
    the run's own report (the viewer rebuilds both from the saved outputs file)."""
    report = runs.reports[runs.first]
    wanted = next(
        r
        for r in report["failing_rows"]
        if r["sample_id"] == "rag-warranty" and r["metric"] == "retrieval-hit-at-k"
    )
    _, body, _ = get(server, f"/run/{runs.first}")
    table = body.split('class="failing"', 1)[1].split("</table>", 1)[0]
    row = next(
        cells
        for cells in re.findall(r"<tr>(.*?)</tr>", table, re.S)
        if "rag-warranty" in cells and "retrieval-hit-at-k" in cells
    )
    assert html.escape(wanted["reason"], quote=False) in row
    assert html.escape(wanted["actual"], quote=False)[:120] in row


def test_sample_api_gives_input_expected_actual_and_scores(server, runs):
    status, body, _ = get(server, f"/api/sample?run={runs.first}&id={FIXED}")
    assert status == 200
    detail = json.loads(body)
    assert detail["input"] == {"question": "What is the capital of Australia?"}
    assert detail["expected"] == "Canberra"
    assert detail["repetitions"][0]["answer"] == {"output": "Sydney"}
    assert detail["repetitions"][0]["scores"]["exact-match"]["score"] == 0.0
    assert detail["note"] is None


def test_compare_page_puts_the_flips_first(server, runs):
    status, body, _ = get(server, f"/compare?a={runs.first}&b={runs.second}")
    assert status == 200
    rows = re.findall(r'<tr class="([^"]*)" data-changed="(\d)" data-id="([^"]+)"', body)
    assert rows[0] == ("flip-down", "1", BROKEN)
    assert rows[1] == ("flip-up", "1", FIXED)
    assert all(changed == "0" for _, changed, _ in rows[2:])
    assert re.search(r'<span class="chip (regressed|too-few-pairs|no-detectable-change)"', body)
    assert '<span class="chip no-change"' not in body


@pytest.mark.parametrize(
    ("path", "status", "needle"),
    [
        ("/run/no-such-run", 404, "no run &#x27;no-such-run&#x27;"),
        ("/nowhere", 404, "no page at /nowhere"),
        ("/compare?a=x", 404, "missing query parameter &#x27;b&#x27;"),
        ("/api/sample?run=x&id=y", 404, '"error"'),
    ],
)
def test_unknown_things_are_404_pages_not_tracebacks(server, path, status, needle):
    code, body, _ = get(server, path)
    assert code == status
    assert needle in body and "Traceback" not in body


def test_api_sample_of_an_unknown_sample_is_a_json_404(server, runs):
    code, body, _ = get(server, f"/api/sample?run={runs.first}&id=nope")
    assert code == 404
    assert json.loads(body) == {"error": f"run '{runs.first}' has no sample 'nope'"}


def test_a_foreign_host_header_is_refused(server):
    host, port = server.server_address[:2]
    connection = http.client.HTTPConnection(host, port, timeout=10)
    connection.request("GET", "/", headers={"Host": f"attacker.example:{port}"})
    assert connection.getresponse().status == 403
    connection.close()


def test_the_viewer_never_writes_the_store(server, runs):
    before = hashlib.sha256(runs.store.read_bytes()).hexdigest()
    for path in ("/", f"/run/{runs.first}", f"/compare?a={runs.first}&b={runs.second}"):
        assert get(server, path)[0] == 200
    assert hashlib.sha256(runs.store.read_bytes()).hexdigest() == before
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        server.data.store.db.execute("DELETE FROM runs")


def test_missing_store_is_a_one_line_usage_error(tmp_path, capsys):
    from assay.cli import main

    with pytest.raises(SystemExit) as info:
        main(["view", "--store", str(tmp_path / "none.db"), "--port", "0"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("assay: error: no run store at") and err.count("\n") == 1
    assert not (tmp_path / "none.db").exists()


def test_gate_verdict_is_recorded_in_the_store(runs):
    store = RunStore(runs.store, read_only=True)
    try:
        assert store.gate(runs.first)["passed"] is True
        assert store.gate(runs.second)["failures"][0]["rule"] == "min_macro_f1"
    finally:
        store.db.close()


def test_a_damaged_run_is_named_and_the_other_runs_are_still_listed(runs, tmp_path):
    """One run edited by hand in the store (a created_at that is no date) used to turn the
    whole index into an error page; it is now a note, and every other run is listed."""
    import shutil

    copy = tmp_path / "runs.db"
    shutil.copy(runs.store, copy)
    with sqlite3.connect(copy) as db:
        db.execute("UPDATE runs SET created_at = 'yesterday' WHERE run_id = ?", (runs.first,))
    with serving(copy) as server:
        status, body, _ = get(server, "/")
    assert status == 200
    assert set(re.findall(r'href="/run/([^"]+)"', body)) == {runs.second}
    assert f"run &#x27;{runs.first}&#x27;: the stored run record (runs) is damaged" in body


def test_redact_shows_no_text_on_any_page(runs):
    """`assay view --redact` (once missing: only run/report had it): no input, expected value,
    answer or message on any page or in the sample API; ids and numbers stay."""
    texts = ["What is the capital of Australia?", "Canberra", "Sydney"]
    paths = ["/", f"/run/{runs.first}", f"/compare?a={runs.first}&b={runs.second}"]
    paths.append(f"/api/sample?run={runs.first}&id={FIXED}")
    for redact in (False, True):
        with serving(runs.store, redact=redact) as server:
            bodies = {path: get(server, path) for path in paths}
        assert all(status == 200 for status, _, _ in bodies.values())
        everything = "".join(body for _, body, _ in bodies.values())
        shown = [text for text in texts if text in everything]
        assert shown == ([] if redact else texts), (redact, shown)
        detail = json.loads(bodies[paths[-1]][1])
        assert detail["repetitions"][0]["scores"]["exact-match"]["score"] == 0.0
        assert FIXED in bodies[paths[1]][1]
        if redact:
            assert detail["input"] is None and detail["expected"] is None
            assert detail["repetitions"][0]["answer"] is None
