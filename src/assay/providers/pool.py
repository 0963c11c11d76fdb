"""A lean keep-alive HTTP/1.1 client for provider requests: JSON POSTs to one endpoint.

A judge run sends thousands of small JSON POSTs to one origin, and on a small machine the
client's CPU per request, not the endpoint's latency, bounds it. httpx's default transport
(httpcore) scans every pooled connection, and polls each idle socket through anyio, on every
request; httpx itself adds URL parsing, cookie extraction and header models. This client
writes the request head itself and reads the response with asyncio streams (``Content-Length``,
chunked, or up to the close; 1xx answers skipped), keeping idle connections on a stack (the
most recently used is reused first). TLS uses httpx's trust store (``certifi``, or
``SSL_CERT_FILE`` / ``SSL_CERT_DIR``). When a proxy is configured in the environment,
requests go through ``httpx`` instead (:class:`ProxiedClient`), which honours it.

Failures are :class:`ConnectionFailure` (or :class:`TimedOut`, a slower answer than the
timeout) with a message that never carries the body; the caller maps them onto the retry stack.
"""

from __future__ import annotations

import asyncio
import os
import socket
import ssl
import sys
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass
from typing import Any, Final, TypeVar
from urllib.parse import urlsplit

from assay.errors import ConnectionFailure, TimedOut

T = TypeVar("T")
_PROXY_VARIABLES: Final = ("http_proxy", "https_proxy", "all_proxy")
_MAX_HEAD: Final = 64 * 1024  # bytes of status line + headers (asyncio's stream limit)
# Bytes of a reply body: a chat completion is a few KB; a larger answer is refused, not held.
MAX_BODY: Final = 64 * 1024 * 1024


@dataclass(frozen=True)
class Reply:
    """A complete HTTP answer; header names are lower-case (repeated ones joined by ', ')."""

    status: int
    headers: dict[str, str]
    body: bytes


def proxied() -> bool:
    """Whether the environment names an HTTP(S) proxy (then httpx, which honours it, sends)."""
    names = {name.lower() for name, value in os.environ.items() if value}
    return any(name in names for name in _PROXY_VARIABLES)


def tls_context() -> ssl.SSLContext:
    """Verifying TLS with the trust store httpx uses (so the same endpoints are trusted)."""
    cafile, capath = os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR")
    if not (cafile or capath):
        import certifi

        cafile = certifi.where()
    return ssl.create_default_context(cafile=cafile or None, capath=capath or None)


def _is_address(host: str) -> bool:
    """Whether ``host`` is an IPv4 or IPv6 address literal (not a name to resolve)."""
    for family in (socket.AF_INET, socket.AF_INET6):
        try:
            socket.inet_pton(family, host)
        except (OSError, ValueError):
            continue
        return True
    return False


async def _within(awaitable: Awaitable[T], seconds: float) -> T:
    """``awaitable``'s result, or :class:`TimedOut` after ``seconds``."""
    try:
        if sys.version_info >= (3, 11):
            async with asyncio.timeout(seconds):
                return await awaitable
        return await asyncio.wait_for(awaitable, seconds)  # pragma: no cover - Python 3.10
    except (TimeoutError, asyncio.TimeoutError):  # distinct classes before Python 3.11
        raise TimedOut(f"no answer within {seconds:g}s") from None


class _Connection:
    __slots__ = ("reader", "writer")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    def usable(self) -> bool:
        """Still open: the server has not closed it while it waited in the pool."""
        return not (self.reader.at_eof() or self.writer.is_closing())

    def close(self) -> None:
        self.writer.close()


