"""Golden datasets: samples, the dataset document, and loading it from YAML, JSON or JSONL.

assay reads its own ``assay.dataset.v1`` files and padosoft's ``eval-harness.dataset.v1``
files unchanged. Validation is strict and every error names the file, the sample (index or
id) and the field, so a user can fix a 5,000-sample file without guessing. Files are read and
parsed by :mod:`assay.data.documents` (its readers stay importable from here).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from assay.data.dataset_errors import describe, translate

# Re-exported: callers read and parse their files through assay.data.dataset.
from assay.data.documents import MAX_DATASET_BYTES as MAX_DATASET_BYTES
from assay.data.documents import iter_jsonl as iter_jsonl
from assay.data.documents import parse_document as parse_document
from assay.data.documents import parse_jsonl_line as parse_jsonl_line
from assay.data.documents import read_text as read_text
from assay.errors import DatasetError

DATASET_SCHEMA: Final = "assay.dataset.v1"
LEGACY_DATASET_SCHEMA: Final = "eval-harness.dataset.v1"
SUPPORTED_DATASET_SCHEMAS = (DATASET_SCHEMA, LEGACY_DATASET_SCHEMA)

MAX_REPETITIONS = 1000
"""The most repetitions a run takes (``--repetitions`` or a dataset's ``repetitions:``): a
typing slip such as 100000000 is refused, not run for days."""


METADATA_KEYS: dict[str, Any] = {
    "tags": {"description": "cohort tags: a string or a list of strings"},
    "relevant": {
        "description": "relevant document ids (a list), or ids with graded gains (a mapping), "
        "for the retrieval and RAG metrics"
    },
    "k": {"description": "cut-off of the @k retrieval metrics (an integer >= 1)"},
    "trajectory": {
        "description": "what the agent should do: tools, forbidden_tools, tool_arguments, "
        "order, max_steps, requires_approval"
    },
    "goal": {"description": "the agent's goal, for goal-accuracy (a string)"},
    "refusal_expected": {"description": "refusal-quality's expectation (a boolean)"},
    "conversation": {
        "description": "reserved: assay sets {id, turn, turns} on each turn of a conversation"
    },
}
METRIC_ITEM: dict[str, Any] = {
    "anyOf": [
        {"type": "string", "minLength": 1, "description": "a metric alias"},
        {
            "type": "object",
            "required": ["name"],
            "properties": {"name": {"type": "string", "minLength": 1}},
            "additionalProperties": True,
            "description": "a metric alias with its options",
        },
    ]
}


def _message_or_object(schema: dict[str, Any]) -> None:
    """A turn's JSON Schema: the object, or a plain string (the user's message)."""
    described = dict(schema)
    schema.clear()
    schema.update(
        {
            "anyOf": [{"type": "string", "minLength": 1}, described],
            "description": described.get("description", ""),
        }
    )


# The models below build their validators at first use (defer_build): a run builds only those
# it validates with, e.g. a judge run of a JSON dataset uses Dataset's, never Sample's alone.


class Turn(BaseModel):
    """One user message of a conversation, optionally with the reply expected to it."""

    model_config = ConfigDict(
        defer_build=True, frozen=True, extra="forbid", json_schema_extra=_message_or_object
    )

    user: str = Field(min_length=1, description="the user's message at this turn")
    expected_output: Any = Field(default=None, description="the expected reply (optional)")
    metadata: dict[str, Any] = Field(
        default_factory=dict, description="merged over the conversation's metadata for this turn"
    )

    @model_validator(mode="before")
    @classmethod
    def _plain_message(cls, value: object) -> Any:
        return {"user": value} if isinstance(value, str) else value


def _input_unless_turns(schema: dict[str, Any]) -> None:
    """A sample's JSON Schema: ``input`` and ``expected_output`` are required unless the sample
    is a conversation (``turns``), as the model's before-validator fills them in then."""
    schema["required"] = [key for key in schema.get("required", []) if key == "id"]
    schema["anyOf"] = [{"required": ["turns"]}, {"required": ["input", "expected_output"]}]


