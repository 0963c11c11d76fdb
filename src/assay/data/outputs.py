"""What the system under test said: the :class:`Output` contract and saved-outputs files.

A system under test answers with a string, or a mapping with ``output`` plus optional
``retrieved`` (ranked ids or ``{id, text}``), ``contexts`` (the texts the answer was generated
from), ``trajectory`` and ``usage``. Saved-outputs files
use padosoft's ``outputs`` wrapper (JSON or YAML) or JSONL with one ``{id, output}`` per line.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from assay.data.retrieved import RankedDocs as RankedDocs  # re-exported: the contract's types
from assay.data.retrieved import Retrieved as Retrieved
from assay.data.trajectory import Trajectory, TrajectoryRecorder
from assay.errors import OutputsError, SystemUnderTestError

OUTPUTS_SCHEMA: Final = "assay.outputs.v1"


@dataclass(frozen=True, slots=True, init=False)
class Output:
    """The system under test's answer for one sample.

    ``retrieved`` is always a :class:`RankedDocs` or None: ``Retrieved`` entries given as a
    tuple or list become one, in their order.
    """

    text: str
    retrieved: RankedDocs | None = None
    trajectory: Mapping[str, Any] | None = None
    usage: Mapping[str, Any] | None = field(default=None, compare=False)
    contexts: tuple[str, ...] | None = None

    def __init__(
        self,
        text: str,
        retrieved: Sequence[Retrieved] | None = None,
        trajectory: Mapping[str, Any] | None = None,
        usage: Mapping[str, Any] | None = None,
        contexts: tuple[str, ...] | None = None,
    ) -> None:
        put = object.__setattr__
        put(self, "text", text)
        if retrieved is not None and type(retrieved) is not RankedDocs:
            retrieved = RankedDocs.of(retrieved)
        put(self, "retrieved", retrieved)
        put(self, "trajectory", trajectory)
        put(self, "usage", usage)
        put(self, "contexts", contexts)

    def context_texts(self) -> tuple[str, ...] | None:
        """The texts the answer was generated from: ``contexts``, else the retrieved texts."""
        if self.contexts is not None:
            return self.contexts
        if self.retrieved is not None and self.retrieved.texts is not None:
            return tuple(filter(None, self.retrieved.texts))
        return None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"output": self.text}
        if self.retrieved is not None:
            data["retrieved"] = _retrieved_json(self.retrieved)
        if self.trajectory is not None:
            data["trajectory"] = dict(self.trajectory)
        if self.usage is not None:
            data["usage"] = dict(self.usage)
        if self.contexts is not None:
            data["contexts"] = list(self.contexts)
        return data


def _retrieved_json(ranking: RankedDocs) -> list[Any]:
    """Ids, or ``{id, text}`` for the entries that have a text."""
    if ranking.texts is None:
        return list(ranking.ids)
    return [{"id": i, "text": t} if t else i for i, t in zip(ranking.ids, ranking.texts)]


# --------------------------------------------------------------------------- the file's schema


# The models below build their validators at first use (defer_build): they describe the file
# for its JSON Schema (assay.cli.schema_files), and reading outputs does not validate with them.


class RetrievedEntry(BaseModel):
    """A retrieved document with its text (a bare id string is accepted too)."""

    model_config = ConfigDict(defer_build=True, extra="allow")

    id: str | int
    text: str | None = None


class ContextEntry(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="allow")

    text: str


class OutputBody(BaseModel):
    """One saved answer: the text plus what a RAG or agent system returned with it."""

    model_config = ConfigDict(
        defer_build=True,
        extra="allow",
        json_schema_extra={"anyOf": [{"required": ["output"]}, {"required": ["actual_output"]}]},
    )

    output: str | None = Field(default=None, description="the answer text")
    actual_output: str | None = Field(default=None, description="padosoft's name for 'output'")
    retrieved: list[str | int | RetrievedEntry] | None = Field(
        default=None, description="ranked ids or {id, text} (retrieval and RAG metrics)"
    )
    contexts: list[str | ContextEntry] | None = Field(
        default=None, description="the texts the answer was generated from (RAG metrics)"
    )
    trajectory: dict[str, Any] | None = Field(
        default=None, description="tool_calls, steps, finish_reason, pending_approvals, approvals"
    )
    usage: dict[str, Any] | None = None


class OutputEntry(OutputBody):
    id: str | int


class ConversationEntry(BaseModel):
    """A conversation's replies in turn order: entry ``c`` answers turns ``c#1``, ``c#2``..."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    id: str | int
    turns: list[str | OutputBody] = Field(min_length=1)


class OutputsDocument(BaseModel):
    """A saved-outputs file (JSON or YAML; JSONL files hold one OutputEntry per line)."""

    model_config = ConfigDict(defer_build=True, extra="allow")

    schema_version: Literal["assay.outputs.v1"] | None = None
    outputs: dict[str, str | OutputBody | ConversationEntry] | list[OutputEntry | ConversationEntry]


