"""An HTTP endpoint as the system under test: ``assay run --sut-url URL``.

Each sample's ``input`` is POSTed as a JSON object. The answer is read from the JSON reply at
``--sut-output-path`` (default ``output``) and, when ``--sut-retrieved-path`` is set, the ranked
retrieved ids (or ``{id, text}`` objects) from that path. Paths are dotted, with list indices as
numbers or in brackets: ``choices.0.message.content`` or ``data.items[0].text``; ``$`` (or an
empty path) is the whole reply.

Headers come from ``ASSAY_SUT_HEADERS``: a JSON object, or ``Name: value; Name2: value2``. Their
values are sent and never printed. Every failure — a timeout (``--sut-timeout`` bounds the whole
call), a refused connection, a non-2xx status, a reply over :data:`MAX_REPLY_BYTES` decoded, not
JSON or lacking the answer — is that sample's failure, reported with the status or reason only,
never the reply body. HTTP 429 (and 503 with ``Retry-After``) raise
:class:`~assay.errors.RateLimited`, so the runner backs off, lowers concurrency and tries the
sample again (:mod:`assay.providers.limiter`).
"""

from __future__ import annotations

import asyncio
import os
import re
import zlib
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from assay.data.bounded import loads_json
from assay.data.dataset import Sample
from assay.data.outputs import Output, parse_retrieved
from assay.errors import RateLimited, SystemUnderTestError, UsageError
from assay.providers.limiter import Limiter, is_overload, retry_after_seconds
from assay.providers.pool import context_for, http_client
from assay.providers.urls import is_header_value, is_http_url, public_url
from assay.report.system_info import SystemUnderTestInfo

if TYPE_CHECKING:  # httpx loads with the first request (start-up of the run)
    import httpx

DEFAULT_OUTPUT_PATH = "output"
DEFAULT_TIMEOUT_S = 60.0
MAX_REPLY_BYTES = 10 * 1024 * 1024
"""The largest reply body read, after decompression: a larger one fails its sample unread."""
_HEADER_NAME = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")
_FRAMING = frozenset({"content-length", "transfer-encoding"})
"""Headers that frame the request body: httpx sets them; a second copy corrupts the request."""
_STEP = re.compile(r"\[(\d+)\]")

PathStep = str | int


def parse_path(path: str | None, *, flag: str) -> tuple[PathStep, ...]:
    """``a.b[0].c`` or ``a.b.0.c`` → ``("a", "b", 0, "c")``; ``$`` or ``""`` → ``()``."""
    text = (path or "").strip()
    if text.startswith("$"):
        text = text[1:].lstrip(".")
    if not text:
        return ()
    steps: list[PathStep] = []
    for part in _STEP.sub(r".\1", text).split("."):
        if part == "":
            raise UsageError(
                f"{flag}: {path!r} has an empty step (use dots between names, e.g. 'data.answer')"
            )
        steps.append(int(part) if part.isdigit() else part)
    return tuple(steps)


def _render(path: Sequence[PathStep]) -> str:
    return ".".join(str(step) for step in path) or "$"


_MISSING = object()


def lookup(document: object, path: Sequence[PathStep]) -> Any:
    """The value at ``path`` in a parsed JSON document, or ``_MISSING``."""
    value = document
    for step in path:
        if isinstance(value, Mapping):
            value = value.get(str(step), _MISSING)
        elif isinstance(value, list) and isinstance(step, int) and step < len(value):
            value = value[step]
        else:
            return _MISSING
        if value is _MISSING:
            return _MISSING
    return value


def parse_headers(raw: str | None) -> dict[str, str]:
    """Headers from ``ASSAY_SUT_HEADERS``: a JSON object or ``Name: value; Name2: value2``.

    Errors name the entry, never a value (values are usually credentials).
    """
    if raw is None or not raw.strip():
        return {}
    text = raw.strip()
    pairs: list[tuple[Any, Any]]
    if text.startswith("{"):
        data = loads_json(
            text, lambda _: UsageError("ASSAY_SUT_HEADERS looks like JSON but does not parse")
        )
        if not isinstance(data, dict):
            raise UsageError("ASSAY_SUT_HEADERS must be a JSON object of header names to values")
        pairs = list(data.items())
    else:
        pairs = []
        for index, entry in enumerate(part for part in text.split(";") if part.strip()):
            name, sep, value = entry.partition(":")
            if not sep:
                raise UsageError(f"ASSAY_SUT_HEADERS: entry {index + 1} is not 'Name: value'")
            pairs.append((name.strip(), value.strip()))
    headers: dict[str, str] = {}
    for index, (name, value) in enumerate(pairs):
        if not isinstance(name, str) or not _HEADER_NAME.fullmatch(name):
            raise UsageError(f"ASSAY_SUT_HEADERS: entry {index + 1} has an invalid header name")
        if name.lower() in _FRAMING:
            raise UsageError(
                f"ASSAY_SUT_HEADERS: header '{name}' is not allowed: it frames the request body, "
                "which assay sets itself"
            )
        if not isinstance(value, str) or not is_header_value(value):
            raise UsageError(
                f"ASSAY_SUT_HEADERS: the value of header '{name}' must be a single line of "
                "printable ASCII (encode other characters; the value is not shown)"
            )
        headers[name] = value
    return headers


