"""Hostile OTLP payloads through the whole intake (decode, map, redact, store, assemble, the
sample and output a monitor scores): each ends as spans stored or a TraceError, never another
exception, a hang or unbounded memory."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assay.errors import TraceError
from assay.production.intake import Intake
from assay.production.mapping import TraceMapping
from assay.production.monitor import output_of, sample_of
from assay.production.otlp import parse_body
from assay.production.redact import Redactor
from assay.production.store import TraceStore

from .otlp_builders import json_request, rag_trace, request, span

INTAKE = Intake(Redactor(canaries=["LSPR-CANARY-39945ED7F681"]), TraceMapping())
VALID = request(rag_trace(9, "q jane@example.org?", "answer.", "ctx")).SerializeToString()


def through(store: TraceStore, body: bytes, kind: str = "application/x-protobuf") -> int:
    """The intake end to end; the number of spans it stored (0 when refused with a TraceError)."""
    try:
        spans = parse_body(body, kind, "", "fuzz")
    except TraceError:
        return 0
    kept = INTAKE.prepare(spans)
    store.write(kept)
    for trace_id in {s.trace_id for s in kept}:
        record = store.record(trace_id)
        assert record is not None
        sample_of(record)
        output_of(record)
    return len(kept)


@pytest.fixture
def store(tmp_path: Path):
    opened = TraceStore(tmp_path / "t.sqlite")
    yield opened
    opened.close()


def test_every_truncation_of_a_valid_request(store: TraceStore) -> None:
    stored = [through(store, VALID[:cut]) for cut in range(len(VALID) + 1)]
    assert stored[-1] == 4


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.data())
def test_random_byte_flips(store: TraceStore, data: st.DataObject) -> None:
    body = bytearray(VALID)
    for _ in range(data.draw(st.integers(1, 8))):
        body[data.draw(st.integers(0, len(body) - 1))] = data.draw(st.integers(0, 255))
    through(store, bytes(body))


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.binary(max_size=2000))
def test_arbitrary_bytes(store: TraceStore, body: bytes) -> None:
    through(store, body)
    through(store, body, "application/json")


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


def _paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, (*prefix, index))


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.data())
def test_json_with_wrong_types_anywhere(store: TraceStore, data: st.DataObject) -> None:
    document = json.loads(
        json_request(
            [
                {
                    "trace": 3,
                    "span": 1,
                    "name": "n",
                    "start": 10,
                    "attributes": {"input.value": "q", "output.value": "a", "n": 3, "l": ["x"]},
                }
            ]
        )
    )
    paths = [p for p in _paths(document) if p]
    target = data.draw(st.sampled_from(paths))
    holder = document
    for step in target[:-1]:
        holder = holder[step]
    holder[target[-1]] = data.draw(JSON_VALUES)
    through(store, json.dumps(document).encode(), "application/json")


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def test_attribute_values_nested_past_any_limit(store: TraceStore) -> None:
    value = _field(1, b"leaf")  # AnyValue.string_value
    for _ in range(5000):  # AnyValue.array_value -> ArrayValue.values -> AnyValue ...
        value = _field(5, _field(1, value))
    attribute = _field(1, b"deep") + _field(2, value)  # KeyValue
    one = request([span(4, 0, "s", {})]).resource_spans[0].scope_spans[0].spans[0]
    span_bytes = one.SerializeToString() + _field(9, attribute)  # Span.attributes
    body = _field(1, _field(2, _field(2, span_bytes)))  # request -> ResourceSpans -> ScopeSpans
    assert through(store, body) == 0  # refused by protobuf's depth limit: a TraceError
    nested_json = '{"resourceSpans": ' + "[" * 100000 + "]" * 100000 + "}"
    assert through(store, nested_json.encode(), "application/json") == 0


def test_odd_values_where_texts_are_expected(store: TraceStore) -> None:
    odd = {
        "gen_ai.input.messages": 3,
        "gen_ai.output.messages": json.dumps(
            [{"role": "assistant", "parts": [{"type": "text", "content": 5}]}]
        ),
        "output.value": ["not", "a", "string"],
        "session.id": {"nested": True},
        "retrieval.documents.0.document.content": 1.5,
        "gen_ai.tool.name": "",
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.usage.input_tokens": -4,
        "x": float("nan"),
    }
    body = request([span(5, 0, "odd", odd)]).SerializeToString()
    assert through(store, body) == 1


def test_a_hundred_thousand_spans_in_one_request(store: TraceStore) -> None:
    rng = random.Random(3)
    spans = [
        span(t, n, "s", {"output.value": f"answer {rng.random()}"}, parent=None if n == 0 else 0)
        for t in range(1, 25001)
        for n in range(4)
    ]
    body = request(spans).SerializeToString()
    assert len(parse_body(body, "application/x-protobuf", "", "big")) == 100_000
    kept = INTAKE.prepare(parse_body(body, "application/x-protobuf", "", "big"))
    store.write(kept)
    assert store.counts() == (25000, 100000)


def test_cases_the_fuzzer_found(store: TraceStore) -> None:
    """A double from a 400-digit integer, a key with a lone surrogate, a start time past int64."""
    attribute = '{"key": "k", "value": {"doubleValue": 1%s}}' % ("0" * 400)
    huge = (
        '{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "01", "attributes": [%s]}]}]}]}'
    )
    huge = huge % attribute
    assert through(store, huge.encode(), "application/json") == 0
    surrogate = '{"resourceSpans": [{"\\ud800": 1}]}'
    assert through(store, surrogate.encode(), "application/json") == 0
    listed = request([span(7, 0, "op", {"gen_ai.operation.name": ["chat"], "output.value": "x"})])
    assert through(store, listed.SerializeToString()) == 1
    late = request([span(6, 0, "late", {"output.value": "x"})])
    late.resource_spans[0].scope_spans[0].spans[0].start_time_unix_nano = 2**64 - 1
    assert through(store, late.SerializeToString()) == 1
