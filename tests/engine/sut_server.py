"""A loopback HTTP system under test for runner tests and benchmarks.

It answers ``POST /`` with ``{"output": ..., "retrieved": [...]}`` for a JSON body that carries a
``qid``. It counts calls per ``qid``, sleeps a fixed latency per request, and can be told to
fail some samples on their first call only (HTTP 500), to answer 429 with ``Retry-After``
whenever more than ``max_in_flight`` requests are being served, and to answer differently on
each call of a sample (a nondeterministic system).
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Answer = Callable[[str, int], str]


def correct_answer(qid: str, call: int) -> str:
    """Default answer: the expected one for every sample (``answer <qid>``)."""
    return f"answer {qid}"


class SutServer:
    """Start with ``with SutServer(latency_s=0.01) as server: ... server.url``."""

    def __init__(
        self,
        *,
        latency_s: float = 0.0,
        answer: Answer = correct_answer,
        fail_first: frozenset[str] = frozenset(),
        max_in_flight: int | None = None,
        retry_after: str = "0.05",
    ) -> None:
        self.latency_s = latency_s
        self.answer = answer
        self.fail_first = fail_first
        self.max_in_flight = max_in_flight
        self.retry_after = retry_after
        self.calls: Counter[str] = Counter()
        self.served: Counter[str] = Counter()
        self.rate_limited = 0
        self.incomplete = 0  # requests without a sample id: a client killed while sending one
        self.peak_in_flight = 0
        self.headers_seen: list[dict[str, str]] = []
        self._in_flight = 0
        self._lock = threading.Lock()
        self._httpd = _QuietServer(("127.0.0.1", 0), _handler(self))
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/answer"

    def __enter__(self) -> SutServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def reset_counts(self) -> None:
        with self._lock:
            self.calls.clear()
            self.served.clear()
            self.rate_limited = 0
            self.incomplete = 0
            self.peak_in_flight = 0

    def settle(self, quiet_s: float = 0.2, limit_s: float = 10.0) -> None:
        """Wait until nothing is being served and no call arrived for ``quiet_s`` (after a kill)."""
        deadline = time.monotonic() + limit_s
        last, since = self.total_calls(), time.monotonic()
        while time.monotonic() < deadline:
            time.sleep(0.02)
            now = self.total_calls()
            with self._lock:
                busy = self._in_flight > 0
            if now != last or busy:
                last, since = now, time.monotonic()
            elif time.monotonic() - since >= quiet_s:
                return

    def total_calls(self) -> int:
        with self._lock:
            return sum(self.calls.values())

    def reply(
        self, request: dict[str, Any], headers: dict[str, str]
    ) -> tuple[int, dict[str, str], bytes]:
        qid = str(request.get("qid", ""))
        if not qid:  # a body cut short (its sender was killed mid-request) is no sample's call
            with self._lock:
                self.incomplete += 1
            return 400, {}, b'{"error": "no qid"}'
        with self._lock:
            self.headers_seen.append(headers)
            self._in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self._in_flight)
            over = self.max_in_flight is not None and self._in_flight > self.max_in_flight
            if over:
                self.rate_limited += 1
            else:
                self.calls[qid] += 1
                call = self.calls[qid]
        try:
            if self.latency_s:
                time.sleep(self.latency_s)
            if over:
                return (
                    429,
                    {"Retry-After": self.retry_after},
                    b'{"error": "slow down, secret-body-text"}',
                )
            if qid in self.fail_first and call == 1:
                return 500, {}, b'{"error": "internal failure, secret-body-text"}'
            body = {"output": self.answer(qid, call), "retrieved": [f"doc-{qid}", "doc-other"]}
            with self._lock:
                self.served[qid] += 1
            return 200, {}, json.dumps(body).encode()
        finally:
            with self._lock:
                self._in_flight -= 1


class _QuietServer(ThreadingHTTPServer):
    request_queue_size = 512  # a class attribute: listen() runs inside the constructor
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        return  # a client killed mid-request (the SIGKILL tests) is expected, not news


def _handler(server: SutServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # else headers and body wait on delayed ACKs (~40 ms)

        def log_message(self, format: str, *args: Any) -> None:
            return

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                request = json.loads(raw or b"{}")
            except ValueError:
                request = {}
            status, headers, body = server.reply(
                request if isinstance(request, dict) else {}, dict(self.headers.items())
            )
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True

    return Handler


def write_dataset(
    path: Any,
    count: int,
    *,
    metrics: tuple[str, ...] = ("exact-match", "contains"),
    name: str = "runner.http",
) -> list[str]:
    """A JSON dataset of ``count`` samples whose expected answer is ``answer <qid>``."""
    ids = [f"s{i:04d}" for i in range(count)]
    document = {
        "schema_version": "assay.dataset.v1",
        "name": name,
        "metrics": list(metrics),
        "samples": [
            {
                "id": qid,
                "input": {"qid": qid, "question": f"question {qid}"},
                "expected_output": f"answer {qid}",
                "metadata": {"tags": ["even" if i % 2 == 0 else "odd"]},
            }
            for i, qid in enumerate(ids)
        ],
    }
    path.write_text(json.dumps(document), encoding="utf-8")
    return ids