class Sample(BaseModel):
    """One golden example: what the system gets, what it should say, and how to slice it.

    A sample with ``turns`` is a conversation: the dataset expands it into one sample per turn
    (see :func:`expand_turns`), and ``input`` and ``expected_output`` may then be left out.
    """

    model_config = ConfigDict(
        defer_build=True, frozen=True, extra="forbid", json_schema_extra=_input_unless_turns
    )

    id: str = Field(min_length=1)
    input: dict[str, Any]
    expected_output: Any
    metadata: dict[str, Any] = Field(
        default_factory=dict,
        description="free-form; the keys below have a meaning to assay (docs/datasets.md)",
        json_schema_extra={"properties": METADATA_KEYS},
    )
    turns: list[Turn] | None = Field(
        default=None,
        min_length=1,
        exclude=True,  # expanded on load: a loaded dataset's samples never hold turns
        description=(
            "a conversation: user messages in order, each optionally with its expected reply"
        ),
    )

    @model_validator(mode="before")
    @classmethod
    def _conversation_defaults(cls, value: object) -> Any:
        if isinstance(value, Mapping) and value.get("turns") is not None:
            value = {"input": {}, "expected_output": None, **value}
        return value

    @field_validator("id", mode="before")
    @classmethod
    def _id_as_string(cls, value: object) -> Any:
        if isinstance(value, bool):
            raise ValueError("must be a string, not a boolean")
        if isinstance(value, int):
            return str(value)
        return value

    @property
    def tags(self) -> list[str]:
        """Cohort tags: ``metadata.tags`` as a string or list, trimmed and de-duplicated."""
        return normalise_tags(self.metadata.get("tags"))

    @property
    def row_hash(self) -> str:
        """Stable identity of the sample's content (input + expected), independent of its id.

        Taken once per sample (a frozen model): the recorder and the resume check both read it.
        Kept where ``functools.cached_property`` keeps it, without the lock its ``__get__``
        takes on Python 3.11 (a third of the time the recorder spent on row hashes).
        """
        found = self.__dict__.get("row_hash")
        if found is None:
            found = self.__dict__["row_hash"] = row_hash(self.input, self.expected_output)
        return found


class MetricSpec(BaseModel):
    """A metric named in a dataset: an alias plus its options."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="allow")

    name: str = Field(min_length=1)

    @property
    def options(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


class Dataset(BaseModel):
    """A golden dataset document (``assay.dataset.v1``, or padosoft's v1 read unchanged)."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    schema_version: Literal["assay.dataset.v1", "eval-harness.dataset.v1"] = DATASET_SCHEMA
    name: str = Field(min_length=1)
    description: str | None = None
    repetitions: int = Field(default=1, ge=1, le=MAX_REPETITIONS)
    metrics: list[MetricSpec] = Field(
        default_factory=list, json_schema_extra={"items": METRIC_ITEM}
    )
    gate: dict[str, Any] | None = None
    providers: dict[str, Any] | None = None
    rubric: Any = None
    samples: list[Sample] = Field(min_length=1)

    @field_validator("metrics", mode="before")
    @classmethod
    def _metric_aliases(cls, value: object) -> Any:
        if isinstance(value, list):
            return [{"name": item} if isinstance(item, str) else item for item in value]
        return value

    @field_validator("repetitions", mode="before")
    @classmethod
    def _digit_string_repetitions(cls, value: object) -> Any:
        if isinstance(value, bool):
            raise ValueError("must be an integer of at least 1, not a boolean")
        digits = value.strip() if isinstance(value, str) else ""
        if digits.isascii() and digits.isdigit():  # "12"; not "١٢" or "²", which int() reads
            return int(digits)
        return value

    @model_validator(mode="after")
    def _expand_conversations(self) -> Dataset:
        if any(sample.turns for sample in self.samples):
            object.__setattr__(self, "samples", expand_turns(self.samples))
        return self

    def sample(self, sample_id: str) -> Sample:
        for item in self.samples:
            if item.id == sample_id:
                return item
        raise KeyError(sample_id)


CONVERSATION_KEY = "conversation"
MESSAGE_KEY = "message"
HISTORY_KEY = "history"


def turn_id(conversation: str, number: int) -> str:
    """The sample id of a conversation's turn (1-based): ``<conversation>#<number>``."""
    return f"{conversation}#{number}"


def expand_turns(samples: list[Sample]) -> list[Sample]:
    """Every conversation replaced by one sample per turn, in order; other samples kept.

    Turn ``n`` of conversation ``c`` is sample ``c#n``: its input is the conversation's input
    plus ``message`` (the user's message), its expected output the turn's, its metadata the
    conversation's with the turn's merged over it and ``conversation: {id, turn, turns}``.
    """
    out: list[Sample] = []
    for sample in samples:
        if not sample.turns:
            out.append(sample)
            continue
        for key, where in ((MESSAGE_KEY, "input"), (CONVERSATION_KEY, "metadata")):
            if key in getattr(sample, where):
                raise ValueError(
                    f"sample '{sample.id}': {where}.{key} is reserved in a conversation "
                    "(assay sets it for each turn)"
                )
        count = len(sample.turns)
        for number, turn in enumerate(sample.turns, start=1):
            metadata = {**sample.metadata, **turn.metadata}
            metadata[CONVERSATION_KEY] = {"id": sample.id, "turn": number, "turns": count}
            out.append(
                Sample(
                    id=turn_id(sample.id, number),
                    input={**sample.input, MESSAGE_KEY: turn.user},
                    expected_output=turn.expected_output,
                    metadata=metadata,
                )
            )
    ids = [sample.id for sample in out]
    if len(set(ids)) != len(ids):
        repeated = next(i for i in ids if ids.count(i) > 1)
        raise ValueError(f"sample id '{repeated}' is used twice once conversations are expanded")
    return out


def conversation_of(sample: Sample) -> tuple[str, int] | None:
    """``(conversation id, turn number)`` of a turn sample, else None."""
    raw = sample.metadata.get(CONVERSATION_KEY)
    if isinstance(raw, Mapping) and isinstance(raw.get("id"), str):
        number = raw.get("turn")
        if isinstance(number, int) and not isinstance(number, bool) and number >= 1:
            return raw["id"], number
    return None


def normalise_tags(raw: object) -> list[str]:
    """Tags from a string or list: strings only, trimmed, empties dropped, order kept."""
    items = [raw] if isinstance(raw, str) else raw if isinstance(raw, list) else []
    seen: dict[str, None] = {}
    for item in items:
        if isinstance(item, str) and item.strip():
            seen.setdefault(item.strip(), None)
    return list(seen)


def tags_of(samples: Sequence[Sample]) -> list[list[str]]:
    """Each sample's :attr:`Sample.tags`, each distinct ``metadata.tags`` list normalised once
    (a dataset has few distinct tag lists); every sample gets its own list."""
    normalised: dict[Any, list[str]] = {}
    found: list[list[str]] = []
    for sample in samples:
        raw = sample.metadata.get("tags")
        if raw is None:  # most samples
            found.append([])
            continue
        key = (type(raw), tuple(raw) if type(raw) is list else raw)
        try:
            tags = normalised.get(key)
            if tags is None:
                tags = normalised[key] = normalise_tags(raw)
        except TypeError:  # an unhashable entry (a dict in the list): nothing to share
            tags = normalise_tags(raw)
        found.append(tags.copy())
    return found


# One encoder, configured once (json.dumps builds a new one per call): it holds no state.
_CANONICAL = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str
)
# The C encoder that _CANONICAL.encode builds on every call, built once: the same arguments
# except the circular-reference check (it needs a dict shared by every call), so a circular
# value fails here and is encoded again by _CANONICAL, which raises as it always did.
_CANONICAL_C = (
    None
    if c_make_encoder is None
    else c_make_encoder(None, str, encode_basestring, None, ":", ",", True, False, True)
)


