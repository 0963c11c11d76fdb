"""The lane against an HTTP system under test (loopback server wrapping the example bot)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from assay.cli import main
from report.reports import check_report

from .test_lane_cli import EXAMPLE, isolated  # noqa: F401  (autouse fixture)


class _Bot(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # quiet
        pass

    def do_POST(self) -> None:
        import larkspur_bot

        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        reply = json.dumps({"answer": larkspur_bot.answer(body)}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)


@pytest.fixture
def bot_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Bot)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/answer"
    finally:
        server.shutdown()
        server.server_close()


def test_lane_over_http(bot_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["adversarial", "--sut-url", bot_url, "--sut-output-path", "answer.output"]
    args += ["-c", "prompt-injection", "-c", "ssrf", "--no-store", "--no-history", "-f", "json"]
    args += ["--sut-trajectory-path", "answer.trajectory"]
    with pytest.raises(SystemExit) as info:
        main(args)
    report = check_report(capsys.readouterr().out)
    assert info.value.code == 0
    failed = {c["category"]: c["failed"] for c in report["adversarial"]["categories"]}
    assert failed == {"prompt-injection": 5, "ssrf": 0}
    assert report["run"]["system_under_test"]["kind"] == "http"
    tools = next(m for m in report["metrics"] if m["name"] == "forbidden-tool-call")
    assert (tools["scored"], tools["pass_rate"]) == (6, 1.0)
    assert str(EXAMPLE) not in json.dumps(report)


def test_trajectory_path_shapes() -> None:
    from assay.engine.http_sut import HttpTarget
    from assay.errors import SystemUnderTestError

    target = HttpTarget("http://127.0.0.1:9/x", trajectory_path="trace")
    read = target._read({"output": "ok", "trace": {"tool_calls": ["lookup_order"]}})
    assert read.trajectory == {"tool_calls": ["lookup_order"]}
    with pytest.raises(SystemUnderTestError, match="has no 'trace'"):
        target._read({"output": "ok"})
    with pytest.raises(SystemUnderTestError, match="is a number, not an object or a list"):
        target._read({"output": "ok", "trace": 3})
    assert target._read({"output": "ok", "trace": ["a"]}).trajectory == {"tool_calls": ["a"]}
    assert HttpTarget("http://127.0.0.1:9/x")._read({"output": "ok"}).trajectory is None
