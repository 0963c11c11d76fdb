"""Bounded parsing of outside JSON and YAML: depth is checked before any recursive code runs.

The YAML composer and constructor recurse once per nesting level, and the C composer does so
without Python's recursion guard, so ``[[[[...]]]]`` 30,000 deep ends the process with a
segmentation fault. Both formats are therefore scanned first by code that does not recurse:
JSON token by token, YAML through the parser's event stream (a state machine with its own
stack), and a document nested deeper than :data:`MAX_DEPTH` is refused with a message.
Callers turn that message into their own :class:`~assay.errors.InputError` naming the file.

A document a person writes (a dataset, saved outputs) may also be read with its keys checked
(:func:`unique_members`): a key given twice in one object is refused, as the YAML reader
refuses it, rather than the last one silently winning.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

MAX_DEPTH = 100
# What libyaml says when it passes its own nesting limit (1,000 levels; PyYAML 6.0.4 wheels).
_LIBYAML_TOO_DEEP = "exceeded maximum nesting depth"
# Strings are cut out whole (their brackets do not count); an unterminated one runs to the end.
_JSON_STRINGS = re.compile(r'"(?:[^"\\]+|\\.)*"?', re.DOTALL)
_NOT_BRACKETS = re.compile(r"[^\[\]{}]+")
_OPEN = frozenset("[{")
_AT_LINE = re.compile(r"duplicate key .* at line (\d+) column (\d+)$")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")  # \ud800-\udfff: half of a UTF-16 pair


def too_deep(limit: int = MAX_DEPTH) -> str:
    return f"the document is nested more than {limit} levels deep"


def json_depth_problem(text: str, limit: int = MAX_DEPTH) -> str | None:
    """A message when JSON ``text`` nests arrays/objects deeper than ``limit``, else None."""
    if text.count("[") + text.count("{") <= limit:
        return None  # cannot be deeper than the brackets it has
    # The brackets outside strings, in order, found by two regex passes in C: a loop over
    # every token in Python cost ten times the parse of a 1,000-sample dataset.
    brackets = _NOT_BRACKETS.sub("", _JSON_STRINGS.sub("", text))
    depth = 0
    for char in brackets:
        if char in _OPEN:
            depth += 1
            if depth > limit:
                return too_deep(limit)
        else:
            depth -= 1
    return None


def yaml_depth_problem(text: str, loader: type[Any], limit: int = MAX_DEPTH) -> str | None:
    """A message when YAML ``text`` nests collections deeper than ``limit``, else None.

    Raises ``yaml.YAMLError`` for text the parser rejects, as loading would.
    """
    import yaml  # here, so that JSON readers never load PyYAML

    opening = (yaml.MappingStartEvent, yaml.SequenceStartEvent)
    closing = (yaml.MappingEndEvent, yaml.SequenceEndEvent)
    depth = 0
    try:
        for event in yaml.parse(text, Loader=loader):
            if isinstance(event, opening):
                depth += 1
                if depth > limit:
                    return _too_deep_at(event.start_mark, limit)
            elif isinstance(event, closing):
                depth -= 1
    except yaml.MarkedYAMLError as exc:
        # libyaml stops at its own limit while scanning ahead of the events: past ours too.
        if exc.problem != _LIBYAML_TOO_DEEP:
            raise
        return _too_deep_at(exc.problem_mark, limit)
    return None


def _too_deep_at(mark: Any, limit: int) -> str:
    """:func:`too_deep`, with the line where the limit was passed when the parser knows it."""
    line = mark.line + 1 if mark is not None else None
    return too_deep(limit) + (f" (line {line})" if line else "")


class RepeatedKey(ValueError):
    """Raised by :func:`unique_members` (a ValueError, as the decoder's own errors are)."""

    def __init__(self, key: str) -> None:
        super().__init__(f"key {key!r} is given twice")
        self.key = key


def unique_members(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object's members as a dict (``object_pairs_hook``); :class:`RepeatedKey` when a key
    comes twice (escapes decoded first: ``"\\u0061"`` and ``"a"`` are the same key)."""
    members = dict(pairs)
    if len(members) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise RepeatedKey(key)
            seen.add(key)
    return members


def loads_json(
    text: str | bytes, fail: Callable[[str], Exception], *, unique_keys: bool = False
) -> Any:
    """``json.loads`` that raises only ``fail(message)``: bad syntax, depth, huge numbers, and
    with ``unique_keys`` a key given twice in one object."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise fail(f"not valid UTF-8 (byte {exc.start})") from None
    problem = json_depth_problem(text)
    if problem is not None:
        raise fail(problem)
    try:
        value = json.loads(text, object_pairs_hook=unique_members if unique_keys else None)
    except RepeatedKey as exc:
        raise fail(f"not valid JSON: {exc}{_repeat_position(text)}") from None
    except json.JSONDecodeError as exc:
        raise fail(f"not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})") from None
    except ValueError:  # an integer literal past Python's digit limit
        raise fail("not valid JSON: a number is too long to read") from None
    except RecursionError:
        raise fail(too_deep()) from None
    problem = lone_surrogate_problem(text, value)
    if problem is not None:
        raise fail(problem)
    return value


def _repeat_position(text: str) -> str:
    """Where the first repeated key of ``text`` is, `` (line L, column C)``, as jiter (the JSON
    parser pydantic-core is built on) reports it; "" if it reports no position."""
    import jiter

    try:
        jiter.from_json(text.encode("utf-8", "surrogatepass"), catch_duplicate_keys=True)
    except ValueError as exc:
        found = _AT_LINE.search(str(exc))
        if found is not None:
            return f" (line {found[1]}, column {found[2]})"
    return ""


def has_surrogate_escape(text: str, start: int = 0) -> bool:
    """Whether ``text`` (from ``start`` on) has a ``\\u`` escape in the UTF-16 surrogate range:
    the cheap test that tells a reader whether :func:`lone_surrogate_problem` is worth asking."""
    return _SURROGATE_ESCAPE.search(text, start) is not None


def lone_surrogate_problem(text: str, value: object) -> str | None:
    """What is wrong when ``value`` (parsed from ``text``) holds a string with a lone UTF-16
    surrogate escape (``"\\ud800"``): no valid text has one, and no report could be written
    with it. Only looked for when ``text`` has a ``\\u`` escape in the surrogate range."""
    if not has_surrogate_escape(text):
        return None
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as exc:
        code = ord(exc.object[exc.start])
        return f"not valid text: a lone surrogate escape \\u{code:04x} (an unpaired UTF-16 half)"
    return None
