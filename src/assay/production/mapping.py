"""From spans to what assay scores: each span's part of a sample, and one trace's sample.

A span is read by the OpenTelemetry GenAI semantic conventions (``gen_ai.operation.name``,
``gen_ai.input.messages`` / ``gen_ai.output.messages``, the older ``gen_ai.prompt`` /
``gen_ai.completion`` attributes and events, ``gen_ai.usage.*``, ``execute_tool`` spans) and by
OpenInference's attributes (``input.value``, ``output.value``, ``retrieval.documents.N.*``,
``llm.token_count.*``, ``tool.*``), plus a :class:`TraceMapping` for an application's own
attribute names. Each span becomes a small :class:`SpanPart` (what the store keeps, redacted);
the parts of one trace assemble into a :class:`TraceRecord` (one sample and its output).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from assay.data.documents import parse_document, read_text
from assay.errors import TraceError, UsageError
from assay.production.otlp import RawSpan

MAPPING_SCHEMA: Final = "assay.trace-mapping.v1"
TRACE_SCHEMA: Final = "assay.trace.v1"
CHAT_OPERATIONS: Final = frozenset({"chat", "text_completion", "generate_content", "invoke_agent"})
RETRIEVAL_OPERATIONS: Final = frozenset({"retrieval", "retrieve", "embeddings_search"})
SESSION_KEYS: Final = ("session.id", "gen_ai.conversation.id")
MAX_INDEXED: Final = 1000
"""Flattened list attributes (``retrieval.documents.N.*``) are read up to this index."""

PartKind = Literal["chat", "retrieval", "tool", "other"]


class TraceMapping(BaseModel):
    """An application's own attribute names (a YAML or JSON file, ``--mapping``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: Literal["assay.trace-mapping.v1"] = MAPPING_SCHEMA
    session: str | None = Field(default=None, description="attribute naming the session")
    input: str | None = Field(default=None, description="attribute holding the user's input")
    output: str | None = Field(default=None, description="attribute holding the answer")
    contexts: str | None = Field(
        default=None, description="attribute holding the retrieved texts (list or JSON list)"
    )
    metadata: dict[str, str] = Field(
        default_factory=dict, description="sample metadata key -> attribute name"
    )


def read_mapping(path: Path | None) -> TraceMapping:
    """The mapping file at ``path`` (default: none, the conventions alone)."""
    if path is None:
        return TraceMapping()
    data = parse_document(read_text(path, TraceError), path, TraceError)
    try:
        return TraceMapping.model_validate(data)
    except ValidationError as exc:
        problem = exc.errors()[0]
        where = ".".join(str(part) for part in problem["loc"]) or "(top level)"
        raise UsageError(f"{path}: field '{where}': {problem['msg']}") from None


class ToolCall(BaseModel):
    """One tool call of a trace, in the order the spans started."""

    model_config = ConfigDict(extra="forbid")

    name: str
    arguments: Any = None


class SpanPart(BaseModel):
    """What one span adds to its trace's sample; the unit the store keeps (redacted)."""

    model_config = ConfigDict(extra="forbid")

    kind: PartKind = "other"
    root: bool = False
    input: str | None = None
    output: str | None = None
    contexts: list[str] = Field(default_factory=list)
    context_ids: list[str] = Field(default_factory=list)
    tool: ToolCall | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    model: str | None = None
    session: str | None = None
    service: str | None = None
    metadata: dict[str, str] = Field(default_factory=dict)
    redacted: dict[str, int] = Field(
        default_factory=dict, description="redactions in this span by detector kind"
    )
    output_redacted: dict[str, int] = Field(
        default_factory=dict, description="redactions in the answer text alone"
    )


class TraceRecord(BaseModel):
    """One trace as a sample: the input, the answer, contexts, tool calls and usage."""

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal["assay.trace.v1"] = TRACE_SCHEMA
    trace_id: str
    started_ns: int
    input: str | None = None
    output: str | None = None
    contexts: list[str] = Field(default_factory=list)
    context_ids: list[str] = Field(default_factory=list)
    tool_calls: list[ToolCall] = Field(default_factory=list)
    usage: dict[str, Any] = Field(default_factory=dict)
    session: str | None = None
    service: str | None = None
    metadata: dict[str, str] = Field(default_factory=dict)
    redacted: dict[str, int] = Field(default_factory=dict)
    output_redacted: dict[str, int] = Field(default_factory=dict)


