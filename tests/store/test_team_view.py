"""The team viewer: a token beyond loopback, and the JSON API over a store on each backend."""

from __future__ import annotations

import csv
import io
import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from assay.errors import UsageError
from assay.store.location import store_location
from assay.view.auth import Access, access_for
from assay.view.data import ViewData
from assay.view.server import ViewServer

from .helpers import assay, write_project

TOKEN = "team-token-0123456789"


def test_beyond_loopback_the_viewer_needs_a_token(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="ASSAY_VIEW_TOKEN"):
        access_for("0.0.0.0", {})
    with pytest.raises(UsageError, match="at least 16"):
        access_for("0.0.0.0", {"ASSAY_VIEW_TOKEN": "short"})
    assert access_for("127.0.0.1", {}).token is None
    assert access_for("0.0.0.0", {"ASSAY_VIEW_TOKEN": TOKEN}).token == TOKEN
    refused = assay("view", "--store", str(tmp_path / "r.db"), "--host", "0.0.0.0", cwd=tmp_path)
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1
    assert "ASSAY_VIEW_TOKEN" in refused.stderr


@pytest.fixture
def team(store_place: str, tmp_path: Path) -> Iterator[tuple[str, str, Path]]:
    """A store with runs on two branches and two datasets, and a viewer serving it (with a
    token, on loopback): (viewer URL, store, project folder)."""
    write_project(tmp_path, 100)
    write_project(tmp_path, 12, name="small")
    base = ["--metric", "exact-match", "--store", store_place, "-q", "-f", "json"]
    steps = [
        ("main", ["run", "big.jsonl", "--outputs", "outputs.json", "--run-id", "m1", *base]),
        ("main", ["run", "big.jsonl", "--sut", "bot:answer", "--run-id", "m2", *base]),
        ("feature", ["run", "big.jsonl", "--outputs", "outputs.json", "--run-id", "f1", *base]),
        (
            "feature",
            ["run", "small.jsonl", "--outputs", "small-outputs.json", "--run-id", "s1", *base],
        ),
    ]
    for branch, args in steps:
        done = assay(*args, cwd=tmp_path, env={"ASSAY_BRANCH": branch})
        assert done.returncode in (0, 1), done.stderr
    data = ViewData(store_location(store_place))
    server = ViewServer(data, "127.0.0.1", 0, Access(TOKEN))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.url, store_place, tmp_path
    finally:
        server.shutdown()
        server.server_close()
        data.close()


def get(url: str, *, token: str | None = TOKEN, cookie: str | None = None) -> tuple[int, Any]:
    request = urllib.request.Request(url)
    if token is not None:
        request.add_header("Authorization", f"Bearer {token}")
    if cookie is not None:
        request.add_header("Cookie", cookie)
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as refused:
        return refused.code, refused.read()


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def test_the_token_as_bearer_or_login_cookie(team: tuple[str, str, Path]) -> None:
    url = team[0]
    assert get(f"{url}/api/runs", token=None)[0] == 401
    assert get(f"{url}/api/runs", token="team-token-WRONG-0000")[0] == 401
    assert get(f"{url}/api/runs")[0] == 200
    assert get(f"{url}/", token=None)[0] in (303, 200)  # to the login page
    opener = urllib.request.build_opener(_NoRedirect)
    for given, status in (("not-the-token-000000", 401), (TOKEN, 303)):
        form = urllib.request.Request(f"{url}/login", data=f"token={given}".encode())
        try:
            answer = opener.open(form, timeout=30)
        except urllib.error.HTTPError as refused:
            answer = refused
        assert answer.status == status
    cookie = answer.headers["Set-Cookie"].split(";")[0]
    assert TOKEN not in cookie and "HttpOnly" in answer.headers["Set-Cookie"]
    assert get(f"{url}/api/runs", token=None, cookie=cookie)[0] == 200
    assert get(f"{url}/", token=None, cookie=cookie)[0] == 200
    assert get(f"{url}/api/runs", token=None, cookie="assay_view=forged")[0] == 401


