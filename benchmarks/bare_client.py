"""The least a judge run can take on this machine, measured: a bare client and a bare start-up.

``bench_judge_throughput.py`` compares ``assay run`` with the concurrency x latency bound.
No client reaches that bound: the server needs CPU per request, the kernel's loopback send
wakes it up, and its timers fire a little late. This module measures what is left of the
bound on this machine when the client does nothing else:

- :func:`bare_span`: N asyncio keep-alive connections post ``samples`` chat completions of a
  judge prompt's size to the same server and read each reply whole, with no prompt building,
  verdict parsing, scoring, store or report. The server's own clock gives the span from the
  first request's arrival to the last reply, as for ``assay run``.
- :func:`stack_start_s`: a fresh interpreter that imports only what any typer CLI with options
  loads before it can send a request (typer, the pydantic layer typer 0.29+ coerces options
  through, asyncio and ssl), best of several.

A CLI built on this stack cannot finish the benchmark's command faster than the sum of the
two, so ``ideal / (start-up + bare span)`` is the highest fraction of the bound it can show.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

# What a typer CLI with options imports before its command runs; typer 0.29+ builds a
# pydantic TypeAdapter per option in typer._adapters (absent from older typer: skipped).
STACK = (
    "import typer, pydantic, asyncio, ssl\n"
    "try:\n import typer._adapters\nexcept ImportError:\n pass"
)
PROMPT = "Grade the answer against the expected output. " * 20  # about a judge prompt's size


def _body(index: int) -> bytes:
    messages = [
        {"role": "system", "content": PROMPT},
        {"role": "user", "content": f"Question: What is fact number {index}? Answer: fact holds."},
    ]
    return json.dumps({"model": "bench-judge", "messages": messages, "temperature": 0}).encode()


async def _worker(url: str, todo: list[int]) -> None:
    """Post the chat completions in ``todo`` one after another over one kept-alive connection."""
    parts = urlsplit(url)
    reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
    path = parts.path.rstrip("/") + "/chat/completions"
    try:
        while todo:
            body = _body(todo.pop())
            head = f"POST {path} HTTP/1.1\r\nHost: {parts.netloc}\r\n"
            head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
            writer.write(head.encode("latin-1") + body)
            lines = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").lower().split("\r\n")
            size = next(int(line[15:]) for line in lines if line.startswith("content-length:"))
            json.loads(await reader.readexactly(size))
    finally:
        writer.close()


async def _post_all(url: str, samples: int, concurrency: int) -> None:
    todo = list(range(samples))
    await asyncio.gather(*(_worker(url, todo) for _ in range(concurrency)))


def bare_span(server: Any, samples: int, concurrency: int) -> float:
    """Seconds from the first request's arrival to the last reply (the server's clock) for a
    bare client posting ``samples`` chat completions, ``concurrency`` at a time."""
    server.reset()
    asyncio.run(_post_all(server.url, samples, concurrency))
    times = server.times()
    return float(times["last_reply"] - times["first_request"])


def stack_start_s(env: Mapping[str, str], repeat: int = 7) -> float:
    """Best wall seconds of a fresh interpreter importing the CLI stack (:data:`STACK`)."""
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", STACK], env=dict(env), check=True)
        best = min(best, time.perf_counter() - started)
    return best
