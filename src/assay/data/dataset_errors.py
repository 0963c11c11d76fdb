"""A dataset's pydantic validation error as an :class:`~assay.errors.InputError` in words.

Only the first error is shown, in words rather than pydantic's codes, with the sample (its id
when it has one, else its index) and the dotted field it is about; the rest are counted.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from assay.errors import DatasetError, InputError, MetricConfigError, UsageError


@contextlib.contextmanager
def declared_metrics(path: str | Path) -> Iterator[None]:
    """Building the metrics a dataset declares: one that cannot be built is that dataset's
    error, naming its file and the field ``metrics`` (the message names the metric)."""
    try:
        yield
    except MetricConfigError as exc:
        raise DatasetError(str(exc), file=str(path), field="metrics") from None


@contextlib.contextmanager
def declared_block(path: str | Path, field: str) -> Iterator[None]:
    """Checking a block of a dataset (``gate``, ``providers``) as ``assay run`` reads it: a
    refused value is that dataset's error, naming its file and the field."""
    try:
        yield
    except UsageError as exc:
        raise DatasetError(str(exc), file=str(path), field=field) from None


def _sample_label(raw_samples: object, index: int) -> str | int:
    """A sample's id when it has a usable one, else its index."""
    if isinstance(raw_samples, list) and 0 <= index < len(raw_samples):
        item = raw_samples[index]
        if isinstance(item, Mapping):
            sid = item.get("id")
            if isinstance(sid, (str, int)) and not isinstance(sid, bool) and str(sid):
                return str(sid)
    return index


def describe(value: object) -> str:
    """What kind of value a user wrote, in words (``null``, ``a list``, ``int``, ...)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, Mapping):
        return "a mapping"
    return type(value).__name__


def translate(
    exc: ValidationError,
    raw_samples: object,
    source: str,
    error: type[InputError],
    *,
    supported_schemas: Sequence[str],
) -> InputError:
    """The first error of ``exc`` as ``error``, naming the sample and field it is about."""
    first = exc.errors()[0]
    loc = list(first["loc"])
    sample: str | int | None = None
    if len(loc) >= 2 and loc[0] == "samples" and isinstance(loc[1], int):
        sample = _sample_label(raw_samples, loc[1])
        loc = loc[2:]
    field = ".".join(str(part) for part in loc) or None
    message = _message(first, field, supported_schemas)
    extra = len(exc.errors()) - 1
    if extra:
        message += f" (and {extra} more error{'s' if extra > 1 else ''})"
    return error(message, file=source, sample=sample, field=field)


def _message(first: ErrorDetails, field: str | None, supported_schemas: Sequence[str]) -> str:
    """Pydantic's message for one error, reworded where a dataset author needs more."""
    kind = first["type"]
    if kind == "missing":
        return "required field is missing"
    if kind == "extra_forbidden":
        return "unknown field (check the spelling; see docs/datasets.md)"
    if kind in ("dict_type", "model_type"):
        return f"must be a mapping; got {describe(first.get('input'))}"
    if kind == "list_type":
        return f"must be a list; got {describe(first.get('input'))}"
    if kind == "too_short" and field == "samples":
        return "must declare at least one sample"
    if kind == "value_error":
        return str(first["msg"]).removeprefix("Value error, ")
    if kind == "literal_error" and field == "schema_version":
        return f"unsupported value; supported: {', '.join(supported_schemas)}"
    return str(first["msg"])
