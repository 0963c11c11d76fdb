"""A real HTTP server on loopback that speaks the OpenAI protocol, scriptable per test.

It answers ``POST /v1/chat/completions`` and ``POST /v1/embeddings`` like an OpenAI-compatible
endpoint, counts every request, and can be told, per endpoint, to answer the next requests
with scripted failures: latency, HTTP 429 with ``Retry-After``, HTTP 500, a dropped connection,
a reply slower than the client's timeout, malformed JSON, or any JSON body. Default answers
come from ``chat_reply`` and ``embed`` callables that tests replace.

Used by the pytest fixture ``openai_server`` (tests/conftest.py) and by benchmarks/.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import multiprocessing
import socket
import threading
import time
import urllib.request
from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CHAT = "/v1/chat/completions"
EMBEDDINGS = "/v1/embeddings"


class _Listener(ThreadingHTTPServer):
    """A threading HTTP server whose listen backlog takes 256 connections at once.

    The backlog is fixed when the constructor binds and listens, so it must be a class
    attribute: the default (5) drops the extra SYNs when a client opens 32 connections
    together, and each dropped one waits for the kernel's 1-second SYN retransmission.
    """

    daemon_threads = True
    block_on_close = False
    request_queue_size = 256


@dataclass
class Step:
    """One scripted answer: a status and body, or a delay, or a dropped connection."""

    status: int = 200
    body: bytes | None = None  # None: the default handler's answer
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    drop: bool = False

    @classmethod
    def error(cls, status: int, message: str = "error", **headers: str) -> Step:
        body = json.dumps(
            {"error": {"message": message, "type": "server_error", "code": status}}
        ).encode()
        return cls(
            status=status, body=body, headers={k.replace("_", "-"): v for k, v in headers.items()}
        )

    @classmethod
    def json(cls, obj: Any, status: int = 200) -> Step:
        return cls(status=status, body=json.dumps(obj).encode())

    @classmethod
    def raw(cls, body: bytes, status: int = 200) -> Step:
        return cls(status=status, body=body)

    @classmethod
    def dropped(cls) -> Step:
        return cls(drop=True)

    @classmethod
    def slow(cls, delay_s: float) -> Step:
        return cls(delay_s=delay_s)


def hash_vector(text: str, dims: int = 16) -> list[float]:
    """A deterministic unit vector per text (sha256-seeded), for default embedding answers."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    raw = [(digest[i % len(digest)] ^ (i * 37 % 256)) / 255.0 - 0.5 for i in range(dims)]
    norm = sum(v * v for v in raw) ** 0.5 or 1.0
    return [v / norm for v in raw]


def judge_reply(request: dict[str, Any]) -> str:
    """Default chat answer: a valid judge verdict."""
    return json.dumps({"score": 1.0, "reason": "default verdict"})