# --------------------------------------------------------------------------- reading one span


def _text(value: object) -> str | None:
    if isinstance(value, str):
        return value
    if value is None or isinstance(value, (dict, list)):
        return None
    return str(value)


def _json(value: object) -> Any:
    """A JSON-encoded attribute decoded (GenAI messages are JSON strings); else as given."""
    if isinstance(value, str) and value[:1] in ("[", "{"):
        try:  # orjson: ~4x json's speed, a depth limit of its own, no lone surrogates
            return orjson.loads(value)
        except orjson.JSONDecodeError:
            return value
    return value


def _message_text(message: object) -> str | None:
    """The text of one GenAI message: ``parts`` of type text, or a ``content`` string."""
    if not isinstance(message, Mapping):
        return _text(message)
    content = message.get("content")
    if isinstance(content, str):
        return content
    parts = message.get("parts", content)
    if isinstance(parts, list):
        texts = [
            p.get("content") or p.get("text")
            for p in parts
            if isinstance(p, Mapping) and p.get("type", "text") == "text"
        ]
        joined = "\n".join(t for t in texts if isinstance(t, str))
        return joined or None
    return None


def _messages_text(raw: object, role: str | None) -> str | None:
    """The last message of ``role`` (any role when None) in a GenAI message list."""
    messages = _json(raw)
    if not isinstance(messages, list):
        return _text(messages)
    chosen = [m for m in messages if role is None or _role(m) == role]
    for message in reversed(chosen):
        text = _message_text(message)
        if text is not None:
            return text
    return None


def _role(message: object) -> str | None:
    return message.get("role") if isinstance(message, Mapping) else None


def _indexed(attributes: Mapping[str, Any], prefix: str, suffix: str) -> list[Any]:
    """``prefix.N.suffix`` values for N = 0, 1, ... (OpenInference and OpenLLMetry flatten
    lists into indexed keys), up to the first gap."""
    values: list[Any] = []
    if f"{prefix}.0.{suffix}" not in attributes:
        return values
    for index in range(MAX_INDEXED):
        key = f"{prefix}.{index}.{suffix}"
        if key not in attributes:
            break
        values.append(attributes[key])
    return values


def _event_text(events: Sequence[tuple[str, dict[str, Any]]], names: Iterable[str]) -> str | None:
    """The text of the last event named one of ``names`` (the older GenAI event conventions)."""
    wanted = set(names)
    found = None
    for name, attributes in events:
        if name not in wanted:
            continue
        for key in ("gen_ai.prompt", "gen_ai.completion", "content", "message"):
            if key in attributes:
                text = _message_text(_json(attributes[key]))
                found = text if text is not None else found
    return found


# Where a span's input and output text may be, in the order they are tried: an attribute and
# how to read it. A key absent from the span costs one dictionary lookup.
_Reader = Callable[[Mapping[str, Any], str], "str | None"]
_INPUTS: Final[tuple[tuple[str, _Reader], ...]] = (
    ("gen_ai.input.messages", lambda a, k: _messages_text(a[k], "user")),
    ("input.value", lambda a, k: _text(a[k])),
    ("llm.input_messages.0.message.content", lambda a, k: _indexed_last(a, k)),
    ("gen_ai.prompt.0.content", lambda a, k: _indexed_last(a, k)),
    ("gen_ai.prompt", lambda a, k: _text(a[k])),
)
_OUTPUTS: Final[tuple[tuple[str, _Reader], ...]] = (
    ("gen_ai.output.messages", lambda a, k: _messages_text(a[k], None)),
    ("output.value", lambda a, k: _text(a[k])),
    ("llm.output_messages.0.message.content", lambda a, k: _indexed_last(a, k)),
    ("gen_ai.completion.0.content", lambda a, k: _indexed_last(a, k)),
    ("gen_ai.completion", lambda a, k: _text(a[k])),
)
_INPUT_EVENTS: Final = ("gen_ai.user.message", "gen_ai.content.prompt")
_OUTPUT_EVENTS: Final = ("gen_ai.choice", "gen_ai.content.completion")