def _check_url(url: str) -> None:
    """One line naming ``--sut-url`` when it is no http(s) URL with a host and valid port.

    The URL is never echoed: without a scheme its credentials and query would be shown.
    """
    if not is_http_url(url):
        raise UsageError(
            "--sut-url must be an http:// or https:// URL with a host and a port in 0-65535 "
            "(the value is not shown: it may hold credentials)"
        )


class HttpTarget:
    """POSTs each sample's input to ``url`` and reads the answer from the JSON reply."""

    synchronous = False

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        output_path: str = DEFAULT_OUTPUT_PATH,
        retrieved_path: str | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        limiter: Limiter | None = None,
        trajectory_path: str | None = None,
        max_reply_bytes: int = MAX_REPLY_BYTES,
    ) -> None:
        _check_url(url)
        if not timeout_s > 0:
            raise UsageError(f"--sut-timeout must be a positive number of seconds; got {timeout_s}")
        self.url = url
        self.shown = public_url(url)
        self._headers = {
            "Content-Type": "application/json",
            "Accept": "application/json",
            **dict(headers or {}),
        }
        self.output_path = parse_path(output_path, flag="--sut-output-path")
        self.retrieved_path = (
            parse_path(retrieved_path, flag="--sut-retrieved-path") if retrieved_path else None
        )
        self.trajectory_path = (
            parse_path(trajectory_path, flag="--sut-trajectory-path") if trajectory_path else None
        )
        self.timeout_s = float(timeout_s)
        self.max_reply_bytes = max_reply_bytes
        self.limiter = limiter or Limiter(8)
        self._client: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @classmethod
    def from_environment(
        cls,
        url: str,
        *,
        output_path: str | None = None,
        retrieved_path: str | None = None,
        timeout_s: float | None = None,
        limiter: Limiter | None = None,
        environ: Mapping[str, str] | None = None,
        trajectory_path: str | None = None,
    ) -> HttpTarget:
        """Build from flags, falling back to ``ASSAY_SUT_*`` environment variables."""
        env = os.environ if environ is None else environ
        timeout = timeout_s
        if timeout is None and env.get("ASSAY_SUT_TIMEOUT"):
            try:
                timeout = float(env["ASSAY_SUT_TIMEOUT"])
            except ValueError:
                raise UsageError("ASSAY_SUT_TIMEOUT must be a number of seconds") from None
        return cls(
            url,
            headers=parse_headers(env.get("ASSAY_SUT_HEADERS")),
            output_path=output_path
            if output_path is not None
            else env.get("ASSAY_SUT_OUTPUT_PATH", DEFAULT_OUTPUT_PATH),
            retrieved_path=retrieved_path
            if retrieved_path is not None
            else env.get("ASSAY_SUT_RETRIEVED_PATH") or None,
            timeout_s=timeout if timeout is not None else DEFAULT_TIMEOUT_S,
            limiter=limiter,
            trajectory_path=trajectory_path
            if trajectory_path is not None
            else env.get("ASSAY_SUT_TRAJECTORY_PATH") or None,
        )

    def describe(self) -> SystemUnderTestInfo:
        return SystemUnderTestInfo(kind="http", target=self.shown)

    def __repr__(self) -> str:  # never show header values
        return f"HttpTarget({self.shown!r}, headers={sorted(self._headers)})"

    # ----------------------------------------------------------------------- calls

    def _session(self) -> Any:
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            size = max(10, self.limiter.max_concurrency)
            # The providers' transport: idle connections with unread bytes are never reused.
            self._client = http_client(
                headers=self._headers,
                timeout_s=self.timeout_s,
                keep=size,
                tls=context_for(self.url),
            )
            self._loop = loop
        return self._client

    async def aclose(self) -> None:
        """Close the connection pool (the runner calls this at the end of a run)."""
        if self._client is not None:
            client, self._client, self._loop = self._client, None, None
            await client.aclose()

    async def answer(self, sample: Sample) -> Output:
        import httpx

        client = self._session()

        async def exchange() -> tuple[Any, bytes]:
            async with client.stream("POST", self.url, json=dict(sample.input)) as reply:
                if not 200 <= reply.status_code < 300:
                    return reply, b""  # only the status is reported: the body stays unread
                return reply, await self._body(reply)

        try:
            # One deadline for the whole exchange (httpx's own timeouts are per phase).
            response, body = await asyncio.wait_for(exchange(), self.timeout_s)
        except asyncio.TimeoutError:
            raise SystemUnderTestError(
                f"{self.shown} timed out after {self.timeout_s:g}s"
            ) from None
        except httpx.TimeoutException:
            raise SystemUnderTestError(
                f"{self.shown} timed out after {self.timeout_s:g}s"
            ) from None
        except httpx.HTTPError as exc:
            raise SystemUnderTestError(
                f"{self.shown}: connection failed ({type(exc).__name__})"
            ) from None
        except (TypeError, ValueError) as exc:
            raise SystemUnderTestError(
                f"the sample's input cannot be sent as JSON ({type(exc).__name__})"
            ) from None
        status = response.status_code
        if is_overload(status, response.headers):
            raise RateLimited(
                f"{self.shown} answered HTTP {status}",
                retry_after=retry_after_seconds(response.headers),
                status=status,
            )
        if not 200 <= status < 300:
            raise SystemUnderTestError(f"{self.shown} answered HTTP {status}")
        document = loads_json(
            body,
            lambda _: SystemUnderTestError(
                f"{self.shown} answered HTTP {status} with a body that is not JSON"
            ),
        )
        return self._read(document)

    async def _body(self, reply: httpx.Response) -> bytes:
        """The decoded reply body, read in pieces and given up once past ``max_reply_bytes``.

        Read whole, a 100 MB reply or a gzip bomb took a gigabyte of memory before any check.
        """
        parts: list[bytes] = []
        size = 0
        async for piece in _decoded(reply, self.max_reply_bytes + 1, self.shown):
            size += len(piece)
            if size > self.max_reply_bytes:
                limit = self.max_reply_bytes / (1024 * 1024)
                raise SystemUnderTestError(f"{self.shown} sent a reply larger than {limit:g} MB")
            parts.append(piece)
        return b"".join(parts)

    def _read(self, document: object) -> Output:
        text = lookup(document, self.output_path)
        where = _render(self.output_path)
        if text is _MISSING:
            raise SystemUnderTestError(f"the reply has no '{where}' (set --sut-output-path)")
        if not isinstance(text, str):
            raise SystemUnderTestError(f"the reply's '{where}' is {_kind(text)}, not a string")
        retrieved = None
        if self.retrieved_path is not None:
            raw = lookup(document, self.retrieved_path)
            rwhere = _render(self.retrieved_path)
            if raw is _MISSING or raw is None:
                raise SystemUnderTestError(
                    f"the reply has no '{rwhere}' (set --sut-retrieved-path)"
                )
            try:
                retrieved = parse_retrieved(raw, where=rwhere)
            except ValueError as exc:
                raise SystemUnderTestError(f"the reply's {exc}") from None
        return Output(text, retrieved, self._trajectory(document))

    def _trajectory(self, document: object) -> Mapping[str, Any] | None:
        """The agent's trajectory (tool calls) at ``--sut-trajectory-path``, when configured."""
        if self.trajectory_path is None:
            return None
        raw = lookup(document, self.trajectory_path)
        where = _render(self.trajectory_path)
        if raw is _MISSING or raw is None:
            raise SystemUnderTestError(f"the reply has no '{where}' (set --sut-trajectory-path)")
        if isinstance(raw, list):
            return {"tool_calls": raw}  # a bare list of tool calls
        if not isinstance(raw, Mapping):
            raise SystemUnderTestError(
                f"the reply's '{where}' is {_kind(raw)}, not an object or a list of tool calls"
            )
        return raw


async def _decoded(reply: httpx.Response, most: int, shown: str) -> AsyncIterator[bytes]:
    """The reply body's decoded pieces; a gzip one at most ``most`` bytes each.

    httpx inflates each network read whole (a 64 KiB gzip read can be 64 MiB): gzip, the
    encoding bombs use, is inflated here instead, a bounded piece at a time.
    """
    if reply.headers.get("content-encoding", "").strip().lower() not in ("gzip", "x-gzip"):
        async for piece in reply.aiter_bytes():
            yield piece
        return
    inflate = zlib.decompressobj(zlib.MAX_WBITS | 16)
    try:
        async for data in reply.aiter_raw():
            while data:
                yield inflate.decompress(data, most)
                data = inflate.unconsumed_tail
        yield inflate.flush()
    except zlib.error:
        raise SystemUnderTestError(f"{shown} sent a gzip body that does not inflate") from None


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__
