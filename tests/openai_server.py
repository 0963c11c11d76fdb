"""A real HTTP server on loopback that speaks the OpenAI protocol, scriptable per test.

It answers ``POST /v1/chat/completions`` and ``POST /v1/embeddings`` like an OpenAI-compatible
endpoint, counts every request, and can be told, per endpoint, to answer the next requests
with scripted failures: latency, HTTP 429 with ``Retry-After``, HTTP 500, a dropped connection,
a reply slower than the client's timeout, malformed JSON, or any JSON body. Default answers
come from ``chat_reply`` and ``embed`` callables that tests replace.

Used by the pytest fixture ``openai_server`` (tests/conftest.py) and by benchmarks/.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import multiprocessing
import re
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
    def chat(cls, content: str) -> Step:
        """A chat completion whose reply text is ``content`` (a scripted generation)."""
        return cls(body=chat_completion({}, content))

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


_PASSAGE = re.compile(r'<passage id="([^"]*)" title="([^"]*)">\n(.*?)\n</passage>', re.S)
_WORD = re.compile(r"[A-Za-z][A-Za-z-]{3,}")
_COMMON = frozenset(
    [
        "that",
        "this",
        "with",
        "from",
        "when",
        "they",
        "their",
        "there",
        "what",
        "which",
        "have",
        "does",
        "must",
    ]
)


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+", text) if len(s.strip()) > 20]


def _topic(sentence: str) -> str:
    words = [w.lower() for w in _WORD.findall(sentence) if w.lower() not in _COMMON]
    return ", ".join(dict.fromkeys(words[:4]))


def _generation(prompt: str, seed: int) -> str:
    """A deterministic question and answer drawn from the prompt's passages (seeded)."""
    kind = re.search(r"^KIND: (\S+)", prompt, re.M)
    found = _PASSAGE.findall(prompt)
    if kind is None or not found:
        return json.dumps({"question": "?", "answer": "?"})
    picks = []
    for number, (_, title, text) in enumerate(found):
        sentences = _sentences(text) or [text]
        picks.append((title, sentences[(seed + number) % len(sentences)]))
    title, sentence = picks[0]
    if kind.group(1) == "unanswerable":
        question = f"Who is the manager responsible for {title.lower()}?"
        return json.dumps({"question": question, "answer": "The documents do not say."})
    if len(picks) == 1:
        question = f"Under '{title}', what is stated about {_topic(sentence)}?"
        return json.dumps({"question": question, "answer": sentence})
    other_title, other = picks[1]
    verb = "Compare" if kind.group(1) == "comparison" else "Combine"
    question = f"{verb} what '{title}' says about {_topic(sentence)} with '{other_title}'."
    return json.dumps({"question": question, "answer": f"{sentence} {other}"})


def _check(prompt: str) -> str:
    """Answerable and supported when every word of the proposed answer is in the passages."""
    passages = " ".join(text for _, _, text in _PASSAGE.findall(prompt)).lower()
    answer = re.search(r"^PROPOSED ANSWER: (.*)$", prompt, re.M)
    words = _WORD.findall(answer.group(1) if answer else "")
    backed = all(w.lower() in passages for w in words)
    return json.dumps({"answerable": backed, "supported": backed, "reason": "word match"})


def _user_turn(prompt: str) -> str:
    """The simulated user says the goal's clauses (split at ';') in order, then is done."""
    goal = re.search(r"^YOUR GOAL: (.*)$", prompt, re.M)
    clauses = [c.strip() for c in (goal.group(1) if goal else "").split(";") if c.strip()]
    said = len(re.findall(r"^user: ", prompt.split("CONVERSATION SO FAR:", 1)[-1], re.M))
    if said < len(clauses):
        return json.dumps({"message": clauses[said], "status": "continue"})
    return json.dumps({"message": "", "status": "done"})