def _indexed_last(attributes: Mapping[str, Any], first_key: str) -> str | None:
    """The last text of a flattened list whose first key is ``first_key`` (``p.0.s``)."""
    prefix, _, suffix = first_key.partition(".0.")
    return _last(_indexed(attributes, prefix, suffix))


def _read(
    span: RawSpan, custom: str | None, readers: tuple[tuple[str, _Reader], ...], events: Any
) -> str | None:
    """The first text found: the mapping's attribute, the conventions in order, the events."""
    a = span.attributes
    if custom and custom in a:
        found = _text(a[custom])
        if found is not None:
            return found
    for key, reader in readers:
        if key in a:
            found = reader(a, key)
            if found is not None:
                return found
    return _event_text(span.events, events) if span.events else None


def _input_of(span: RawSpan, mapping: TraceMapping) -> str | None:
    return _read(span, mapping.input, _INPUTS, _INPUT_EVENTS)


def _output_of(span: RawSpan, mapping: TraceMapping) -> str | None:
    return _read(span, mapping.output, _OUTPUTS, _OUTPUT_EVENTS)


def _last(values: list[Any]) -> str | None:
    texts = [v for v in values if isinstance(v, str)]
    return texts[-1] if texts else None


def _contexts_of(span: RawSpan, mapping: TraceMapping) -> tuple[list[str], list[str]]:
    """Retrieved texts and their ids (ids may be fewer, or none)."""
    a = span.attributes
    if mapping.contexts and mapping.contexts in a:
        raw = _json(a[mapping.contexts])
        items = raw if isinstance(raw, list) else [raw]
        return [t for t in (_text(i) for i in items) if t is not None], []
    texts = [
        t for t in _indexed(a, "retrieval.documents", "document.content") if isinstance(t, str)
    ]
    ids = [str(i) for i in _indexed(a, "retrieval.documents", "document.id") if i is not None]
    documents = _json(a.get("gen_ai.retrieval.documents"))
    if not texts and isinstance(documents, list):
        for document in documents:
            if isinstance(document, Mapping) and isinstance(document.get("content"), str):
                texts.append(document["content"])
                if document.get("id") is not None:
                    ids.append(str(document["id"]))
    return texts, ids


def _kind(span: RawSpan) -> PartKind:
    a = span.attributes
    operation = _text(a.get("gen_ai.operation.name"))  # a list or a map names nothing
    open_kind = str(a.get("openinference.span.kind", "")).upper()
    if operation == "execute_tool" or open_kind == "TOOL":
        return "tool"
    if operation in RETRIEVAL_OPERATIONS or open_kind == "RETRIEVER":
        return "retrieval"
    if operation in CHAT_OPERATIONS or open_kind == "LLM":
        return "chat"
    return "other"


def _tool_of(span: RawSpan) -> ToolCall | None:
    a = span.attributes
    name = _text(a.get("gen_ai.tool.name")) or _text(a.get("tool.name"))
    if not name:
        return None
    arguments = a.get("gen_ai.tool.call.arguments", a.get("tool.parameters"))
    return ToolCall(name=name, arguments=_json(arguments))


def _tokens(a: Mapping[str, Any], *keys: str) -> int | None:
    for key in keys:
        value = a.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value
    return None


KNOWN_PREFIXES: Final = (
    "gen_ai.",
    "input.",
    "output.",
    "llm.",
    "retrieval.",
    "tool.",
    "session.",
    "openinference.",
)


def _says_nothing(span: RawSpan, mapping: TraceMapping) -> bool:
    """Whether no attribute or event of ``span`` is one the mapping reads (an HTTP or a
    database span, most of a real trace): it is then a bare part, read no further."""
    if span.events:
        return False
    custom = {mapping.input, mapping.output, mapping.contexts, mapping.session}
    custom.update(mapping.metadata.values())
    return not any(k.startswith(KNOWN_PREFIXES) or k in custom for k in span.attributes)


