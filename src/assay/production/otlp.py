"""Decode OTLP trace payloads (protobuf, JSON, gzip) into flat :class:`RawSpan` records.

The wire format is decoded by ``opentelemetry-proto`` (the protocol's own generated messages and
protobuf's JSON mapping), never by hand. OTLP/JSON differs from protobuf's JSON mapping in one
way that matters here: trace and span ids are hex strings, not base64, so they are converted
before parsing. Attribute values become plain Python values, nested no deeper than
:data:`MAX_DEPTH`; anything the decoder refuses is a :class:`~assay.errors.TraceError`.
"""

from __future__ import annotations

import base64
import binascii
import json
import struct
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from assay.data.bounded import has_surrogate_escape, json_depth_problem
from assay.errors import TraceError

if TYPE_CHECKING:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

MAX_DEPTH: Final = 16
"""Array and key-list values nested deeper than this are cut (``"[nested too deeply]"``)."""
MAX_NS: Final = 2**63 - 1
"""Times past this (uint64 in OTLP, int64 in SQLite) are read as this."""
MAX_INFLATED: Final = 64 * 1024 * 1024
"""A gzip body may inflate to at most this many bytes (a zip bomb is refused, not followed)."""
INSTALL_HINT: Final = "OTLP decoding needs opentelemetry-proto: pip install 'assay[otel]'"


@dataclass(frozen=True, slots=True)
class RawSpan:
    """One span as assay reads it: ids in hex, times in Unix nanoseconds, plain attributes."""

    trace_id: str
    span_id: str
    parent_id: str
    name: str
    start_ns: int
    end_ns: int
    attributes: dict[str, Any]
    events: tuple[tuple[str, dict[str, Any]], ...]
    resource: dict[str, Any]


def _request_type() -> type[ExportTraceServiceRequest]:
    """The generated OTLP request message (imported here: an optional extra, and protobuf's
    descriptor pool takes ~30 ms to load, which ``assay --help`` must not pay)."""
    try:
        from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
    except ImportError:
        raise TraceError(INSTALL_HINT) from None
    return trace_service_pb2.ExportTraceServiceRequest


def inflate(body: bytes, where: str, limit: int = MAX_INFLATED) -> bytes:
    """A gzip body inflated, refusing one that grows past ``limit`` bytes or is not gzip."""
    inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    try:
        data = inflater.decompress(body, limit + 1)
    except zlib.error as exc:
        raise TraceError(f"not valid gzip ({exc})", file=where) from None
    if len(data) > limit:
        raise TraceError(f"gzip body inflates past {limit} bytes", file=where)
    return data


def parse_protobuf(body: bytes, where: str) -> ExportTraceServiceRequest:
    """One ``ExportTraceServiceRequest`` from its protobuf bytes."""
    from google.protobuf.message import DecodeError

    request = _request_type()()
    try:
        request.ParseFromString(body)
    except (DecodeError, RecursionError, ValueError) as exc:
        raise TraceError(f"not an OTLP protobuf trace request ({exc})", file=where) from None
    return request


_ID_FIELDS: Final = ("traceId", "spanId", "parentSpanId", "trace_id", "span_id", "parent_span_id")


def _hex_ids_to_base64(span: object, where: str) -> None:
    """OTLP/JSON writes ids in hex; protobuf's JSON mapping reads bytes as base64."""
    if not isinstance(span, dict):
        return
    for key in _ID_FIELDS:
        value = span.get(key)
        if isinstance(value, str) and value:
            try:
                span[key] = base64.b64encode(bytes.fromhex(value)).decode("ascii")
            except ValueError:
                raise TraceError(f"span {key} {value[:40]!r} is not hex", file=where) from None
    for link in span.get("links") or ():
        _hex_ids_to_base64(link, where)


def _spans_of(document: object) -> Iterator[Any]:
    """Every span object of a decoded OTLP/JSON document (shape errors are left to protobuf)."""
    for resource in _list(document, "resourceSpans", "resource_spans"):
        for scope in _list(resource, "scopeSpans", "scope_spans"):
            yield from _list(scope, "spans")


def _list(value: object, *keys: str) -> list[Any]:
    if not isinstance(value, dict):
        return []
    for key in keys:
        found = value.get(key)
        if isinstance(found, list):
            return found
    return []


