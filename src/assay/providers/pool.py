"""The one outbound HTTP transport: JSON POSTs through httpx, every reply its request's own.

Chat, embeddings and the HTTP system under test all send through :func:`http_client`, an
``httpx.AsyncClient`` whose pool keeps as many idle keep-alive connections as the endpoint's
concurrency (the limiter bounds requests in flight, so nobody waits for a connection). httpx
parses the replies strictly (a status that is not three digits, a ``Content-Length`` that is not
digits, an unknown transfer coding: a protocol error), reads LF-only heads, inflates gzip, and
sends a base URL's query string and a non-ASCII path percent-encoded. TLS is verified against
the trust store httpx uses (``certifi``, or ``SSL_CERT_FILE`` / ``SSL_CERT_DIR``); a proxy named
in the environment is honoured.

HTTP/1.1 has no request ids: a reply is matched to its request only by arriving on its
connection after it. An endpoint (or a proxy) that sends bytes on an idle connection, a second
unsolicited response say, would hand them to the next request as its reply; httpcore drops an
idle connection whose socket is readable, but not one whose parser already buffered the bytes.
:class:`_CheckedTransport` closes such a connection as soon as the reply before it has ended,
so the bytes are never read as an answer.

Failures are :class:`ConnectionFailure` (:class:`TimedOut` past the timeout) or, for a TLS
failure that no retry can mend, a :class:`ProviderError`; no message carries a body.
"""

from __future__ import annotations

import asyncio
import os
import socket
import ssl
import sys
from collections.abc import AsyncIterator, Awaitable, Mapping
from dataclasses import dataclass
from typing import Final, TypeVar

import httpx

from assay.errors import ConnectionFailure, ProviderError, TimedOut

T = TypeVar("T")
# Bytes of a reply body: a chat completion is a few KB; a larger answer is refused, not held.
MAX_BODY: Final = 64 * 1024 * 1024
_KEEPALIVE_S: Final = 30.0  # an idle connection older than this is closed, not reused
_SHARD: Final = 4  # connections per httpx pool (see ConnectionPool)


@dataclass(frozen=True)
class Reply:
    """A complete HTTP answer; header names are lower-case (repeated ones joined by ', ').

    The body of a non-2xx answer is not read (``b""``): only its status and headers are used,
    and a failing endpoint's 1 MiB error page is never held.
    """

    status: int
    headers: dict[str, str]
    body: bytes


def tls_context() -> ssl.SSLContext:
    """Verifying TLS with the trust store httpx uses (so the same endpoints are trusted)."""
    cafile, capath = os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR")
    if not (cafile or capath):
        import certifi

        cafile = certifi.where()
    return ssl.create_default_context(cafile=cafile or None, capath=capath or None)


def _has_unread_bytes(connection: object) -> bool:
    """Whether an idle pooled connection holds bytes no request asked for.

    httpcore keeps them in its h11 parser (``trailing_data``). Where that cannot be seen (a
    connection of another kind, another httpcore layout), the answer is yes: a connection that
    cannot be checked is closed, never trusted.
    """
    inner = getattr(connection, "_connection", None)
    parser = getattr(inner, "_h11_state", None)
    trailing = getattr(parser, "trailing_data", None)
    if not isinstance(trailing, tuple) or len(trailing) != 2:
        return True
    data, closed = trailing
    return bool(data) or bool(closed)


class _SweptStream(httpx.AsyncByteStream):
    """A reply body that, once closed, has its transport close tainted idle connections."""

    def __init__(self, inner: httpx.AsyncByteStream, transport: _CheckedTransport) -> None:
        self._inner = inner
        self._transport = transport

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._inner:
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()
        await self._transport.sweep()


class _CheckedTransport(httpx.AsyncHTTPTransport):
    """httpx's transport, closing every idle connection that received unrequested bytes."""

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await super().handle_async_request(request)
        stream = response.stream
        assert isinstance(stream, httpx.AsyncByteStream)
        response.stream = _SweptStream(stream, self)
        return response

    async def sweep(self) -> None:
        """Close idle connections with unread bytes (the pool drops closed ones)."""
        for connection in list(self._pool.connections):
            if connection.is_idle() and _has_unread_bytes(connection):
                await connection.aclose()


def context_for(url: str) -> ssl.SSLContext:
    """The TLS context for requests to ``url``: verifying for https; for plain http a bare one,
    never used, that skips loading the trust store (over 0.1 s of CPU each time)."""
    if url.lower().startswith("https:"):
        return tls_context()
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


def http_client(
    *, headers: Mapping[str, str], timeout_s: float, keep: int, tls: ssl.SSLContext
) -> httpx.AsyncClient:
    """The shared client: at most ``keep`` connections, unread bytes never reused.

    A proxy named in the environment (``HTTPS_PROXY``, ...) is honoured; ``tls`` is from
    :func:`context_for`.
    """
    limits = httpx.Limits(
        max_connections=keep, max_keepalive_connections=keep, keepalive_expiry=_KEEPALIVE_S
    )
    # httpcore writes a request's head and body apart: without TCP_NODELAY the body waits
    # for the head's ACK, which the server delays while it waits for the body (~40 ms each).
    nodelay = [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]
    transport = _CheckedTransport(verify=tls, limits=limits, trust_env=True, socket_options=nodelay)
    return httpx.AsyncClient(
        headers=dict(headers), timeout=httpx.Timeout(timeout_s), transport=transport
    )