def parse_retrieved(raw: Any, *, where: str = "retrieved") -> RankedDocs:
    """Ranked entries from ids or ``{id, text}`` objects; duplicates keep their best rank."""
    if type(raw) in (list, tuple) and _all_strings(raw):
        # the common shape, a list of ids, read in C: a set of the ids beats dict.fromkeys,
        # which only a list with duplicates needs
        unique = set(raw)
        if "" not in unique:
            return RankedDocs(tuple(raw if len(unique) == len(raw) else dict.fromkeys(raw)))
    if not isinstance(raw, Sequence) or isinstance(raw, (str, bytes)):
        raise ValueError(f"'{where}' must be a list of ids or {{id, text}} objects")
    found: dict[str, str] = {}  # id -> text, in rank order
    for position, entry in enumerate(raw):
        if isinstance(entry, str) and entry:
            found.setdefault(entry, "")
        elif isinstance(entry, Mapping) and isinstance(entry.get("id"), str) and entry["id"]:
            text = entry.get("text")
            found.setdefault(entry["id"], text if isinstance(text, str) else "")
        elif isinstance(entry, int) and not isinstance(entry, bool):
            found.setdefault(str(entry), "")
        else:
            raise ValueError(
                f"'{where}[{position}]' must be a non-empty id or an object with a non-empty 'id'"
            )
    return RankedDocs(tuple(found), tuple(found.values()))


def _all_strings(items: Sequence[Any]) -> bool:
    """Whether every item is a string: joining them checks that in C, faster than reading each
    item's type (a str subclass passes too; the general path reads it the same way)."""
    try:
        "".join(items)
    except TypeError:
        return False
    return True


def coerce_output(value: object) -> Output:
    """Turn whatever a system under test returned into an :class:`Output`, or explain why not."""
    if isinstance(value, Output):
        return value
    if isinstance(value, str):
        return Output(value)
    if isinstance(value, Mapping):
        nested = value.get("output")
        if isinstance(nested, Mapping) and set(value) == {"output"}:
            value = nested  # JSONL lines may wrap the whole answer: {"id": ..., "output": {...}}
        key = "output" if "output" in value or "actual_output" not in value else "actual_output"
        text = value.get(key)
        if not isinstance(text, str):
            raise SystemUnderTestError(
                f"returned a mapping whose '{key}' is {type(text).__name__}; expected a string",
                field=key,
            )
        retrieved = None
        if value.get("retrieved") is not None:
            try:
                retrieved = parse_retrieved(value["retrieved"])
            except ValueError as exc:
                raise SystemUnderTestError(str(exc), field="retrieved") from None
        usage = value.get("usage")
        return Output(
            text,
            retrieved,
            _trajectory(value.get("trajectory")),
            usage if isinstance(usage, Mapping) else None,
            parse_contexts(value.get("contexts")),
        )
    raise SystemUnderTestError(
        f"returned {type(value).__name__}; expected a string or a mapping with 'output'"
    )


def parse_contexts(raw: object, *, where: str = "contexts") -> tuple[str, ...] | None:
    """Context texts from a list of strings or ``{text}`` objects; None when absent."""
    if raw is None:
        return None
    if not isinstance(raw, list):
        raise SystemUnderTestError(
            f"'{where}' must be a list of texts; got {type(raw).__name__}", field=where
        )
    texts: list[str] = []
    for position, entry in enumerate(raw):
        text = entry.get("text") if isinstance(entry, Mapping) else entry
        if not isinstance(text, str):
            raise SystemUnderTestError(
                f"'{where}[{position}]' must be a text or an object with a 'text'", field=where
            )
        texts.append(text)
    return tuple(texts)


def _trajectory(raw: object) -> Mapping[str, Any] | None:
    """A returned trajectory as JSON: a mapping, a Trajectory, or a TrajectoryRecorder."""
    if raw is None or isinstance(raw, Mapping):
        return raw
    if isinstance(raw, Trajectory):
        return raw.to_json()
    if isinstance(raw, TrajectoryRecorder):
        return raw.trajectory().to_json()
    raise SystemUnderTestError(
        f"returned a 'trajectory' that is {type(raw).__name__}; expected an object",
        field="trajectory",
    )


def _entry_output(entry: object, *, sample_id: str, path: Path) -> Output:
    try:
        return coerce_output(entry)
    except SystemUnderTestError as exc:
        raise OutputsError(
            str(exc).replace("returned", "saved output is", 1),
            file=str(path),
            sample=sample_id,
            field=exc.field or "output",
        ) from None


