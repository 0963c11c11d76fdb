"""OTLP decoding (protobuf, OTLP/JSON, gzip, export files) and the span -> sample mapping."""

from __future__ import annotations

import gzip
import json
import struct
from pathlib import Path

import pytest

from assay.errors import TraceError, UsageError
from assay.production.mapping import (
    TraceMapping,
    assemble,
    read_mapping,
    span_part,
)
from assay.production.otlp import MAX_DEPTH, file_requests, parse_body, spans_of

from .otlp_builders import json_request, rag_trace, request, span


def record_of(spans, mapping=None):
    mapping = mapping or TraceMapping()
    decoded = sorted(spans, key=lambda s: s.start_ns)
    parts = [span_part(s, mapping) for s in decoded]
    return assemble(decoded[0].trace_id, decoded[0].start_ns, parts)


def test_protobuf_request_maps_to_one_sample_by_genai_conventions() -> None:
    body = request(
        rag_trace(7, "Is roaming included?", "Yes, roaming is included.", "Roaming is included.")
    ).SerializeToString()
    spans = parse_body(body, "application/x-protobuf", "", "t")
    assert len(spans) == 4
    assert {s.trace_id for s in spans} == {f"{7:032x}"}
    record = record_of(spans)
    assert record.input == "Is roaming included?"
    assert record.output == "Yes, roaming is included."
    assert record.contexts == ["Roaming is included."]
    assert record.context_ids == ["d1"]
    assert [(c.name, c.arguments) for c in record.tool_calls] == [("search", {"q": "plans"})]
    assert record.usage == {
        "prompt_tokens": 30,
        "completion_tokens": 7,
        "total_tokens": 37,
        "model": "m",
    }
    assert record.session == "s7"
    assert record.service == "app"


def test_json_with_hex_ids_and_string_int64_decodes() -> None:
    text = json_request(
        [
            {
                "trace": 0xABC,
                "span": 0x1,
                "name": "llm",
                "start": 1_700_000_000_000_000_123,
                "attributes": {
                    "input.value": "q?",
                    "output.value": "a.",
                    "llm.token_count.prompt": 4,
                },
            }
        ]
    )
    [decoded] = parse_body(text.encode(), "application/json; charset=utf-8", "", "t")
    assert decoded.trace_id == f"{0xABC:032x}"
    assert decoded.span_id == f"{1:016x}"
    assert decoded.start_ns == 1_700_000_000_000_000_123
    assert decoded.attributes["llm.token_count.prompt"] == 4
    record = record_of([decoded])
    assert (record.input, record.output) == ("q?", "a.")


def test_gzip_bodies_and_unknown_json_fields_are_accepted() -> None:
    text = json.loads(
        json_request([{"trace": 5, "span": 2, "name": "x", "start": 1, "attributes": {}}])
    )
    text["futureField"] = {"anything": 1}
    text["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["newThing"] = 3
    body = gzip.compress(json.dumps(text).encode())
    [decoded] = parse_body(body, "application/json", "gzip", "t")
    assert decoded.name == "x"


@pytest.mark.parametrize(
    ("body", "kind", "encoding", "message"),
    [
        (b"\x0a\xff\xff\xff", "application/x-protobuf", "", "not an OTLP protobuf"),
        (b"{", "application/json", "", "not valid JSON"),
        (b"[]", "application/json", "", "must be an object"),
        (b'{"resourceSpans": 3}', "application/json", "", "not an OTLP/JSON"),
        (
            b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "zz"}]}]}]}',
            "application/json",
            "",
            "not hex",
        ),
        (b"plain", "application/x-protobuf", "gzip", "not valid gzip"),
        (b"x", "text/plain", "", "unsupported Content-Type"),
        (b"x", "application/json", "br", "unsupported Content-Encoding"),
    ],
)
def test_malformed_bodies_are_trace_errors(
    body: bytes, kind: str, encoding: str, message: str
) -> None:
    with pytest.raises(TraceError, match=message):
        parse_body(body, kind, encoding, "t")


