"""OTLP test payloads built without assay: protobuf through the generated messages, OTLP/JSON
written by hand as the OTLP specification spells it (hex ids, int64 as strings)."""

from __future__ import annotations

import json
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span


def any_value(value: Any) -> AnyValue:
    if isinstance(value, bool):
        return AnyValue(bool_value=value)
    if isinstance(value, int):
        return AnyValue(int_value=value)
    if isinstance(value, float):
        return AnyValue(double_value=value)
    if isinstance(value, list):
        out = AnyValue()
        out.array_value.values.extend(any_value(v) for v in value)
        return out
    if isinstance(value, dict):
        out = AnyValue()
        out.kvlist_value.values.extend(
            KeyValue(key=k, value=any_value(v)) for k, v in value.items()
        )
        return out
    return AnyValue(string_value=value)


def span(
    trace: int, number: int, name: str, attributes: dict[str, Any], parent: int | None = None
) -> Span:
    """A span of trace ``trace`` (ids derived from the numbers), started ``number`` ms in."""
    return Span(
        trace_id=trace.to_bytes(16, "big"),
        span_id=(trace * 1000 + number).to_bytes(8, "big"),
        parent_span_id=b"" if parent is None else (trace * 1000 + parent).to_bytes(8, "big"),
        name=name,
        start_time_unix_nano=1_700_000_000_000_000_000 + trace * 10**9 + number * 10**6,
        end_time_unix_nano=1_700_000_000_000_000_000 + trace * 10**9 + number * 10**6 + 5,
        attributes=[KeyValue(key=k, value=any_value(v)) for k, v in attributes.items()],
    )


def request(spans: list[Span], service: str = "app") -> ExportTraceServiceRequest:
    message = ExportTraceServiceRequest()
    resource_spans = message.resource_spans.add()
    resource_spans.resource.attributes.append(
        KeyValue(key="service.name", value=AnyValue(string_value=service))
    )
    resource_spans.scope_spans.add().spans.extend(spans)
    return message


def json_value(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, list):
        return {"arrayValue": {"values": [json_value(v) for v in value]}}
    return {"stringValue": value}


def json_request(spans: list[dict[str, Any]]) -> str:
    """OTLP/JSON of spans given as {trace, span, parent?, name, start, attributes}."""
    body = [
        {
            "traceId": f"{s['trace']:032x}",
            "spanId": f"{s['span']:016x}",
            "parentSpanId": f"{s['parent']:016x}" if s.get("parent") else "",
            "name": s["name"],
            "kind": 1,
            "startTimeUnixNano": str(s["start"]),
            "endTimeUnixNano": str(s["start"] + 1000),
            "attributes": [{"key": k, "value": json_value(v)} for k, v in s["attributes"].items()],
        }
        for s in spans
    ]
    return json.dumps({"resourceSpans": [{"resource": {}, "scopeSpans": [{"spans": body}]}]})


def rag_trace(trace: int, question: str, answer: str, context: str) -> list[Span]:
    """A root, a retrieval, a chat and a tool span, by the GenAI conventions."""
    messages = [{"role": "user", "parts": [{"type": "text", "content": question}]}]
    reply = [{"role": "assistant", "parts": [{"type": "text", "content": answer}]}]
    return [
        span(trace, 0, "request", {"session.id": f"s{trace}"}),
        span(
            trace,
            1,
            "retrieve",
            {
                "gen_ai.operation.name": "retrieval",
                "retrieval.documents.0.document.id": "d1",
                "retrieval.documents.0.document.content": context,
            },
            parent=0,
        ),
        span(
            trace,
            2,
            "chat m",
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "m",
                "gen_ai.input.messages": json.dumps(messages),
                "gen_ai.output.messages": json.dumps(reply),
                "gen_ai.usage.input_tokens": 30,
                "gen_ai.usage.output_tokens": 7,
            },
            parent=0,
        ),
        span(
            trace,
            3,
            "execute_tool search",
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "search",
                "gen_ai.tool.call.arguments": '{"q": "plans"}',
            },
            parent=0,
        ),
    ]
