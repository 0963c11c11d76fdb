"""A dataset's pydantic validation error as an :class:`~assay.errors.InputError` in words.

Only the first error is shown, in words rather than pydantic's codes, with the sample (its id
when it has one, else its index) and the dotted field it is about; the rest are counted.
"""

from __future__ import annotations

import contextlib
import difflib
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


MAX_LISTED_ERRORS = 20  # `assay validate` lists this many problems of one document


def translate(
    exc: ValidationError,
    raw_samples: object,
    source: str,
    error: type[InputError],
    *,
    supported_schemas: Sequence[str],
    known: Mapping[str, Sequence[str]] | None = None,
) -> InputError:
    """The first error of ``exc`` as ``error``, naming the sample and field it is about; the
    next ones (up to :data:`MAX_LISTED_ERRORS`) as its ``more`` lines. ``known`` names the valid
    fields ('' top level, 'sample' in a sample) for a "did you mean" on an unknown one."""
    errors = exc.errors()
    found = [_one(item, raw_samples, source, error, supported_schemas, known) for item in errors]
    first = found[0]
    extra = len(errors) - 1
    if extra:
        first = error(
            f"{first.detail} (and {extra} more error{'s' if extra > 1 else ''})",
            file=source,
            sample=first.sample,
            field=first.field,
        )
    first.more = tuple(str(item) for item in found[1:MAX_LISTED_ERRORS])
    return first


def _one(
    item: ErrorDetails,
    raw_samples: object,
    source: str,
    error: type[InputError],
    supported_schemas: Sequence[str],
    known: Mapping[str, Sequence[str]] | None,
) -> InputError:
    """One pydantic error as ``error`` naming its sample and field."""
    loc = list(item["loc"])
    sample: str | int | None = None
    scope = ""
    if len(loc) >= 2 and loc[0] == "samples" and isinstance(loc[1], int):
        sample = _sample_label(raw_samples, loc[1])
        loc, scope = loc[2:], "sample"
    field = ".".join(str(part) for part in loc) or None
    message = _message(item, field, supported_schemas)
    if item["type"] == "extra_forbidden" and known and len(loc) == 1:
        close = difflib.get_close_matches(str(loc[0]), known.get(scope, ()), n=1)
        if close:
            message = f"unknown field; did you mean '{close[0]}'?"
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
