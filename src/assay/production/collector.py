"""``assay collect``: an OTLP/HTTP trace receiver (``POST /v1/traces``, protobuf or JSON, gzip).

The standard library's HTTP server with bounded work: at most ``max_connections`` requests are
handled at once (the next is answered 503 at once), decoded batches wait in a queue of
``queue_size`` holding at most ``max_queued_bytes`` of request bodies (past either, 429), and
both carry ``Retry-After`` as OTLP/HTTP asks, so memory is bounded by the connection limit
times the body limit plus the queued bytes. One writer thread
samples, redacts and stores. It binds loopback by default; any other address needs a token that
clients send as ``Authorization: Bearer <token>``.
"""

from __future__ import annotations

import contextlib
import hmac
import ipaddress
import queue
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Final

from assay.errors import AssayError, TraceError, UsageError
from assay.production.intake import Intake, IntakeCounts
from assay.production.otlp import RawSpan, parse_body
from assay.production.store import TraceStore

TOKEN_ENV: Final = "ASSAY_VIEW_TOKEN"
TRACES_PATH: Final = "/v1/traces"
RETRY_AFTER_S: Final = 1


@dataclass(frozen=True)
class CollectorLimits:
    """How much the collector takes at once; memory is bounded by their products."""

    max_body: int = 16 * 1024 * 1024
    queue_size: int = 64
    max_queued_bytes: int = 64 * 1024 * 1024
    """Bodies (as received) whose spans wait for the writer; one body is always let in."""
    max_connections: int = 16
    read_timeout_s: float = 30.0


