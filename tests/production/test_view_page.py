"""``assay view``'s production page: each monitored metric's verdict and its window trend."""

from __future__ import annotations

import os
import threading
import urllib.request
from pathlib import Path

import pytest

from assay.cli import main
from assay.view.data import ViewData
from assay.view.server import ViewServer

from .otlp_builders import rag_trace, request


def run(*args: str) -> int:
    with pytest.raises(SystemExit) as info:
        main(list(args))
    return int(info.value.code or 0)


def get(server: ViewServer, path: str) -> tuple[int, str]:
    with urllib.request.urlopen(server.url + path, timeout=30) as response:
        return response.status, response.read().decode()


def serve(project: Path) -> tuple[ViewServer, ViewData, threading.Thread]:
    data = ViewData(project / ".assay" / "runs.db")
    server = ViewServer(data, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return server, data, thread


def test_production_page_shows_the_alert_and_the_trend(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    for name in list(os.environ):
        if name.startswith("ASSAY_"):
            monkeypatch.delenv(name)
    (tmp_path / ".assay").mkdir()
    context = "Roaming is included in every plan."
    off = "The Vienna office closes at noon on Tuesdays and visitor parking is free."
    good = [rag_trace(t, "Is roaming included?", context, context) for t in range(1, 61)]
    bad = [rag_trace(t, "Is roaming included?", off, context) for t in range(61, 101)]
    spans = [s for trace in good + bad for s in trace]
    (tmp_path / "spans.pb").write_bytes(request(spans).SerializeToString())
    assert run("ingest", "spans.pb") == 0
    assert run("monitor", "--settle", "0", "-m", "faithfulness") == 1
    capsys.readouterr()
    server, data, thread = serve(tmp_path)
    try:
        status, html = get(server, "/production")
        assert status == 200
        assert "faithfulness" in html and ">alert<" in html
        assert 'aria-label="faithfulness pass rate per window"' in html
        # the default rule's windows of 50: traces 1-50 all pass, 51-100 pass 10 of 50
        # the default rule's windows of 50: traces 1-50 all pass, 51-100 pass 10 of 50
        assert html.count("<circle") == 2
        assert "pass rate 1.000</title>" in html and "pass rate 0.200</title>" in html
        assert f"{61:032x}" in html  # a row that moved it
        status, front = get(server, "/")
        assert 'href="/production"' in front
    finally:
        server.shutdown()
        server.server_close()
        data.close()
        thread.join(timeout=5)