def _goal_verdict(prompt: str) -> str:
    """achieved when the expected outcome occurs in the final answer (case-insensitive; in a
    transcript, in what the assistant said)."""
    expected = re.search(r"^EXPECTED OUTCOME: (.*)$", prompt, re.M)
    answer = prompt.split("FINAL ANSWER:", 1)[-1].rsplit("Reply with one JSON", 1)[0]
    said = re.findall(r"^assistant: (.*)$", answer, re.M)  # a transcript: the assistant's part
    answer = "\n".join(said) if said else answer
    hit = expected is not None and expected.group(1).strip().lower() in answer.lower()
    verdict = "achieved" if hit else "not_achieved"
    return json.dumps({"verdict": verdict, "reason": "expected outcome matched" if hit else "no"})


def scripted_reply(request: dict[str, Any]) -> str:
    """A deterministic stand-in model for ``assay generate`` and ``assay simulate``: it writes
    questions from the passages of a generation prompt, checks them, plays a simulated user
    and gives goal verdicts; any other prompt gets the default judge verdict."""
    messages = request.get("messages") or [{}]
    prompt = str(messages[0].get("content", ""))
    if "\nKIND: " in prompt and "<passage " in prompt:
        return _generation(prompt, int(request.get("seed") or 0))
    if "PROPOSED ANSWER: " in prompt:
        return _check(prompt)
    if "YOUR GOAL: " in prompt:
        return _user_turn(prompt)
    if "EXPECTED OUTCOME: " in prompt:
        return _goal_verdict(prompt)
    return judge_reply(request)