def read_outputs(path: str | Path) -> Mapping[str, Output]:
    """A saved-outputs file read whole into ``{sample_id: Output}``.

    :func:`assay.data.loading.load_outputs` keeps a large JSONL file on disk instead.
    """
    from assay.data.documents import read_text

    path = Path(path)
    jsonl = path.suffix.lower() == ".jsonl"
    text = read_text(path, OutputsError)
    outputs: dict[str, Output] = {}
    entries = _jsonl_entries(text, path) if jsonl else _document_entries(text, path)
    for sample_id, entry, where in entries:
        _add(outputs, sample_id, entry, where=where, path=path)
    return outputs


_Entry = tuple[Any, Any, str]  # (id as written, the saved output, where it is in the file)


def _jsonl_entries(text: str, path: Path) -> Iterator[_Entry]:
    """One entry per JSONL line: ``{"id": ..., "output": ...}``."""
    from assay.data.documents import iter_jsonl

    for number, value in iter_jsonl(text, path, OutputsError):
        yield _jsonl_entry(value, number, path)


def _jsonl_entry(value: object, number: int, path: Path) -> _Entry:
    """One JSONL line's (id, output, where); an OutputsError when the line is not an object."""
    if not isinstance(value, Mapping):
        raise OutputsError(
            f"line {number} must be an object with 'id' and 'output'", file=str(path)
        )
    return value.get("id"), {k: v for k, v in value.items() if k != "id"}, f"line {number}"


def check_jsonl_entry(value: object, number: int, path: Path) -> None:
    """Raise what :func:`read_outputs` raises for one JSONL line's value, if anything (a line
    read on its own: only a duplicate id across lines goes unseen)."""
    sample_id, entry, where = _jsonl_entry(value, number, path)
    _add({}, sample_id, entry, where=where, path=path)


def _document_entries(text: str, path: Path) -> Iterator[_Entry]:
    """The entries of a JSON or YAML ``outputs`` wrapper: a mapping of id to output, or a list
    of entries with an ``id``."""
    from assay.data.documents import parse_document

    data = parse_document(text, path, OutputsError)
    if not isinstance(data, Mapping) or "outputs" not in data:
        raise OutputsError(
            "a top-level 'outputs' wrapper is required", file=str(path), field="outputs"
        )
    body = data["outputs"]
    if isinstance(body, Mapping):
        for key, entry in body.items():
            yield key, entry, f"outputs.{key}"
    elif isinstance(body, list):
        for index, entry in enumerate(body):
            if not isinstance(entry, Mapping):
                raise OutputsError(
                    f"outputs[{index}] must be an object with 'id' and 'actual_output'",
                    file=str(path),
                )
            yield (
                entry.get("id"),
                {k: v for k, v in entry.items() if k != "id"},
                f"outputs[{index}]",
            )
    else:
        raise OutputsError(
            "'outputs' must be a mapping of id to text or a list of entries",
            file=str(path),
            field="outputs",
        )


def _add(
    outputs: dict[str, Output], sample_id: object, entry: object, *, where: str, path: Path
) -> None:
    """Add one saved output; a conversation's replies become ``id#1``, ``id#2``, ..."""
    if isinstance(sample_id, bool) or not isinstance(sample_id, (str, int)) or str(sample_id) == "":
        raise OutputsError(f"{where} needs a non-empty string 'id'", file=str(path), field="id")
    key = str(sample_id)
    if isinstance(entry, Mapping) and "turns" in entry and "output" not in entry:
        for number, reply in enumerate(_turn_entries(entry["turns"], where, path), start=1):
            _add(outputs, f"{key}#{number}", reply, where=f"{where}.turns[{number - 1}]", path=path)
        return
    if key in outputs:
        raise OutputsError(
            f"duplicate id {key!r} ({where})", file=str(path), sample=key, field="id"
        )
    outputs[key] = _entry_output(entry, sample_id=key, path=path)


def _turn_entries(raw: object, where: str, path: Path) -> list[Any]:
    """A conversation's replies, turn by turn (``c`` answers turns ``c#1``, ``c#2``, ...)."""
    if not isinstance(raw, list) or not raw:
        raise OutputsError(
            f"{where}.turns must be a non-empty list of replies", file=str(path), field="turns"
        )
    return raw


def check_outputs_cover(
    outputs: Mapping[str, Output], sample_ids: Sequence[str], *, path: str
) -> None:
    """Saved outputs must answer exactly the dataset's samples: name what is missing or unknown."""
    wanted = set(sample_ids)
    missing = [sid for sid in sample_ids if sid not in outputs]
    unknown = [sid for sid in outputs if sid not in wanted]

    def preview(ids: list[str]) -> str:
        shown = ", ".join(repr(i) for i in ids[:10])
        return shown + (f" and {len(ids) - 10} more" if len(ids) > 10 else "")

    if missing:
        raise OutputsError(
            f"no saved output for {len(missing)} sample(s): {preview(missing)}", file=path
        )
    if unknown:
        raise OutputsError(
            f"{len(unknown)} id(s) are not in the dataset: {preview(unknown)}", file=path
        )