def is_loopback(host: str) -> bool:
    """Whether ``host`` names only this machine (127.0.0.0/8, ::1, localhost)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_bind(host: str, token: str | None) -> None:
    """Refuse a non-loopback address without a token (traffic there is the whole network's)."""
    if not is_loopback(host) and not token:
        raise UsageError(
            f"assay collect binds {host}, which is not loopback: set a token with --token or "
            f"{TOKEN_ENV} (clients send 'Authorization: Bearer <token>')"
        )


class _Server(ThreadingHTTPServer):
    """A threading server that refuses work past ``max_connections`` instead of queueing it."""

    daemon_threads = True
    collector: Collector

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self.collector.slots.acquire(blocking=False):
            _refuse_busy(request)
            self.shutdown_request(request)
            return
        super().process_request(request, client_address)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.collector.slots.release()


def _refuse_busy(connection: socket.socket) -> None:
    """Answer 503 on a connection no handler can take. What the client already sent is read
    (briefly, at most 64 KB) before the socket closes: closing over unread bytes resets the
    connection, and the client would see a reset instead of the 503 and its Retry-After."""
    body = b"collector busy"
    head = (
        f"HTTP/1.1 503 Service Unavailable\r\nRetry-After: {RETRY_AFTER_S}\r\n"
        "Content-Type: text/plain\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    with contextlib.suppress(OSError):  # the client went away; nothing is owed to it
        connection.settimeout(0.05)
        connection.sendall(head.encode("ascii") + body)
        connection.shutdown(socket.SHUT_WR)
        drained = 0
        while drained < 65536 and (chunk := connection.recv(65536)):
            drained += len(chunk)


class Collector:
    """The receiver, its queue and its writer thread."""

    def __init__(
        self,
        intake: Intake,
        store_factory: Callable[[], TraceStore],
        *,
        host: str = "127.0.0.1",
        port: int = 4318,
        token: str | None = None,
        limits: CollectorLimits | None = None,
    ) -> None:
        check_bind(host, token)
        self.intake = intake
        self.token = token
        self.limits = limits or CollectorLimits()
        self.counts = IntakeCounts()
        self.errors: list[str] = []
        self.queue: queue.Queue[tuple[list[RawSpan], int] | None] = queue.Queue(
            self.limits.queue_size
        )
        self._queued_bytes = 0
        self._queued_lock = threading.Lock()
        self.slots = threading.BoundedSemaphore(self.limits.max_connections)
        self._store_factory = store_factory
        try:
            self.server = _Server((host, port), _handler(self))
        except OSError as exc:
            raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
        self.server.collector = self
        self._writer = threading.Thread(target=self._write_loop, name="assay-collect-writer")

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    def start(self) -> None:
        """Serve in background threads (the writer and the listener)."""
        self._writer.start()
        threading.Thread(
            target=self.server.serve_forever, name="assay-collect", daemon=True
        ).start()

    def stop(self) -> None:
        """Stop listening, write what is queued, close the store (once; again does nothing)."""
        if not self._writer.is_alive():
            return
        self.server.shutdown()
        self.server.server_close()
        self.queue.put(None)
        self._writer.join()

    def offer(self, spans: list[RawSpan], size: int) -> bool:
        """Queue a decoded request of ``size`` body bytes; False when the queue is full."""
        with self._queued_lock:
            over = self._queued_bytes + size > self.limits.max_queued_bytes
            if over and self._queued_bytes > 0:
                return False
            try:
                self.queue.put_nowait((spans, size))
            except queue.Full:
                return False
            self._queued_bytes += size
            return True

    def _write_loop(self) -> None:
        store = self._store_factory()
        try:
            while (item := self.queue.get()) is not None:
                batch, size = item
                try:
                    self.intake.admit(batch, store, self.counts)
                except AssayError as exc:  # a store error: said once per batch, not fatal
                    self.errors.append(str(exc))
                finally:
                    with self._queued_lock:
                        self._queued_bytes -= size
        finally:
            store.close()


def _handler(collector: Collector) -> type[BaseHTTPRequestHandler]:
    class Handler(_OtlpHandler):
        owner = collector
        timeout = collector.limits.read_timeout_s

    return Handler


class _OtlpHandler(BaseHTTPRequestHandler):
    """``POST /v1/traces``; everything else is 404 or 405."""

    owner: Collector
    protocol_version = "HTTP/1.1"
    server_version = "assay-collect"
    sys_version = ""

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: a request line per export would drown the terminal."""

    def do_GET(self) -> None:
        self._reply(405, b"use POST /v1/traces", "text/plain")

    def do_POST(self) -> None:
        if self.path.split("?")[0] != TRACES_PATH:
            self._reply(404, b"not found: use POST /v1/traces", "text/plain")
            return
        if not self._authorised():
            self._reply(401, b"missing or wrong bearer token", "text/plain")
            return
        body = self._body()
        if body is None:
            return
        try:
            spans = parse_body(
                body,
                self.headers.get("Content-Type", ""),
                self.headers.get("Content-Encoding", ""),
                "request",
            )
        except TraceError as exc:
            self._reply(400, str(exc).encode("utf-8", "replace")[:1000], "text/plain")
            return
        self._enqueue(spans, len(body))

    def _authorised(self) -> bool:
        token = self.owner.token
        if not token:
            return True
        given = self.headers.get("Authorization", "")
        return hmac.compare_digest(given.encode("utf-8", "replace"), f"Bearer {token}".encode())

    def _body(self) -> bytes | None:
        """The request body within the limit, or None after answering why not."""
        closing = self.close_connection  # as the request line and headers asked
        self.close_connection = True  # unless the whole body is read below
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            self._reply(411, b"send Content-Length (chunked bodies are not read)", "text/plain")
            return None
        try:
            length = int(self.headers.get("Content-Length", ""))
        except ValueError:
            self._reply(411, b"Content-Length required", "text/plain")
            return None
        if length < 0 or length > self.owner.limits.max_body:
            self._reply(413, b"body over the collector's limit", "text/plain")
            return None
        try:
            body = self.rfile.read(length)
        except OSError:
            return None
        if len(body) != length:
            return None
        self.close_connection = closing
        return body

    def _enqueue(self, spans: list[RawSpan], size: int) -> None:
        if not self.owner.offer(spans, size):
            self._reply(429, b"queue full, retry later", "text/plain", retry=True)
            return
        json_reply = self.headers.get("Content-Type", "").startswith("application/json")
        # An empty ExportTraceServiceResponse: zero bytes in protobuf, {} in JSON.
        self._reply(200, b"{}" if json_reply else b"", self.headers.get("Content-Type", ""))

    def _reply(self, status: int, body: bytes, kind: str, *, retry: bool = False) -> None:
        self.send_response(status)
        if retry:
            self.send_header("Retry-After", str(RETRY_AFTER_S))
        self.send_header("Content-Type", kind or "application/x-protobuf")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