def endpoint_url(base_url: str, path: str) -> httpx.URL:
    """``path`` under ``base_url``'s path, keeping the base URL's query string.

    ``https://host/openai/v1?api-version=X`` and ``chat/completions`` give
    ``https://host/openai/v1/chat/completions?api-version=X``; httpx percent-encodes what a
    URL cannot carry raw (a space, non-ASCII letters).
    """
    base = httpx.URL(base_url)
    return base.copy_with(path=base.path.rstrip("/") + "/" + path.lstrip("/"))


async def within(awaitable: Awaitable[T], seconds: float) -> T:
    """``awaitable``'s result, or :class:`TimedOut` after ``seconds`` (one deadline for all)."""
    try:
        if sys.version_info >= (3, 11):  # no task of its own, unlike wait_for
            async with asyncio.timeout(seconds):
                return await awaitable
        return await asyncio.wait_for(awaitable, seconds)  # pragma: no cover - Python 3.10
    except (TimeoutError, asyncio.TimeoutError):  # distinct classes before Python 3.11
        raise TimedOut(f"no answer within {seconds:g}s") from None


def is_tls_failure(exc: BaseException) -> bool:
    """Whether ``exc`` (or what caused it) is a TLS failure: a certificate, a handshake."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, ssl.SSLError):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


def transport_failure(exc: httpx.TransportError, host: str) -> Exception:
    """The assay error for an httpx transport failure: TLS is final, the rest retried."""
    if isinstance(exc, httpx.TimeoutException):
        return TimedOut("no answer within the timeout")
    if is_tls_failure(exc):
        return ProviderError(
            f"TLS to {host} failed (certificate or handshake); not retried", retryable=False
        )
    if isinstance(exc, httpx.ProtocolError):
        return ConnectionFailure(f"malformed HTTP response ({type(exc).__name__})")
    return ConnectionFailure(f"connection error ({type(exc).__name__})")


async def read_capped(response: httpx.Response, most: int) -> bytes:
    """The decoded body, refused (not held) once it passes ``most`` bytes, or declares more."""
    refused = ConnectionFailure(f"reply body larger than {most / (1024 * 1024):g} MiB")
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > most:  # httpx checked it is one number
        raise refused
    parts: list[bytes] = []
    size = 0
    async for piece in response.aiter_bytes():
        size += len(piece)
        if size > most:
            raise refused
        parts.append(piece)
    return b"".join(parts)


class ConnectionPool:
    """POSTs to one ``base_url``; a 2xx body is read whole, another's left unread.

    ``keep`` connections are spread over small httpx clients of :data:`_SHARD` connections
    each, a request going to the least busy one: httpcore's pool looks at every connection
    (a ``poll`` each, and a count over all of them per connection) several times per request,
    so its cost grows with the square of its size; 32 connections in one pool cost about 6 ms
    of CPU per request here, in eight pools of four well under one.
    """

    def __init__(
        self, base_url: str, *, headers: Mapping[str, str], timeout_s: float, keep: int
    ) -> None:
        self.base_url = base_url
        self.host = httpx.URL(base_url).host
        self.timeout_s = timeout_s
        count = max(1, -(-keep // _SHARD))
        size = max(1, -(-keep // count))
        tls = context_for(base_url)
        self._shards = [
            http_client(headers=headers, timeout_s=timeout_s, keep=size, tls=tls)
            for _ in range(count)
        ]
        self._busy = [0] * count
        self._urls: dict[str, httpx.URL] = {}  # path -> URL, parsed once

    def is_closed(self) -> bool:
        return self._shards[0].is_closed

    async def post(self, path: str, body: bytes) -> Reply:
        """The endpoint's answer to ``body`` POSTed at ``path`` (under the base URL)."""
        if self.is_closed():
            raise ConnectionFailure("the client is closed")
        shard = self._busy.index(min(self._busy))
        self._busy[shard] += 1
        try:
            url = self._urls.get(path) or self._urls.setdefault(
                path, endpoint_url(self.base_url, path)
            )
            exchange = self._exchange(self._shards[shard], url, body)
            return await within(exchange, self.timeout_s)
        except httpx.TransportError as exc:
            raise transport_failure(exc, self.host) from None
        except httpx.InvalidURL:
            raise ConnectionFailure("the URL cannot be sent") from None
        finally:
            self._busy[shard] -= 1

    @staticmethod
    async def _exchange(client: httpx.AsyncClient, url: httpx.URL, body: bytes) -> Reply:
        async with client.stream("POST", url, content=body) as response:
            headers = {
                name: ", ".join(response.headers.get_list(name)) for name in response.headers
            }
            if not 200 <= response.status_code < 300:
                return Reply(response.status_code, headers, b"")
            return Reply(response.status_code, headers, await read_capped(response, MAX_BODY))

    async def close(self) -> None:
        for client in self._shards:
            await client.aclose()