def canonical_json(value: object) -> str:
    """Compact JSON with sorted keys: the byte form that row hashes are taken over."""
    if _CANONICAL_C is not None:
        try:
            return "".join(_CANONICAL_C(value, 0))
        except Exception:  # the stdlib path below raises (or not) as it always did
            pass
    return _CANONICAL.encode(value)


def row_hash(input_: object, expected: object) -> str:
    """SHA-256 (hex) of the canonical JSON of ``{"input": ..., "expected": ...}``."""
    value = {"input": input_, "expected": expected}
    return hashlib.sha256(
        canonical_bytes(value, flat=flat_values(input_) and flat_values(expected))
    ).hexdigest()


def canonical_bytes(value: object, *, flat: bool, errors: str = "strict") -> bytes:
    """:func:`canonical_json` of ``value`` in UTF-8 (``errors`` as ``str.encode`` takes it);
    written by orjson, about 3x faster, when ``flat`` says its leaves are what orjson writes
    exactly as canonical_json does (see :func:`flat_values`)."""
    if flat:
        import orjson  # here, not at import: a judge run's first request does not wait for it

        try:  # the same bytes as canonical_json for strings, small integers, booleans, null
            return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
        except TypeError:  # a key that is not a string, an integer past 64 bits, a surrogate
            pass
    return canonical_json(value).encode("utf-8", errors)


_FLAT_TYPES = frozenset({str, int, bool, type(None)})


def flat_values(value: Any) -> bool:
    """Whether ``value`` is a JSON scalar other than a float, or a dict of them: what orjson
    writes exactly as :func:`canonical_json` does (floats, subclasses and other types it may
    write differently: 1e-05 against 0.00001, an enum's value against its ``str``)."""
    kind = type(value)
    if kind is dict:
        return _FLAT_TYPES.issuperset(map(type, value.values()))
    return kind in _FLAT_TYPES


_SAMPLE_KEYS = frozenset({"id", "input", "expected_output", "metadata"})
_set = object.__setattr__  # a Sample is frozen: its parts are set as pydantic sets them


