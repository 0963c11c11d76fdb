"""A lean keep-alive HTTP/1.1 connection pool for provider requests (an ``httpx`` transport).

httpx's default transport (httpcore) scans every pooled connection, and polls each idle
socket through anyio, on every request: with 32 connections that is most of the client's CPU
per judge call, and on a small machine the CPU, not the endpoint's latency, bounds the run.
This transport keeps idle connections on a stack (the most recently used is reused first) and
frames requests and responses with ``h11``, the HTTP/1.1 state machine httpcore itself uses.
httpx still builds requests, applies proxies from the environment (a proxied request never
reaches this transport) and raises its usual exceptions, which this transport raises too.

Every response is read whole before it is returned (provider replies are small JSON bodies);
a connection is kept only when both sides finished the exchange cleanly and the server did
not ask to close it. At most ``keep`` idle connections stay open; the endpoint's limiter
already bounds how many requests are in flight, so nobody waits here for a connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import sys
from collections.abc import Awaitable
from typing import Any, TypeVar

import h11
import httpx

T = TypeVar("T")
_READ_SIZE = 65536
_Origin = tuple[bytes, bytes, int]  # scheme, host, port


class _Connection:
    """One open socket to an origin and the h11 state of its current exchange."""

    __slots__ = ("h11", "reader", "writer")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.h11 = h11.Connection(our_role=h11.CLIENT)

    def usable(self) -> bool:
        """Idle and still open: the server has not closed it while it waited in the pool."""
        return not (self.reader.at_eof() or self.writer.is_closing())

    def close(self) -> None:
        self.writer.close()


async def _within(awaitable: Awaitable[T], seconds: float | None) -> T:
    """``awaitable``'s result, or ``TimeoutError`` after ``seconds`` (None: no limit)."""
    if seconds is None:
        return await awaitable
    if sys.version_info >= (3, 11):
        async with asyncio.timeout(seconds):
            return await awaitable
    return await asyncio.wait_for(awaitable, seconds)  # pragma: no cover - Python 3.10


class ConnectionPool(httpx.AsyncBaseTransport):
    """Keep-alive HTTP/1.1 connections per origin, at most ``keep`` idle ones kept open."""

    def __init__(self, *, keep: int, ssl_context: ssl.SSLContext | None = None) -> None:
        self.keep = keep
        self._ssl = ssl_context
        self._idle: dict[_Origin, list[_Connection]] = {}
        self._closed = False

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if self._closed:
            raise RuntimeError("the connection pool is closed")
        timeouts = request.extensions.get("timeout", {})
        origin = (request.url.raw_scheme, request.url.raw_host, request.url.port or 0)
        connection = await self._checkout(origin, timeouts.get("connect"), request)
        with _mapped(request):
            try:
                status, headers, body = await _within(
                    _exchange(connection, request), timeouts.get("read")
                )
            except BaseException:
                connection.close()
                raise
        self._checkin(origin, connection)
        return httpx.Response(
            status, headers=headers, content=body, extensions={"http_version": b"HTTP/1.1"}
        )

    async def _checkout(
        self, origin: _Origin, timeout: float | None, request: httpx.Request
    ) -> _Connection:
        """The most recently used idle connection to ``origin``, or a new one."""
        idle = self._idle.get(origin)
        while idle:
            connection = idle.pop()
            if connection.usable():
                return connection
            connection.close()
        scheme, host, port = origin
        secure = scheme == b"https"
        context = (self._ssl or httpx.create_ssl_context()) if secure else None
        if secure and self._ssl is None:
            self._ssl = context
        with _mapped(request, connecting=True):
            reader, writer = await _within(
                asyncio.open_connection(
                    host.decode("ascii"), port or (443 if secure else 80), ssl=context
                ),
                timeout,
            )
        return _Connection(reader, writer)

    def _checkin(self, origin: _Origin, connection: _Connection) -> None:
        """Keep a cleanly finished connection for the next request, or close it."""
        state = connection.h11
        if state.our_state is h11.DONE and state.their_state is h11.DONE and not self._closed:
            state.start_next_cycle()
            idle = self._idle.setdefault(origin, [])
            if len(idle) < self.keep:
                idle.append(connection)
                return
        connection.close()

    async def aclose(self) -> None:
        self._closed = True
        idle, self._idle = self._idle, {}
        for connections in idle.values():
            for connection in connections:
                connection.close()


async def _exchange(
    connection: _Connection, request: httpx.Request
) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    """Send ``request`` on ``connection`` and read the whole response."""
    state = connection.h11
    url = request.url
    headers = list(request.headers.raw)
    if "host" not in request.headers:
        headers.insert(0, (b"Host", url.netloc))
    body = await request.aread()
    target = url.raw_path
    connection.writer.write(
        state.send(h11.Request(method=request.method, target=target, headers=headers))
        + (state.send(h11.Data(data=body)) if body else b"")
        + state.send(h11.EndOfMessage())
    )
    status, raw_headers, chunks = 0, [], []
    while True:
        event = state.next_event()
        if event is h11.NEED_DATA:
            state.receive_data(await connection.reader.read(_READ_SIZE))
        elif isinstance(event, h11.Response):
            status, raw_headers = event.status_code, list(event.headers)
        elif isinstance(event, h11.Data):
            chunks.append(bytes(event.data))
        elif isinstance(event, h11.EndOfMessage):
            return status, raw_headers, b"".join(chunks)
        elif isinstance(event, h11.ConnectionClosed):
            raise httpx.RemoteProtocolError("the server closed the connection mid-response")
        # h11.InformationalResponse (1xx): wait for the final response


@contextlib.contextmanager
def _mapped(request: httpx.Request, *, connecting: bool = False) -> Any:
    """Socket, TLS, framing and timeout failures as the httpx exceptions its transport raises."""
    try:
        yield
    except (TimeoutError, asyncio.TimeoutError):  # distinct classes before Python 3.11
        late: type[httpx.TimeoutException] = (
            httpx.ConnectTimeout if connecting else httpx.ReadTimeout
        )
        raise late("timed out", request=request) from None
    except h11.RemoteProtocolError:
        raise httpx.RemoteProtocolError("malformed HTTP response", request=request) from None
    except (OSError, ssl.SSLError, asyncio.IncompleteReadError) as exc:
        failed: type[httpx.NetworkError] = httpx.ConnectError if connecting else httpx.ReadError
        raise failed(type(exc).__name__, request=request) from None
