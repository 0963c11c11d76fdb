"""The provider transport (providers/pool.py, httpx) against raw scripted servers on loopback.

Each server answers every request on a connection with the next scripted byte string, so the
framings a real endpoint may use (Content-Length, chunked, close-delimited, interim 1xx, LF-only
heads, gzip) and the broken ones are all exercised over a real socket.
"""

from __future__ import annotations

import asyncio
import gzip
import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from assay.errors import ConnectionFailure, ProviderError, TimedOut
from assay.providers import pool
from assay.providers.pool import ConnectionPool

Script = list[bytes | None]  # None: close the connection without answering


class RawServer:
    """Reads one request (head + Content-Length body) at a time and writes the next answer;
    closes the connection after an answer without a length (its body ends at the close)."""

    def __init__(self, answers: Script, *, delay_s: float = 0.0) -> None:
        self.answers = list(answers)
        self.delay_s = delay_s
        self.requests: list[bytes] = []
        self.connections = 0
        self.server: asyncio.Server | None = None

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while self.answers:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(
                    int(line.split(b":", 1)[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                )
                self.requests.append(head + await reader.readexactly(length))
                answer = self.answers.pop(0)
                await asyncio.sleep(self.delay_s)
                if answer is None:
                    break
                writer.write(answer)
                await writer.drain()
                if b"Content-Length" not in answer and b"chunked" not in answer:
                    break  # a close-delimited body ends when the connection does
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    @property
    def url(self) -> str:
        assert self.server is not None
        host, port = self.server.sockets[0].getsockname()[:2]
        return f"http://{host}:{port}/v1"


@pytest.fixture
async def serve() -> AsyncIterator[object]:
    servers: list[asyncio.Server] = []
    clients: list[ConnectionPool] = []

    async def start(answers: Script, *, delay_s: float = 0.0, timeout_s: float = 5.0):
        raw = RawServer(answers, delay_s=delay_s)
        raw.server = await asyncio.start_server(raw.handle, "127.0.0.1", 0)
        servers.append(raw.server)
        client = ConnectionPool(
            raw.url, headers={"Authorization": "Bearer k"}, timeout_s=timeout_s, keep=2
        )
        clients.append(client)
        return raw, client

    yield start
    for client in clients:
        await client.close()
    for server in servers:
        server.close()


def ok(body: bytes, *extra: bytes) -> bytes:
    head = b"HTTP/1.1 200 OK\r\nContent-Length: " + str(len(body)).encode() + b"\r\n"
    return head + b"".join(e + b"\r\n" for e in extra) + b"\r\n" + body


async def test_the_request_is_a_well_formed_post_under_the_base_path(serve) -> None:
    raw, client = await serve([ok(b'{"a": 1}')])
    reply = await client.post("chat/completions", b'{"q": "x"}')
    assert (reply.status, reply.body) == (200, b'{"a": 1}')
    request = raw.requests[0]
    head, body = request.split(b"\r\n\r\n", 1)
    lines = head.decode().split("\r\n")
    assert lines[0] == "POST /v1/chat/completions HTTP/1.1"
    assert f"Host: {raw.url.removeprefix('http://').removesuffix('/v1')}" in lines
    assert "Authorization: Bearer k" in lines and "Content-Length: 10" in lines
    assert body == b'{"q": "x"}'


async def test_keep_alive_reuses_one_connection(serve) -> None:
    raw, client = await serve([ok(b"1"), ok(b"2"), ok(b"3")])
    bodies = [(await client.post("x", b"")).body for _ in range(3)]
    assert bodies == [b"1", b"2", b"3"] and raw.connections == 1


async def test_chunked_bodies_with_extensions_and_trailers(serve) -> None:
    chunked = (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"5;ext=1\r\nhello\r\n7\r\n, world\r\n0\r\nX-Trailer: t\r\n\r\n"
    )
    raw, client = await serve([chunked, ok(b"next")])
    assert (await client.post("x", b"")).body == b"hello, world"
    assert (await client.post("x", b"")).body == b"next"
    assert raw.connections == 1  # the chunked answer left the connection reusable


async def test_interim_answers_are_skipped(serve) -> None:
    _, client = await serve([b"HTTP/1.1 100 Continue\r\n\r\n" + ok(b"final")])
    reply = await client.post("x", b"")
    assert (reply.status, reply.body) == (200, b"final")


async def test_headers_are_lower_case_and_repeated_ones_joined(serve) -> None:
    answer = ok(b"{}", b"Retry-After: 3", b"X-Many: a", b"X-Many: b")
    _, client = await serve([answer])
    reply = await client.post("x", b"")
    assert reply.headers["retry-after"] == "3" and reply.headers["x-many"] == "a, b"


async def test_connection_close_and_close_delimited_bodies_open_a_new_connection(serve) -> None:
    closing = b"HTTP/1.1 503 Busy\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}"
    _, client = await serve([closing, None])
    assert (await client.post("x", b"")).status == 503
    _, client2 = await serve([b"HTTP/1.0 200 OK\r\n\r\nuntil the end", None])
    assert (await client2.post("x", b"")).body == b"until the end"


@pytest.mark.parametrize(
    "answer",
    [
        None,  # dropped without an answer
        b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",  # closed mid-body
        b"SMTP ready\r\n\r\n",  # not HTTP
        b"HTTP/1.1 abc OK\r\n\r\n",  # no status code
        b"HTTP/1.1 200 OK\r\nContent-Length: 1, 2\r\n\r\n12",  # conflicting lengths
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",  # bad chunk size
        b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n",
        b"HTTP/1.1 2000 OK\r\nContent-Length: 2\r\n\r\n{}",  # a four-digit status
        b"HTTP/1.1 200 OK\r\nContent-Length: +2\r\n\r\n{}",  # a signed length
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0x2\r\n{}\r\n0\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: notchunked\r\n\r\n{}",  # an unknown coding
    ],
)
async def test_broken_answers_are_connection_failures(serve, answer: bytes | None) -> None:
    _, client = await serve([answer])
    with pytest.raises(ConnectionFailure) as info:
        await client.post("x", b"")
    assert not isinstance(info.value, TimedOut)


async def test_a_slow_answer_times_out(serve) -> None:
    _, client = await serve([ok(b"late")], delay_s=1.0, timeout_s=0.1)
    with pytest.raises(TimedOut):
        await client.post("x", b"")


async def test_a_refused_connection_is_a_connection_failure() -> None:
    listener = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    listener.close()
    await listener.wait_closed()
    client = ConnectionPool(f"http://127.0.0.1:{port}/v1", headers={}, timeout_s=2, keep=1)
    with pytest.raises(ConnectionFailure, match="connection error"):
        await client.post("x", b"")


async def test_a_closed_pool_refuses_requests(serve) -> None:
    _, client = await serve([ok(b"1")])
    await client.close()
    assert client.is_closed()
    with pytest.raises(ConnectionFailure):
        await client.post("x", b"")


def _self_signed(directory: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and its key (PEM files), made with ``cryptography``."""
    crypto = pytest.importorskip("cryptography")
    del crypto
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = directory / "cert.pem", directory / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_file, key_file


async def test_tls_is_verified_against_the_trust_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cert_file, key_file = _self_signed(tmp_path)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert_file, key_file)
    raw = RawServer([ok(b"secret"), ok(b"again")])
    raw.server = await asyncio.start_server(raw.handle, "127.0.0.1", 0, ssl=context)
    url = raw.url.replace("http://", "https://")
    try:
        untrusted = ConnectionPool(url, headers={}, timeout_s=5, keep=1)
        with pytest.raises(ProviderError, match=r"TLS to 127\.0\.0\.1 failed") as info:
            await untrusted.post("x", b"")  # a certificate nobody vouched for is refused
        assert not info.value.retryable  # named as TLS and final: no retry can mend it
        monkeypatch.setenv("SSL_CERT_FILE", str(cert_file))
        trusted = ConnectionPool(url, headers={}, timeout_s=5, keep=1)
        bodies = [(await trusted.post("x", b"{}")).body for _ in range(2)]
        await trusted.close()
        assert bodies == [b"secret", b"again"]
        assert raw.connections == 1  # kept alive (the refused handshake never got this far)
    finally:
        raw.server.close()


@pytest.mark.parametrize(
    "answer",
    [
        b"HTTP/1.1 200 OK\r\nContent-Length: 1000000000000\r\n\r\nx",  # a declared terabyte
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffff\r\n" + b"x" * 99,
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n8\r\n12345678\r\n8\r\n12345678\r\n",
        b"HTTP/1.0 200 OK\r\n\r\n" + b"y" * 200_000,  # close-delimited, past the cap
    ],
    ids=["content-length", "huge-chunk", "many-chunks", "to-close"],
)
async def test_a_reply_past_the_body_cap_is_refused_not_held(
    serve, answer: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A provider (or anything at its address) cannot make the client hold an unbounded body."""
    monkeypatch.setattr(pool, "MAX_BODY", 12)
    _, client = await serve([answer])
    with pytest.raises(ConnectionFailure, match="larger than"):
        await client.post("x", b"")


async def test_lf_only_heads_are_read(serve) -> None:
    """A head whose lines end in a bare LF is read, not waited on until the timeout."""
    _, client = await serve([b"HTTP/1.1 200 OK\nContent-Length: 2\n\n{}"], timeout_s=2)
    reply = await client.post("x", b"")
    assert (reply.status, reply.body) == (200, b"{}")


async def test_gzip_bodies_are_inflated(serve) -> None:
    packed = gzip.compress(b'{"answer": 1}')
    answer = ok(packed, b"Content-Encoding: gzip")
    _, client = await serve([answer])
    assert (await client.post("x", b"")).body == b'{"answer": 1}'


async def test_an_error_answer_is_not_read(serve) -> None:
    """A 502 with a large page gives its status and headers; the body is left unread."""
    page = b"<html>" + b"x" * 100_000
    head = b"HTTP/1.1 502 Bad Gateway\r\nRetry-After: 2\r\nContent-Length: "
    _, client = await serve([head + str(len(page)).encode() + b"\r\n\r\n" + page])
    reply = await client.post("x", b"")
    assert (reply.status, reply.body, reply.headers["retry-after"]) == (502, b"", "2")


@pytest.mark.parametrize(
    ("base", "sent"),
    [
        ("/v1?api-version=2024-06-01", b"POST /v1/chat/completions?api-version=2024-06-01 "),
        ("/my models/v1", b"POST /my%20models/v1/chat/completions "),
        ("/mod\u00e8les/v1", b"POST /mod%C3%A8les/v1/chat/completions "),
    ],
)
async def test_base_url_queries_and_paths_are_sent_as_urls_are(
    serve, base: str, sent: bytes
) -> None:
    raw, _ = await serve([ok(b"{}")])
    url = raw.url.removesuffix("/v1") + base
    client = ConnectionPool(url, headers={}, timeout_s=5, keep=1)
    try:
        assert (await client.post("chat/completions", b"{}")).status == 200
    finally:
        await client.close()
    assert raw.requests[0].startswith(sent)
