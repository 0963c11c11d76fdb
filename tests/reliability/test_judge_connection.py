"""Issue 33, defect 1: a stray response on an idle kept-alive connection never becomes a verdict.

The endpoint here answers every chat request with the real verdict (0.8) and then sends a second,
unsolicited response (0.0) on the same connection, in the same write or a moment later. With
provider concurrency 1 every request after the first reuses that connection. On a7b0681 the
hand-written client read the stray bytes as the next request's reply: the judge scored
``[0.8, 0.0, 0.8, 0.0]``, exited 0 and cached the stray verdicts for the next run.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from assay.cli import main
from assay.providers import registry
from assay.providers import settings as provider_settings
from openai_server import chat_completion
from report.reports import check_report

REAL = {"score": 0.8, "reason": "the real verdict"}
STRAY = {"score": 0.0, "reason": "an unsolicited second response"}


def _response(body: bytes) -> bytes:
    head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}"
    return head.encode() + b"\r\n\r\n" + body


class StrayServer:
    """Answers each POST, then writes a second response nobody asked for (``pause_s`` later)."""

    def __init__(self, pause_s: float) -> None:
        self.pause_s = pause_s
        self.requests = 0
        self.loop = asyncio.new_event_loop()
        self.port = 0
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        server = self.loop.run_until_complete(asyncio.start_server(self._handle, "127.0.0.1", 0))
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        self.loop.run_forever()
        server.close()
        pending = asyncio.all_tasks(self.loop)  # the connections' handlers, still reading
        for task in pending:
            task.cancel()
        self.loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        self.loop.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(
                    int(line.split(b":", 1)[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                )
                request = json.loads(await reader.readexactly(length))
                self.requests += 1
                real = _response(chat_completion(request, json.dumps(REAL)))
                stray = _response(chat_completion(request, json.dumps(STRAY)))
                if self.pause_s:
                    writer.write(real)
                    await writer.drain()
                    await asyncio.sleep(self.pause_s)
                    writer.write(stray)
                else:
                    writer.write(real + stray)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    def __enter__(self) -> StrayServer:
        self._thread.start()
        self._ready.wait(5)
        return self

    def __exit__(self, *exc: object) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.chdir(tmp_path)
    for name in list(os.environ):
        if name.startswith(("ASSAY_", "OPENAI_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    registry.reset()
    yield
    registry.reset()


def _run(capsys: pytest.CaptureFixture[str], url: str) -> tuple[int, dict]:
    args = ["d.yml", "--outputs", "o.json", "--base-url", url, "--cache-dir", "cache"]
    args += ["--provider-concurrency", "1", "--no-store", "--format", "json", "--quiet"]
    with pytest.raises(SystemExit) as info:
        main(["run", *args])
    code = 0 if info.value.code is None else int(info.value.code)
    return code, check_report(capsys.readouterr().out)


def _scores(report: dict) -> list[float]:
    rows = sorted(report["rows"], key=lambda row: row["id"])
    return [row["scores"]["llm-as-judge"]["score"] for row in rows]


def test_a_stray_response_is_never_a_verdict_nor_cached(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The stray response arrives with the real one (one write): the parser has buffered it."""
    samples = [
        {"id": f"q{i}", "input": {"question": f"Question {i}?"}, "expected_output": f"A{i}"}
        for i in range(4)
    ]
    document = {"schema_version": "assay.dataset.v1", "name": "stray", "samples": samples}
    document["metrics"] = ["llm-as-judge"]
    (tmp_path / "d.yml").write_text(yaml.safe_dump(document), encoding="utf-8")
    outputs = {"outputs": {f"q{i}": f"answer {i}" for i in range(4)}}
    (tmp_path / "o.json").write_text(json.dumps(outputs), encoding="utf-8")
    with StrayServer(0.0) as server:
        url = f"http://127.0.0.1:{server.port}/v1"
        code, report = _run(capsys, url)
        assert _scores(report) == [0.8] * 4 and code == 0
        assert server.requests == 4
        registry.reset()
        code, again = _run(capsys, url)  # every verdict now comes from the cache
    assert _scores(again) == [0.8] * 4 and again["usage"]["cached_calls"] == 4
    assert server.requests == 4


def _accept(text: str) -> float:
    return float(json.loads(text)["score"])


async def test_bytes_that_arrive_on_an_idle_connection_are_never_read_as_a_reply(
    tmp_path: Path,
) -> None:
    """The stray response arrives while the connection waits idle in the pool."""
    with StrayServer(0.02) as server:
        url = f"http://127.0.0.1:{server.port}/v1"
        cli = {"base_url": url, "cache_dir": tmp_path, "no_cache": True, "provider_concurrency": 1}
        provider = registry.chat_provider(provider_settings.build(cli=cli))
        verdicts = []
        for i in range(4):
            messages = [{"role": "user", "content": f"grade {i}"}]
            value, _ = await provider.complete(
                messages, params={}, template_version="t", accept=_accept
            )
            verdicts.append(value)
            await asyncio.sleep(0.2)  # idle: the stray bytes arrive now
        await registry.aclose()
    assert verdicts == [0.8] * 4 and server.requests == 4