def chat_completion(request: dict[str, Any], content: str, usage: bool = True) -> bytes:
    """A ``chat.completion`` body answering ``request`` with ``content`` (token counts: chars/4)."""
    prompt = sum(len(str(m.get("content", ""))) for m in request.get("messages", []))
    body: dict[str, Any] = {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.get("model", "unknown"),
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
    }
    if usage:
        body["usage"] = {
            "prompt_tokens": max(1, prompt // 4),
            "completion_tokens": max(1, len(content) // 4),
            "total_tokens": max(1, prompt // 4) + max(1, len(content) // 4),
        }
    return json.dumps(body).encode()


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
            return 200, chat_completion(request, self.chat_reply(request), self.report_usage)
        if path == EMBEDDINGS:
            inputs = request.get("input", [])
            inputs = [inputs] if isinstance(inputs, str) else list(inputs)
            vectors = self.embed(inputs)
            tokens = sum(max(1, len(str(t).split())) for t in inputs)
            body: dict[str, Any] = {
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


class _Handler(BaseHTTPRequestHandler):
    """Answers for the :class:`OpenAIServer` in ``state`` (set on a subclass per server)."""

    state: OpenAIServer
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out at once, no delayed-ACK stall

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return

    def do_GET(self) -> None:
        """``/_stats`` (call counts, JSON) and ``/_reset``: for a server in another process."""
        if self.path == "/_reset":
            self.state.reset()
        if self.path in ("/_stats", "/_reset"):
            with self.state._lock:
                body = json.dumps({"calls": dict(self.state.calls)}).encode()
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
        with self.state._lock:
            self.state.calls[path] += 1
            self.state.requests.append(
                (path, request, {k.lower(): v for k, v in self.headers.items()})
            )
            self.state._inflight += 1
            self.state.max_inflight = max(self.state.max_inflight, self.state._inflight)
        try:
            self._answer(path, request)
        finally:
            with self.state._lock:
                self.state._inflight -= 1

    def _answer(self, path: str, request: dict[str, Any]) -> None:
        step = self.state._next_step(path) or Step()
        delay = step.delay_s or self.state.latency_s
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
            status, body = self.state.default_body(path, request)
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


def _make_handler(server: OpenAIServer) -> type[BaseHTTPRequestHandler]:
    return type("Handler", (_Handler,), {"state": server})


class _Exchange(asyncio.Protocol):
    """One keep-alive connection of :func:`serve`: HTTP/1.1 requests framed by Content-Length."""

    def __init__(self, latency_s: float, calls: dict[str, int], times: dict[str, float]) -> None:
        self.latency_s = latency_s
        self.calls = calls
        self.times = times  # monotonic clock: the first chat request's arrival, the last reply
        self.buffer = bytearray()
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while (end := self.buffer.find(b"\r\n\r\n")) >= 0:
            lines = bytes(self.buffer[:end]).decode("latin-1").split("\r\n")
            method, target, _ = lines[0].split(" ", 2)
            headers = dict(line.split(":", 1) for line in lines[1:])
            lengths = [v for k, v in headers.items() if k.strip().lower() == "content-length"]
            size = int(lengths[0]) if lengths else 0
            if len(self.buffer) < end + 4 + size:
                return  # the rest of the body is still on its way
            body = bytes(self.buffer[end + 4 : end + 4 + size])
            del self.buffer[: end + 4 + size]
            self.answer(method, target.split("?", 1)[0], body)

    def answer(self, method: str, path: str, body: bytes) -> None:
        if method == "GET" and path in ("/_stats", "/_reset"):
            if path == "/_reset":
                self.calls.clear()
                self.times.clear()
            stats = {"calls": dict(self.calls), "times": dict(self.times)}
            self.send(200, json.dumps(stats).encode())
        elif method == "POST" and path == CHAT:
            self.calls[CHAT] += 1
            self.times.setdefault("first_request", time.monotonic())
            request = json.loads(body)
            reply = chat_completion(request, scripted_reply(request))
            asyncio.get_running_loop().call_later(self.latency_s, self.reply, reply)
        else:
            self.send(404, b'{"error": {"message": "not found"}}')

    def reply(self, body: bytes) -> None:
        self.send(200, body)
        self.times["last_reply"] = time.monotonic()

    def send(self, status: int, body: bytes) -> None:
        if self.transport is None or self.transport.is_closing():
            return
        reason = {200: "OK", 404: "Not Found"}[status]
        head = (
            f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        )
        self.transport.write(head.encode("latin-1") + body)


def serve(latency_ms: float, ready: Any) -> None:
    """Serve chat completions until killed (for a separate process); puts the URL on ``ready``.

    A single-threaded asyncio server for benchmarks: the same OpenAI protocol over HTTP/1.1
    keep-alive connections, each answer sent ``latency_ms`` after its request arrived, at a
    small fraction of the threaded :class:`OpenAIServer`'s CPU per request (which competes
    with the client on a small machine). Requests are answered in arrival order by
    :func:`scripted_reply` (the default judge verdict for a judge prompt); ``/_stats`` and
    ``/_reset`` as on :class:`OpenAIServer`.
    """

    async def main() -> None:
        calls: dict[str, int] = defaultdict(int)
        times: dict[str, float] = {}
        loop = asyncio.get_running_loop()
        server = await loop.create_server(
            lambda: _Exchange(latency_ms / 1000.0, calls, times), "127.0.0.1", 0, backlog=1024
        )
        host, port = server.sockets[0].getsockname()[:2]
        ready.put(f"http://{host}:{port}/v1")
        await server.serve_forever()

    asyncio.run(main())


class RemoteServer:
    """The benchmarks' loopback server (:func:`serve`) in a child process; call counts come
    from ``/_stats``. A child process has no GIL contention with the client.
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

    def times(self) -> dict[str, float]:
        """``time.monotonic()`` (one clock for every process) of the first chat request's
        arrival and of the last reply sent since the last reset; empty before any request."""
        return dict(self._get("/_stats")["times"])

    def reset(self) -> None:
        self._get("/_reset")

    def stop(self) -> None:
        self._process.terminate()
        self._process.join(10)


def _serve_scripted() -> None:
    """``python tests/openai_server.py``: the scripted server in the foreground (for trying
    ``assay generate`` and ``assay simulate`` by hand); prints its URL, stops on Ctrl-C."""
    server = OpenAIServer()
    server.chat_reply = scripted_reply
    with server:
        print(server.url, flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()


if __name__ == "__main__":
    _serve_scripted()