def parse_json(body: bytes | str, where: str) -> ExportTraceServiceRequest:
    """One ``ExportTraceServiceRequest`` from OTLP/JSON (unknown fields ignored, as OTLP says)."""
    from google.protobuf import json_format

    try:
        text = body.decode("utf-8") if isinstance(body, bytes) else body
    except UnicodeDecodeError as exc:
        raise TraceError(f"not valid UTF-8 (byte {exc.start})", file=where) from None
    problem = json_depth_problem(text)  # before any recursive parser runs
    if problem is not None:
        raise TraceError(problem, file=where)
    try:
        document = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise TraceError(f"not valid JSON ({exc})", file=where) from None
    if not isinstance(document, dict):
        raise TraceError("an OTLP/JSON trace request must be an object", file=where)
    if has_surrogate_escape(text):  # protobuf's strings are UTF-8: a lone half cannot be one
        try:
            json.dumps(document, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise TraceError(
                "a string holds a lone UTF-16 surrogate (\\ud800-\\udfff)", file=where
            ) from None
    for span in _spans_of(document):
        _hex_ids_to_base64(span, where)
    request = _request_type()()
    try:
        json_format.ParseDict(document, request, ignore_unknown_fields=True)
    except (json_format.ParseError, RecursionError, ValueError, TypeError, OverflowError) as exc:
        message = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        raise TraceError(f"not an OTLP/JSON trace request ({message})", file=where) from None
    return request


def parse_body(body: bytes, content_type: str, encoding: str, where: str) -> list[RawSpan]:
    """The spans of one OTLP/HTTP request body, by its Content-Type and Content-Encoding."""
    if encoding.strip().lower() == "gzip":
        body = inflate(body, where)
    elif encoding.strip().lower() not in ("", "identity"):
        raise TraceError(f"unsupported Content-Encoding {encoding!r}", file=where)
    kind = content_type.split(";")[0].strip().lower()
    if kind == "application/json":
        return spans_of(parse_json(body, where))
    if kind in ("application/x-protobuf", "application/protobuf"):
        return spans_of(parse_protobuf(body, where))
    raise TraceError(f"unsupported Content-Type {content_type!r}", file=where)


def framed_messages(data: bytes) -> list[bytes] | None:
    """The messages of a file of 4-byte big-endian length-prefixed protobuf messages (the
    collector's file exporter in proto format); None when ``data`` is not framed that way."""
    messages: list[bytes] = []
    offset = 0
    while offset < len(data):
        if offset + 4 > len(data):
            return None
        (size,) = struct.unpack_from(">I", data, offset)
        if offset + 4 + size > len(data):
            return None
        messages.append(data[offset + 4 : offset + 4 + size])
        offset += 4 + size
    return messages or None


def any_value(value: AnyValue, depth: int = 0) -> Any:
    """An OTLP ``AnyValue`` as a plain Python value (bytes as hex)."""
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind in ("array_value", "kvlist_value") and depth >= MAX_DEPTH:
        return "[nested too deeply]"
    if kind == "array_value":
        return [any_value(item, depth + 1) for item in value.array_value.values]
    if kind == "kvlist_value":
        return key_values(value.kvlist_value.values, depth + 1)
    if kind == "bytes_value":
        return binascii.hexlify(value.bytes_value).decode("ascii")
    return getattr(value, kind)


def key_values(items: Any, depth: int = 0) -> dict[str, Any]:
    """Repeated ``KeyValue`` as a mapping (a repeated key keeps its last value)."""
    pairs: list[KeyValue] = list(items)
    return {pair.key: any_value(pair.value, depth) for pair in pairs}


def spans_of(request: ExportTraceServiceRequest) -> list[RawSpan]:
    """Every span of a decoded request, with its resource's attributes."""
    spans: list[RawSpan] = []
    for resource_spans in request.resource_spans:
        resource = key_values(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                spans.append(
                    RawSpan(
                        trace_id=span.trace_id.hex(),
                        span_id=span.span_id.hex(),
                        parent_id=span.parent_span_id.hex(),
                        name=span.name,
                        start_ns=min(span.start_time_unix_nano, MAX_NS),
                        end_ns=min(span.end_time_unix_nano, MAX_NS),
                        attributes=key_values(span.attributes),
                        events=tuple((e.name, key_values(e.attributes)) for e in span.events),
                        resource=resource,
                    )
                )
    return spans


def file_requests(data: bytes, where: str) -> Iterator[ExportTraceServiceRequest]:
    """The requests of one export file: OTLP/JSON lines, or protobuf (framed or one message);
    a ``.gz`` body is inflated first."""
    if data[:2] == b"\x1f\x8b":
        data = inflate(data, where)
    if data.lstrip()[:1] == b"{":
        for number, line in enumerate(data.splitlines(), start=1):
            if line.strip():
                yield parse_json(line, f"{where}:{number}")
        return
    for message in framed_messages(data) or [data]:
        yield parse_protobuf(message, where)


def attribute_text(attributes: Mapping[str, Any], key: str) -> str | None:
    """A string attribute, or None when absent or not a string."""
    value = attributes.get(key)
    return value if isinstance(value, str) else None
