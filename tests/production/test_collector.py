"""The OTLP/HTTP collector: status codes, back-pressure with Retry-After, binding rules."""

from __future__ import annotations

import gzip
import http.client
import socket
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from assay.errors import UsageError
from assay.production.collector import Collector, CollectorLimits, check_bind
from assay.production.intake import Intake
from assay.production.mapping import TraceMapping
from assay.production.redact import Redactor
from assay.production.store import StoredSpan, TraceStore

from .otlp_builders import json_request, rag_trace, request

PROTOBUF = {"Content-Type": "application/x-protobuf"}


def post(port: int, body: bytes, headers: dict[str, str], path: str = "/v1/traces"):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request("POST", path, body=body, headers=headers)
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        connection.close()


def intake() -> Intake:
    return Intake(Redactor(), TraceMapping())


@pytest.fixture
def running(tmp_path: Path) -> Iterator[Collector]:
    collector = Collector(intake(), lambda: TraceStore(tmp_path / "t.sqlite"), port=0)
    collector.start()
    yield collector
    collector.stop()


def body(trace: int = 1) -> bytes:
    return request(rag_trace(trace, "q?", "a jane@example.org.", "c")).SerializeToString()


def test_protobuf_json_and_gzip_are_received_and_stored(running: Collector, tmp_path: Path) -> None:
    status, headers, reply = post(running.port, body(1), PROTOBUF)
    assert (status, reply) == (200, b"")
    assert headers["Content-Type"] == "application/x-protobuf"
    text = json_request(
        [{"trace": 2, "span": 1, "name": "n", "start": 5, "attributes": {"output.value": "x"}}]
    )
    status, _, reply = post(
        running.port,
        gzip.compress(text.encode()),
        {"Content-Type": "application/json", "Content-Encoding": "gzip"},
    )
    assert (status, reply) == (200, b"{}")
    running.stop()
    store = TraceStore(tmp_path / "t.sqlite")
    assert store.counts() == (2, 5)
    assert store.record(f"{1:032x}").output == "a [REDACTED:email]."
    store.close()


@pytest.mark.parametrize(
    ("payload", "headers", "path", "status"),
    [
        (b"\xff\xff", PROTOBUF, "/v1/traces", 400),
        (b"{}", {"Content-Type": "text/plain"}, "/v1/traces", 400),
        (b"", PROTOBUF, "/v1/metrics", 404),
    ],
)
def test_bad_requests_are_answered_not_crashed(
    running: Collector, payload: bytes, headers: dict[str, str], path: str, status: int
) -> None:
    assert post(running.port, payload, headers, path)[0] == status
    assert post(running.port, body(), PROTOBUF)[0] == 200  # still serving


def test_a_body_over_the_limit_is_413(tmp_path: Path) -> None:
    collector = Collector(
        intake(),
        lambda: TraceStore(tmp_path / "t.sqlite"),
        port=0,
        limits=CollectorLimits(max_body=100),
    )
    collector.start()
    try:
        assert post(collector.port, b"x" * 101, PROTOBUF)[0] == 413
    finally:
        collector.stop()


class BlockingStore(TraceStore):
    """A store whose writes wait until released: the queue behind it fills."""

    entered = threading.Event()
    release = threading.Event()

    def write(self, spans: Sequence[StoredSpan], now_ns: int | None = None) -> int:
        self.entered.set()
        self.release.wait(30)
        return super().write(spans, now_ns)


def test_a_full_queue_answers_429_with_retry_after(tmp_path: Path) -> None:
    BlockingStore.entered.clear()
    BlockingStore.release.clear()
    collector = Collector(
        intake(),
        lambda: BlockingStore(tmp_path / "t.sqlite"),
        port=0,
        limits=CollectorLimits(queue_size=1),
    )
    collector.start()
    try:
        assert post(collector.port, body(1), PROTOBUF)[0] == 200
        assert BlockingStore.entered.wait(30)  # the writer holds batch 1
        assert post(collector.port, body(2), PROTOBUF)[0] == 200  # batch 2 waits in the queue
        status, headers, _ = post(collector.port, body(3), PROTOBUF)
        assert status == 429 and headers["Retry-After"] == "1"
    finally:
        BlockingStore.release.set()
        collector.stop()
    assert collector.counts.spans == 8  # the two accepted batches were written


def test_connections_past_the_limit_are_503_with_retry_after(tmp_path: Path) -> None:
    collector = Collector(
        intake(),
        lambda: TraceStore(tmp_path / "t.sqlite"),
        port=0,
        limits=CollectorLimits(max_connections=1, read_timeout_s=20),
    )
    collector.start()
    hog = socket.create_connection(("127.0.0.1", collector.port))
    try:
        hog.sendall(b"POST /v1/traces HTTP/1.1\r\nContent-Length: 10\r\n")  # never finished
        status, headers, _ = post(collector.port, body(), PROTOBUF)
        assert status == 503 and headers["Retry-After"] == "1"
    finally:
        hog.close()
        collector.stop()


def test_non_loopback_needs_a_token_and_a_token_is_checked(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="not loopback"):
        check_bind("0.0.0.0", None)
    check_bind("0.0.0.0", "s3cret")
    check_bind("::1", None)
    check_bind("localhost", None)
    collector = Collector(
        intake(), lambda: TraceStore(tmp_path / "t.sqlite"), port=0, token="s3cret"
    )
    collector.start()
    try:
        assert post(collector.port, body(), PROTOBUF)[0] == 401
        assert post(collector.port, body(), {**PROTOBUF, "Authorization": "Bearer wrong"})[0] == 401
        assert (
            post(collector.port, body(), {**PROTOBUF, "Authorization": "Bearer s3cret"})[0] == 200
        )
    finally:
        collector.stop()


def test_queued_bytes_past_the_budget_answer_429(tmp_path: Path) -> None:
    """The queue is bounded by bytes too: one body always gets in, a second waits for it."""
    BlockingStore.entered.clear()
    BlockingStore.release.clear()
    limits = CollectorLimits(queue_size=100, max_queued_bytes=1)
    collector = Collector(
        intake(), lambda: BlockingStore(tmp_path / "t.sqlite"), port=0, limits=limits
    )
    collector.start()
    try:
        assert post(collector.port, body(1), PROTOBUF)[0] == 200  # over budget, but alone
        assert BlockingStore.entered.wait(30)
        status, headers, _ = post(collector.port, body(2), PROTOBUF)
        assert status == 429 and headers["Retry-After"] == "1"
        BlockingStore.release.set()
        for _ in range(300):  # as a client does on 429: retry until the writer frees the budget
            status = post(collector.port, body(3), PROTOBUF)[0]
            if status != 429:
                break
            threading.Event().wait(0.1)
        assert status == 200
    finally:
        BlockingStore.release.set()
        collector.stop()
    assert collector.counts.spans == 8