def test_runs_are_filtered_and_paged_newest_first(team: tuple[str, str, Path]) -> None:
    url = team[0]
    status, body = get(f"{url}/api/runs")
    listed = json.loads(body)
    assert status == 200 and listed["schema_version"] == "assay.api.v1"
    assert [r["run_id"] for r in listed["runs"]] == ["s1", "f1", "m2", "m1"]
    assert {r["run_id"]: r["branch"] for r in listed["runs"]}["m1"] == "main"
    first = json.loads(get(f"{url}/api/runs?limit=3")[1])
    assert [r["run_id"] for r in first["runs"]] == ["s1", "f1", "m2"] and first["next_offset"] == 3
    second = json.loads(get(f"{url}/api/runs?limit=3&offset=3")[1])
    assert [r["run_id"] for r in second["runs"]] == ["m1"] and second["next_offset"] is None
    by = {
        "dataset=big": ["f1", "m2", "m1"],
        "branch=main": ["m2", "m1"],
        "branch=feature&dataset=small": ["s1"],
        "tag=odd": ["s1", "f1", "m2", "m1"],
        "tag=nope": [],
    }
    for query, expected in by.items():
        found = json.loads(get(f"{url}/api/runs?{query}")[1])
        assert [r["run_id"] for r in found["runs"]] == expected, query
    assert get(f"{url}/api/runs?limit=x")[0] == 422
    assert get(f"{url}/api/runs/nope")[0] == 404


def test_a_runs_report_and_rows_csv(team: tuple[str, str, Path]) -> None:
    url, store, folder = team
    status, body = get(f"{url}/api/runs/m2")
    expected = assay("report", "m2", "--store", store, "-f", "json", cwd=folder)
    assert status == 200 and body.decode() == expected.stdout
    report = json.loads(body)
    status, body = get(f"{url}/api/runs/m2/rows.csv")
    assert status == 200
    lines = list(csv.DictReader(io.StringIO(body.decode())))
    assert list(lines[0]) == [
        "sample_id", "repetition", "tags", "metric", "status", "score", "threshold", "reason",
    ]  # fmt: skip
    # independently: a line per metric score and per error, each status by the 0.5 threshold
    wanted = []
    for row in report["rows"]:
        for metric, message in row["errors"].items():
            wanted.append((row["id"], metric, "errored", "", message))
        for metric, scored in row["scores"].items():
            ok = scored["score"] >= 0.5
            wanted.append(
                (row["id"], metric, "passed" if ok else "failed", str(scored["score"]), "")
            )
    got = [
        (line["sample_id"], line["metric"], line["status"], line["score"], line["reason"])
        for line in lines
    ]
    assert [g[:4] for g in got] == [w[:4] for w in wanted]
    assert sum(1 for g in got if g[2] == "errored") == 1  # the bot raises for s99 alone
    assert all(g[4].startswith("scored ") for g in got if g[2] == "failed")


def test_compare_trend_and_the_openapi_document(team: tuple[str, str, Path]) -> None:
    url, store, folder = team
    status, body = get(f"{url}/api/compare?a=m1&b=m2")
    comparison = json.loads(body)
    assert status == 200 and comparison["schema_version"] == "assay.comparison.v1"
    assert comparison["reference"]["run_id"] == "m1" and comparison["current"]["run_id"] == "m2"
    trend = json.loads(get(f"{url}/api/trend?metric=exact-match&dataset=big")[1])
    assert [p["run_id"] for p in trend["points"]] == ["m1", "m2", "f1"]
    for point in trend["points"]:
        shown = assay("report", point["run_id"], "--store", store, "-f", "json", cwd=folder)
        metric = json.loads(shown.stdout)["metrics"][0]
        assert (point["mean"], point["pass_rate"]) == (metric["mean"], metric["pass_rate"])
        # failed: scored below threshold; errored: not scored (never one for the other)
        assert (point["failed"], point["errored"]) == (metric["failed"], metric["errored"])
    on_main = json.loads(get(f"{url}/api/trend?metric=exact-match&branch=main")[1])
    assert [p["run_id"] for p in on_main["points"]] == ["m1", "m2"]
    document = json.loads(get(f"{url}/api/openapi.json")[1])
    assert document["openapi"].startswith("3.1")
    for path in document["paths"]:
        concrete = path.replace("{run_id}", "m1")
        query = {"/api/compare": "?a=m1&b=m2", "/api/trend": "?metric=exact-match"}.get(path, "")
        assert get(f"{url}{concrete}{query}")[0] == 200, path