def is_plain_sample(value: object) -> bool:
    """Whether a parsed sample has the common shape :class:`Sample` accepts as it is: a string
    or integer id, an object input, an expected output, an object metadata, nothing else (no
    ``turns``). Such a value is valid by construction (see :func:`built_sample`)."""
    if type(value) is not dict or not value.keys() <= _SAMPLE_KEYS:
        return False
    sample_id = value.get("id")
    return (
        ((type(sample_id) is str and sample_id != "") or type(sample_id) is int)
        and type(value.get("input")) is dict
        and "expected_output" in value
        and type(value.get("metadata", {})) is dict
    )


def built_sample(value: dict[str, Any]) -> Sample:
    """The sample of a plain-shaped value (:func:`is_plain_sample`), as ``Sample.model_construct``
    (and validation) build it: fields in declaration order, the id as a string, the keys given
    as the fields set.

    Set directly, as ``model_construct`` and unpickling set them, since model_construct's
    per-field default resolution cost as much as validating the value.
    """
    sample_id = value["id"]
    fields = {
        "id": sample_id if type(sample_id) is str else str(sample_id),
        "input": value["input"],
        "expected_output": value["expected_output"],
        "metadata": value.get("metadata", {}),
        "turns": None,
    }
    sample = Sample.__new__(Sample)
    _set(sample, "__dict__", fields)
    _set(sample, "__pydantic_fields_set__", set(value))
    _set(sample, "__pydantic_extra__", None)
    _set(sample, "__pydantic_private__", None)
    return sample


# --------------------------------------------------------------------------- validation


def dataset_from_data(data: object, *, source: str = "<dataset>") -> Dataset:
    """Validate a parsed document into a :class:`Dataset` with precise error messages."""
    if not isinstance(data, Mapping):
        raise DatasetError(
            f"the document must be a mapping with 'name' and 'samples'; got {describe(data)}",
            file=source,
        )
    version = data.get("schema_version", DATASET_SCHEMA)
    if version not in SUPPORTED_DATASET_SCHEMAS:
        raise DatasetError(
            f"unsupported value {version!r}; supported: {', '.join(SUPPORTED_DATASET_SCHEMAS)}",
            file=source,
            field="schema_version",
        )
    raw_samples = data.get("samples")
    if isinstance(raw_samples, list):
        _check_duplicate_ids(raw_samples, source)
    try:
        return Dataset.model_validate(dict(data))
    except ValidationError as exc:
        raise translate(
            exc,
            raw_samples,
            source,
            DatasetError,
            supported_schemas=SUPPORTED_DATASET_SCHEMAS,
            known={"": _names(Dataset), "sample": _names(Sample)},
        ) from None


def _names(model: type[BaseModel]) -> list[str]:
    """The keys a document may use for a model's fields (aliases where they are set)."""
    return [info.alias or name for name, info in model.model_fields.items()]


def _check_duplicate_ids(raw_samples: list[Any], source: str) -> None:
    seen: dict[str, int] = {}
    for index, item in enumerate(raw_samples):
        if not isinstance(item, Mapping):
            continue
        sid = item.get("id")
        if isinstance(sid, bool) or not isinstance(sid, (str, int)):
            continue
        key = str(sid)
        if key in seen:
            raise DatasetError(
                f"duplicate id {key!r} (first used by sample #{seen[key]}, repeated at #{index})",
                file=source,
                sample=key,
                field="id",
            )
        seen[key] = index


def read_dataset(path: str | Path) -> Dataset:
    """A dataset read whole from ``.yml``/``.yaml``, ``.json`` or ``.jsonl`` (one sample per
    line). :func:`assay.data.loading.load_dataset` keeps a large JSONL file on disk instead."""
    path = Path(path)
    text = read_text(path)
    if path.suffix.lower() == ".jsonl":
        samples = [value for _, value in iter_jsonl(text, path, DatasetError)]
        if samples and all(map(is_plain_sample, samples)):
            return _plain_dataset(path, samples)
        data: Any = {"name": path.stem, "samples": samples}
    else:
        data = parse_document(text, path)
    return dataset_from_data(data, source=str(path))


def _plain_dataset(path: Path, samples: list[dict[str, Any]]) -> Dataset:
    """A JSONL dataset whose every sample has the plain shape: checked for duplicate ids, then
    built without the model's walk over each value (the document around them, with the first
    sample, still goes through the model), as a dataset left on disk reads its lines."""
    source = str(path)
    if len({str(value["id"]) for value in samples}) != len(samples):
        _check_duplicate_ids(samples, source)  # names the first repeat
    head = dataset_from_data({"name": path.stem, "samples": samples[:1]}, source=source)
    return head.model_copy(update={"samples": [built_sample(value) for value in samples]})