class ConnectionPool:
    """POSTs to one ``base_url`` over keep-alive connections, at most ``keep`` kept idle.

    The endpoint's limiter bounds how many requests are in flight, so nobody waits here for a
    connection: a request with no idle one opens a new one.
    """

    def __init__(
        self, base_url: str, *, headers: Mapping[str, str], timeout_s: float, keep: int
    ) -> None:
        parts = urlsplit(base_url)
        self.secure = parts.scheme == "https"
        self.host = parts.hostname or ""
        self.port = parts.port or (443 if self.secure else 80)
        self.timeout_s = timeout_s
        self.keep = keep
        # Happy Eyeballs races a name's addresses; an address literal has one, and racing it
        # would only add a task to each connection.
        self._race: float | None = None if _is_address(self.host) else 0.25
        self._prefix = parts.path.rstrip("/") + "/"
        lines = [f"Host: {parts.netloc.rpartition('@')[2]}"]
        lines += [f"{name}: {value}" for name, value in headers.items()]
        self._head = "\r\n".join(lines)
        self._idle: list[_Connection] = []
        self._tls: ssl.SSLContext | None = None
        self._closed = False

    def is_closed(self) -> bool:
        return self._closed

    async def post(self, path: str, body: bytes) -> Reply:
        """The endpoint's complete answer to ``body`` POSTed at ``path`` (under the base URL)."""
        if self._closed:
            raise ConnectionFailure("the client is closed")
        head = (
            f"POST {self._prefix}{path} HTTP/1.1\r\n{self._head}\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        ).encode("latin-1")
        connection = await self._checkout()
        try:
            reply, reusable = await _within(_exchange(connection, head + body), self.timeout_s)
        except BaseException:
            connection.close()
            raise
        if reusable and not self._closed and len(self._idle) < self.keep:
            self._idle.append(connection)
        else:
            connection.close()
        return reply

    async def _checkout(self) -> _Connection:
        """The most recently used idle connection, or a new one."""
        while self._idle:
            connection = self._idle.pop()
            if connection.usable():
                return connection
            connection.close()
        if self.secure and self._tls is None:
            self._tls = tls_context()
        try:
            reader, writer = await _within(
                asyncio.open_connection(
                    self.host,
                    self.port,
                    ssl=self._tls,
                    limit=_MAX_HEAD,
                    happy_eyeballs_delay=self._race,
                ),
                self.timeout_s,
            )
        except (OSError, ssl.SSLError) as exc:
            raise ConnectionFailure(f"cannot connect ({type(exc).__name__})") from None
        return _Connection(reader, writer)

    async def close(self) -> None:
        self._closed = True
        idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()


async def _exchange(connection: _Connection, request: bytes) -> tuple[Reply, bool]:
    """Send ``request``, read the whole answer: (reply, whether the connection can be reused)."""
    try:
        connection.writer.write(request)
        await connection.writer.drain()
        return await _read_reply(connection.reader)
    except (OSError, ssl.SSLError, asyncio.IncompleteReadError, asyncio.LimitOverrunError) as exc:
        raise ConnectionFailure(f"connection lost ({type(exc).__name__})") from None
    except ValueError:  # a status, length or chunk size that is not a number
        raise ConnectionFailure("malformed HTTP response") from None


async def _read_reply(reader: asyncio.StreamReader) -> tuple[Reply, bool]:
    version, status, headers = await _read_head(reader)
    while 100 <= status < 200:  # interim answers (100 Continue, 103 Early Hints)
        version, status, headers = await _read_head(reader)
    framed = True
    if "chunked" in headers.get("transfer-encoding", "").lower():
        body = await _read_chunked(reader)
    elif "content-length" in headers:
        body = await reader.readexactly(_capped(_length(headers["content-length"])))
    elif status in (204, 304):
        body = b""
    else:  # delimited by the close
        body, framed = await _read_to_close(reader), False
    keep_alive = version == "HTTP/1.1" and "close" not in headers.get("connection", "").lower()
    return Reply(status, headers, body), framed and keep_alive


def _capped(size: int) -> int:
    """``size`` when a body that large is acceptable (see :data:`MAX_BODY`)."""
    if size > MAX_BODY:
        raise ConnectionFailure(f"reply body larger than {MAX_BODY // (1024 * 1024)} MiB")
    return size


async def _read_to_close(reader: asyncio.StreamReader) -> bytes:
    """A body delimited by the connection's close, refused once it passes :data:`MAX_BODY`."""
    parts: list[bytes] = []
    size = 0
    while piece := await reader.read(1 << 16):
        parts.append(piece)
        size = _capped(size + len(piece))
    return b"".join(parts)


async def _read_head(reader: asyncio.StreamReader) -> tuple[str, int, dict[str, str]]:
    lines = (await reader.readuntil(b"\r\n\r\n"))[:-4].decode("latin-1").split("\r\n")
    version, _, rest = lines[0].partition(" ")
    if not version.startswith("HTTP/1."):
        raise ValueError(version)
    status = int(rest[:3])
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        if not colon:
            raise ValueError(line)
        name, value = name.strip().lower(), value.strip()
        headers[name] = f"{headers[name]}, {value}" if name in headers else value
    return version, status, headers


def _length(raw: str) -> int:
    values = {value.strip() for value in raw.split(",")}  # a repeated, identical length is fine
    if len(values) != 1:
        raise ValueError(raw)
    length = int(values.pop())
    if length < 0:
        raise ValueError(raw)
    return length


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    chunks: list[bytes] = []
    total = 0
    while True:
        size = int((await reader.readuntil(b"\r\n")).split(b";", 1)[0].strip(), 16)
        total = _capped(total + size)
        if size == 0:
            while await reader.readuntil(b"\r\n") != b"\r\n":  # trailer fields
                pass
            return b"".join(chunks)
        chunks.append(await reader.readexactly(size))
        if await reader.readexactly(2) != b"\r\n":
            raise ValueError("chunk")


class ProxiedClient:
    """The same ``post`` through ``httpx``, for environments that name a proxy."""

    def __init__(
        self, base_url: str, *, headers: Mapping[str, str], timeout_s: float, keep: int
    ) -> None:
        import httpx

        self._base = base_url.rstrip("/") + "/"
        self._http: Any = httpx.AsyncClient(
            headers=dict(headers),
            timeout=timeout_s,
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=keep),
        )

    def is_closed(self) -> bool:
        return bool(self._http.is_closed)

    async def post(self, path: str, body: bytes) -> Reply:
        import httpx

        try:
            response = await self._http.post(self._base + path, content=body)
        except httpx.TimeoutException:
            raise TimedOut("no answer within the timeout") from None
        except httpx.TransportError as exc:
            raise ConnectionFailure(f"connection error ({type(exc).__name__})") from None
        headers = {name.lower(): value for name, value in response.headers.items()}
        return Reply(response.status_code, headers, response.content)

    async def close(self) -> None:
        await self._http.aclose()
