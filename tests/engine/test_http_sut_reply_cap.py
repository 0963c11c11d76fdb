"""The HTTP system under test reads at most ``max_reply_bytes`` of decoded reply body.

A larger reply, or a small gzip body that inflates past the cap (a gzip bomb), fails its
sample with "reply larger than N MB" and is never held whole in memory.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from assay.data.dataset import Sample
from assay.engine.http_sut import MAX_REPLY_BYTES, HttpTarget
from assay.errors import SystemUnderTestError

BODIES = {
    "/small": (b'{"output": "fine"}', False),
    "/big": (b'{"output": "' + b"x" * 5000 + b'"}', False),
    "/small-gzip": (gzip.compress(b'{"output": "fine"}'), True),
    "/bomb": (gzip.compress(b'{"output": "' + b"a" * (MAX_REPLY_BYTES * 5) + b'"}'), True),
    "/corrupt-gzip": (b"not gzip at all", True),
}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the test reads the client's side."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body, zipped = BODIES[self.path]
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        if zipped:
            self.send_header("Content-Encoding", "gzip")
        self.end_headers()
        with contextlib.suppress(OSError):  # the client gave up on the body, as it should
            self.wfile.write(body)


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _answer(url: str, **options: Any) -> str:
    target = HttpTarget(url, timeout_s=30, **options)
    item = Sample(id="s1", input={"q": "x"}, expected_output="fine")

    async def go() -> str:
        try:
            return (await target.answer(item)).text
        finally:
            await target.aclose()

    return asyncio.run(go())


@pytest.mark.parametrize("path", ["/small", "/small-gzip"])
def test_a_reply_under_the_cap_is_read(base_url: str, path: str) -> None:
    assert _answer(base_url + path, max_reply_bytes=1000) == "fine"


def test_a_reply_over_the_cap_fails_the_sample(base_url: str) -> None:
    with pytest.raises(SystemUnderTestError, match=r"/big sent a reply larger than 0\.00095"):
        _answer(base_url + "/big", max_reply_bytes=1000)
    assert _answer(base_url + "/big", max_reply_bytes=6000).startswith("xxx")


def test_a_gzip_bomb_fails_the_sample_at_the_default_cap(base_url: str) -> None:
    with pytest.raises(SystemUnderTestError, match="/bomb sent a reply larger than 10 MB"):
        _answer(base_url + "/bomb")


def test_a_corrupt_gzip_body_fails_the_sample(base_url: str) -> None:
    with pytest.raises(SystemUnderTestError, match="gzip body that does not inflate"):
        _answer(base_url + "/corrupt-gzip")