def span_part(span: RawSpan, mapping: TraceMapping) -> SpanPart:
    """What ``span`` adds to its trace (before redaction)."""
    if _says_nothing(span, mapping):
        return SpanPart(root=not span.parent_id, service=_text(span.resource.get("service.name")))
    a = span.attributes
    kind = _kind(span)
    contexts, ids = _contexts_of(span, mapping)
    session_keys = (mapping.session, *SESSION_KEYS) if mapping.session else SESSION_KEYS
    session = next((_text(a[k]) for k in session_keys if k and k in a), None)
    return SpanPart(
        kind=kind,
        root=not span.parent_id,
        input=_input_of(span, mapping),
        output=_output_of(span, mapping),
        contexts=contexts,
        context_ids=ids,
        tool=_tool_of(span) if kind == "tool" else None,
        input_tokens=_tokens(a, "gen_ai.usage.input_tokens", "llm.token_count.prompt"),
        output_tokens=_tokens(a, "gen_ai.usage.output_tokens", "llm.token_count.completion"),
        model=_text(a.get("gen_ai.request.model")) or _text(a.get("llm.model_name")),
        session=session,
        service=_text(span.resource.get("service.name")),
        metadata={k: t for k, v in mapping.metadata.items() if (t := _text(a.get(v))) is not None},
    )


# --------------------------------------------------------------------------- one trace


def _first(values: Iterable[str | None]) -> str | None:
    return next((v for v in values if v is not None), None)


def _answer(parts: Sequence[SpanPart]) -> tuple[str | None, dict[str, int]]:
    """The trace's answer: the root span's output, else the last chat span's, else any."""
    for chosen in (
        [p for p in parts if p.root],
        [p for p in parts if p.kind == "chat"],
        list(parts),
    ):
        outputs = [p for p in chosen if p.output is not None]
        if outputs:
            return outputs[-1].output, outputs[-1].output_redacted
    return None, {}


def _question(parts: Sequence[SpanPart]) -> str | None:
    """The trace's input: the root span's, else the first chat span's, else any span's."""
    root = _first(p.input for p in parts if p.root)
    chat = _first(p.input for p in parts if p.kind == "chat")
    return root or chat or _first(p.input for p in parts)


def _usage(parts: Sequence[SpanPart]) -> dict[str, Any]:
    chats = [p for p in parts if p.kind == "chat"]
    prompt = [p.input_tokens for p in chats if p.input_tokens is not None]
    completion = [p.output_tokens for p in chats if p.output_tokens is not None]
    usage: dict[str, Any] = {}
    if prompt:
        usage["prompt_tokens"] = sum(prompt)
    if completion:
        usage["completion_tokens"] = sum(completion)
    if prompt and completion:
        usage["total_tokens"] = sum(prompt) + sum(completion)
    model = _first(p.model for p in chats)
    if model is not None:
        usage["model"] = model
    return usage


def _summed(counts: Iterable[Mapping[str, int]]) -> dict[str, int]:
    total: dict[str, int] = {}
    for count in counts:
        for kind, n in count.items():
            total[kind] = total.get(kind, 0) + n
    return dict(sorted(total.items()))


def assemble(trace_id: str, started_ns: int, parts: Sequence[SpanPart]) -> TraceRecord:
    """One trace's sample from its span parts, given in the order the spans started."""
    output, output_redacted = _answer(parts)
    metadata: dict[str, str] = {}
    for part in parts:
        metadata.update(part.metadata)
    retrieval = [p for p in parts if p.kind == "retrieval" or p.contexts]
    return TraceRecord(
        trace_id=trace_id,
        started_ns=started_ns,
        input=_question(parts),
        output=output,
        contexts=[text for p in retrieval for text in p.contexts],
        context_ids=[i for p in retrieval for i in p.context_ids],
        tool_calls=[p.tool for p in parts if p.tool is not None],
        usage=_usage(parts),
        session=_first(p.session for p in parts),
        service=_first(p.service for p in parts),
        metadata=metadata,
        redacted=_summed(p.redacted for p in parts),
        output_redacted=output_redacted,
    )
