"""What every importer shares: reading another tool's file, checking it against a model of that
tool's documented format with one-line errors, and the :class:`Imported` result.

An importer never guesses silently: whatever it reads but cannot carry into an assay document
(a key assay has no place for, an assertion type with no assay metric) is listed in
:attr:`Imported.unmapped`, and ``assay import`` prints that list.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ValidationError

from assay.data.documents import iter_jsonl, parse_document, read_text
from assay.errors import ForeignFileError

ModelT = TypeVar("ModelT", bound=BaseModel)
Kind = Literal["dataset", "labels"]


@dataclass(frozen=True)
class Imported:
    """An assay document built from another tool's file, and what could not be carried over."""

    kind: Kind
    """``dataset`` (``assay.dataset.v1``) or ``labels`` (``assay.labels.v1``)."""
    document: dict[str, Any]
    unmapped: tuple[str, ...] = ()
    """One line per thing read but not carried over, naming the item and the field."""
    extra: Mapping[str, dict[str, Any]] | None = None
    """Further documents by role (``outputs``: the saved answers found in the file)."""


def read_foreign(path: Path) -> Any:
    """A JSON, YAML or JSONL file parsed (JSONL as a list of its lines' values)."""
    text = read_text(path, ForeignFileError)
    if path.suffix.lower() == ".jsonl":
        return [value for _, value in iter_jsonl(text, path, ForeignFileError)]
    return parse_document(text, path, ForeignFileError)


def parse_model(
    model: type[ModelT], data: object, source: str, item: str | int | None = None
) -> ModelT:
    """``data`` validated as ``model``; the first problem as a one-line :class:`ForeignFileError`
    naming the file, the item and the field."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or None
        raise ForeignFileError(
            _plain(first["msg"]), file=source, sample=item, field=field
        ) from None


def _plain(message: str) -> str:
    """pydantic's message without its ``Value error, `` prefix."""
    return message.removeprefix("Value error, ")


def unknown_keys(model: BaseModel, where: str) -> list[str]:
    """One note per key of ``model`` (``extra="allow"``) that no field took."""
    return [f"{where}: field '{key}' is not mapped" for key in sorted(model.model_extra or {})]


def unique_id(base: str, seen: set[str]) -> str:
    """``base`` made a usable sample id (trimmed, never empty) and unique among ``seen``."""
    candidate = re.sub(r"\s+", "-", base.strip()) or "item"
    unique, number = candidate, 2
    while unique in seen:
        unique, number = f"{candidate}-{number}", number + 1
    seen.add(unique)
    return unique


def require_list(data: object, source: str, what: str) -> list[Any]:
    """``data`` when it is a non-empty list, else a one-line error saying what was expected."""
    if not isinstance(data, list) or not data:
        raise ForeignFileError(f"expected a non-empty list of {what}", file=source)
    return data


def notes(*groups: Iterable[str]) -> tuple[str, ...]:
    """The notes of several groups, in order, each once."""
    return tuple(dict.fromkeys(note for group in groups for note in group))