class OpenAIServer:
    """The scriptable server; ``url`` is the base URL to hand to the client (ends in /v1)."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self.latency_s = 0.0
        self.chat_reply: Callable[[dict[str, Any]], str] = judge_reply
        self.embed: Callable[[list[str]], list[list[float]]] = lambda texts: [
            hash_vector(t) for t in texts
        ]
        self.report_usage = True
        self.calls: dict[str, int] = defaultdict(int)
        self.requests: list[tuple[str, dict[str, Any], dict[str, str]]] = []
        self._scripts: dict[str, deque[Step]] = defaultdict(deque)
        self._lock = threading.Lock()
        self._inflight = 0
        self.max_inflight = 0
        handler = _make_handler(self)
        self._httpd = _Listener((host, 0), handler)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="openai-server",
            daemon=True,
        )

    # -- lifecycle ------------------------------------------------------------------------
    def start(self) -> OpenAIServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> OpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    # -- scripting ------------------------------------------------------------------------
    def script(self, path: str, *steps: Step) -> None:
        """Queue answers for the next requests to ``path`` (CHAT or EMBEDDINGS), in order."""
        with self._lock:
            self._scripts[path].extend(steps)

    def reset(self) -> None:
        with self._lock:
            self.calls.clear()
            self.requests.clear()
            self._scripts.clear()
            self.max_inflight = 0

    def total_calls(self) -> int:
        with self._lock:
            return sum(self.calls.values())

    def _next_step(self, path: str) -> Step | None:
        with self._lock:
            queue = self._scripts.get(path)
            return queue.popleft() if queue else None

    # -- default answers ------------------------------------------------------------------
    def default_body(self, path: str, request: dict[str, Any]) -> tuple[int, bytes]:
        model = request.get("model", "unknown")
        if path == CHAT:
            content = self.chat_reply(request)
            prompt = sum(len(str(m.get("content", ""))) for m in request.get("messages", []))
            body: dict[str, Any] = {
                "id": "chatcmpl-test",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": content},
                        "finish_reason": "stop",
                    }
                ],
            }
            if self.report_usage:
                body["usage"] = {
                    "prompt_tokens": max(1, prompt // 4),
                    "completion_tokens": max(1, len(content) // 4),
                    "total_tokens": max(1, prompt // 4) + max(1, len(content) // 4),
                }
            return 200, json.dumps(body).encode()
        if path == EMBEDDINGS:
            inputs = request.get("input", [])
            inputs = [inputs] if isinstance(inputs, str) else list(inputs)
            vectors = self.embed(inputs)
            tokens = sum(max(1, len(str(t).split())) for t in inputs)
            body = {
                "object": "list",
                "model": model,
                "data": [
                    {"object": "embedding", "index": i, "embedding": v}
                    for i, v in enumerate(vectors)
                ],
            }
            if self.report_usage:
                body["usage"] = {"prompt_tokens": tokens, "total_tokens": tokens}
            return 200, json.dumps(body).encode()
        return 404, json.dumps({"error": {"message": "not found"}}).encode()


def _make_handler(server: OpenAIServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body go out at once, no delayed-ACK stall

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            return

        def do_GET(self) -> None:
            """``/_stats`` (call counts, JSON) and ``/_reset``: for a server in another process."""
            if self.path == "/_reset":
                server.reset()
            if self.path in ("/_stats", "/_reset"):
                with server._lock:
                    body = json.dumps({"calls": dict(server.calls)}).encode()
                self.send_response(200)
            else:
                body = b"{}"
                self.send_response(404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                request = json.loads(raw or b"{}")
            except ValueError:
                request = {}
            path = self.path.split("?", 1)[0]
            with server._lock:
                server.calls[path] += 1
                server.requests.append(
                    (path, request, {k.lower(): v for k, v in self.headers.items()})
                )
                server._inflight += 1
                server.max_inflight = max(server.max_inflight, server._inflight)
            try:
                self._answer(path, request)
            finally:
                with server._lock:
                    server._inflight -= 1

        def _answer(self, path: str, request: dict[str, Any]) -> None:
            step = server._next_step(path) or Step()
            delay = step.delay_s or server.latency_s
            if delay:
                time.sleep(delay)
            if step.drop:
                self.close_connection = True
                with contextlib.suppress(OSError):
                    self.connection.shutdown(socket.SHUT_RDWR)
                return
            if step.body is not None:
                status, body = step.status, step.body
            else:
                status, body = server.default_body(path, request)
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for name, value in step.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True

    return Handler


def serve(latency_ms: float, ready: Any) -> None:
    """Run a server until killed (for a separate process); puts its URL on ``ready``."""
    server = OpenAIServer()
    server.latency_s = latency_ms / 1000.0
    server.start()
    ready.put(server.url)
    threading.Event().wait()


class RemoteServer:
    """The loopback server in a child process; call counts come from ``/_stats``.

    A child process has no GIL contention with the client.
    """

    def __init__(self, latency_ms: float) -> None:
        context = multiprocessing.get_context("spawn")
        ready = context.Queue()
        self._process = context.Process(target=serve, args=(latency_ms, ready), daemon=True)
        self._process.start()
        self.url = ready.get(timeout=60)

    def _get(self, path: str) -> dict:
        with urllib.request.urlopen(self.url.removesuffix("/v1") + path, timeout=10) as response:
            return json.loads(response.read())

    def calls(self) -> int:
        return int(self._get("/_stats")["calls"].get(CHAT, 0))

    def reset(self) -> None:
        self._get("/_reset")

    def stop(self) -> None:
        self._process.terminate()
        self._process.join(10)