def test_a_gzip_bomb_is_refused() -> None:
    bomb = gzip.compress(b"\0" * (80 * 1024 * 1024))
    with pytest.raises(TraceError, match="inflates past"):
        parse_body(bomb, "application/x-protobuf", "gzip", "t")


def test_deep_attribute_values_are_cut_not_followed() -> None:
    value: object = "leaf"
    for _ in range(40):
        value = [value]
    body = request([span(1, 0, "deep", {"x": value})]).SerializeToString()
    [decoded] = parse_body(body, "application/x-protobuf", "", "t")
    depth, item = 0, decoded.attributes["x"]
    while isinstance(item, list):
        depth, item = depth + 1, item[0]
    assert depth == MAX_DEPTH and item == "[nested too deeply]"


def test_export_files_json_lines_framed_protobuf_and_single_message(tmp_path: Path) -> None:
    one = request(rag_trace(1, "q one?", "a one.", "c")).SerializeToString()
    two = request(rag_trace(2, "q two?", "a two.", "c")).SerializeToString()
    framed = b"".join(struct.pack(">I", len(m)) + m for m in (one, two))
    lines = "\n".join(
        json_request([{"trace": t, "span": 1, "name": "n", "start": 1, "attributes": {}}])
        for t in (1, 2, 3)
    )

    def count(data: bytes) -> int:
        return sum(len(spans_of(r)) for r in file_requests(data, "f"))

    assert count(framed) == 8
    assert count(one) == 4
    assert count(lines.encode()) == 3
    assert count(gzip.compress(lines.encode())) == 3


def test_older_genai_events_and_openllmetry_indexed_attributes() -> None:
    from assay.production.otlp import RawSpan

    old = RawSpan(
        "t",
        "s",
        "",
        "chat",
        1,
        2,
        {"gen_ai.operation.name": "chat"},
        (
            ("gen_ai.content.prompt", {"gen_ai.prompt": "old question?"}),
            ("gen_ai.content.completion", {"gen_ai.completion": "old answer."}),
        ),
        {},
    )
    indexed = RawSpan(
        "t",
        "s",
        "",
        "chat",
        1,
        2,
        {
            "gen_ai.prompt.0.role": "system",
            "gen_ai.prompt.0.content": "sys",
            "gen_ai.prompt.1.content": "indexed q?",
            "gen_ai.completion.0.content": "indexed a.",
        },
        (),
        {},
    )
    assert (record_of([old]).input, record_of([old]).output) == ("old question?", "old answer.")
    assert (record_of([indexed]).input, record_of([indexed]).output) == ("indexed q?", "indexed a.")


def test_a_mapping_file_names_custom_attributes(tmp_path: Path) -> None:
    path = tmp_path / "mapping.yml"
    path.write_text(
        "schema_version: assay.trace-mapping.v1\ninput: app.q\noutput: app.a\n"
        "contexts: app.docs\nsession: app.conv\nmetadata:\n  tenant: app.tenant\n"
    )
    mapping = read_mapping(path)
    body = request(
        [
            span(
                3,
                0,
                "root",
                {
                    "app.q": "custom q?",
                    "app.a": "custom a.",
                    "app.docs": '["d one", "d two"]',
                    "app.conv": "c-9",
                    "app.tenant": "acme",
                },
            )
        ]
    ).SerializeToString()
    record = record_of(parse_body(body, "application/x-protobuf", "", "t"), mapping)
    assert (record.input, record.output, record.session) == ("custom q?", "custom a.", "c-9")
    assert record.contexts == ["d one", "d two"]
    assert record.metadata == {"tenant": "acme"}


def test_a_bad_mapping_file_names_its_field(tmp_path: Path) -> None:
    path = tmp_path / "mapping.yml"
    path.write_text("input: 3\n")
    with pytest.raises(UsageError, match=r"mapping\.yml: field 'input'"):
        read_mapping(path)
