"""Issue 33, defect 9: the viewer serves from a bounded pool with idle timeouts, quietly.

On a7b0681 each connection had a thread of its own with no idle timeout (400 half-sent requests
held 402 threads), and a client that disconnected early printed BrokenPipeError tracebacks.
"""

from __future__ import annotations

import socket
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from assay.view.data import ViewData
from assay.view.server import ViewServer

from .conftest import Runs


def _half_sent(port: int, count: int) -> list[socket.socket]:
    held = []
    for _ in range(count):
        client = socket.create_connection(("127.0.0.1", port))
        client.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # the head never ends
        held.append(client)
    return held


def _wait(predicate: object, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return True
        time.sleep(0.05)
    return False


def test_half_sent_requests_hold_a_bounded_pool_then_time_out(
    runs: Runs, capsys: pytest.CaptureFixture[str]
) -> None:
    data = ViewData(runs.store)
    server = ViewServer(data, "127.0.0.1", 0, workers=4, idle_timeout_s=0.5)
    port = server.server_address[1]
    loop = threading.Thread(target=server.serve_forever, daemon=True)
    before = threading.active_count()
    loop.start()
    held = _half_sent(port, 40)
    try:
        time.sleep(0.3)
        assert threading.active_count() <= before + 1 + 4  # the loop and four workers
        # Each silent client is dropped after its idle timeout, so a real request is served.
        url = f"http://127.0.0.1:{port}/"
        with urllib.request.urlopen(url, timeout=30) as reply:
            assert reply.status == 200
        assert _wait(lambda: all(_closed(client) for client in held), 30)
    finally:
        for client in held:
            client.close()
        server.shutdown()
        server.server_close()
        data.close()
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err and "Error" not in captured.err


def _closed(client: socket.socket) -> bool:
    client.settimeout(0.01)
    try:
        return client.recv(1) == b""
    except TimeoutError:
        return False
    except ConnectionError:
        return True


def test_an_early_disconnect_prints_nothing(
    runs: Runs, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    data = ViewData(runs.store)
    server = ViewServer(data, "127.0.0.1", 0)
    port = server.server_address[1]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        for _ in range(20):
            client = socket.create_connection(("127.0.0.1", port))
            client.setsockopt(
                socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00"
            )
            client.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n" % port)
            client.close()  # a reset before the page is written
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=30) as reply:
            assert reply.status == 200
    finally:
        server.shutdown()
        server.server_close()
        data.close()
    assert "Traceback" not in capsys.readouterr().err
