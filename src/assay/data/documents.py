"""Input documents: UTF-8 text under a size cap, YAML or JSON, and JSONL line by line.

Datasets, saved outputs, calibration labels and Tez sessions are all read through these, so
every file gets the same guards: a byte cap, strict UTF-8 with the line of a bad byte, nesting
depth checked before either parser recurses (:mod:`assay.data.bounded`), YAML alias expansion
bounded by the document's size, a key given twice in one object refused (YAML, JSON and JSONL
alike), and ``id`` values and numeric keys kept exactly as written.
Errors are raised as the caller's :class:`~assay.errors.InputError` subclass, naming the file.
"""

from __future__ import annotations

import json
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

import jiter
import pydantic_core

from assay.data.bounded import (
    MAX_DEPTH,
    RepeatedKey,
    json_depth_problem,
    loads_json,
    lone_surrogate_problem,
    unique_members,
    yaml_depth_problem,
)
from assay.data.jsonl_lines import JSONL_BREAK
from assay.errors import DatasetError, InputError

if TYPE_CHECKING:
    import yaml

MAX_DATASET_BYTES = 512 * 1024 * 1024
_from_json = pydantic_core.from_json  # one lookup, not two, per JSONL line
# pydantic-core's parser (jiter) on its own: the same values, and it can refuse a repeated key
_checked_json = jiter.from_json


def _verbatim_id_loader() -> type[yaml.SafeLoader]:
    """Safe YAML loader that keeps ``id:`` scalars exactly as written (``007`` stays ``"007"``):
    libyaml's C loader when PyYAML was built with it. Made per YAML document, so that reading
    JSON or JSONL (a run's usual inputs) never loads PyYAML."""
    import yaml

    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    members = {"construct_object": _construct_checked}
    loader: type[yaml.SafeLoader] = type("_VerbatimIdLoader", (base,), members)
    loader.add_constructor("tag:yaml.org,2002:map", _construct_mapping)
    return loader


def _construct_checked(loader: yaml.SafeLoader, node: yaml.Node, deep: bool = False) -> Any:
    """The safe constructor's value for ``node``; a tagged value it cannot build (``!!timestamp
    hello``, ``!!bool maybe``, ``!!int abc``) is a YAML error naming the tag, line and column.

    PyYAML's own constructors raise AttributeError, KeyError or ValueError for these.
    """
    import yaml

    try:
        return yaml.SafeLoader.construct_object(loader, node, deep)
    except (ValueError, KeyError, AttributeError, TypeError, OverflowError) as exc:
        tag = str(node.tag).replace("tag:yaml.org,2002:", "!!")
        if isinstance(exc, ValueError) and "digits" in str(exc):  # past Python's digit limit
            problem = "a number is too long to read"
        else:
            shown = node.value if isinstance(node, yaml.ScalarNode) else type(node).__name__
            problem = f"{str(shown)[:40]!r} is not a valid {tag[:40]} value"
        raise yaml.constructor.ConstructorError(None, None, problem, node.start_mark) from None


_NUMERIC_TAGS = ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float")
_MERGE_TAG = "tag:yaml.org,2002:merge"


def _construct_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode, deep: bool = False) -> Any:
    import yaml

    _refuse_repeated_keys(node)
    loader.flatten_mapping(node)
    result: dict[Any, Any] = {}
    for key_node, value_node in node.value:
        if isinstance(key_node, yaml.ScalarNode) and key_node.tag in _NUMERIC_TAGS:
            # Numeric-looking keys stay as written, as in JSON: the saved-outputs mapping
            # ``outputs: {007: ...}`` must answer sample "007", not 7 (or octal 0042 -> 34).
            key: Any = key_node.value
        else:
            key = loader.construct_object(key_node, deep=True)
        if (
            key == "id"
            and isinstance(value_node, yaml.ScalarNode)
            and value_node.tag in _NUMERIC_TAGS
        ):
            value: Any = value_node.value
        else:
            value = loader.construct_object(value_node, deep=True)
        try:
            result[key] = value
        except TypeError as exc:
            raise yaml.constructor.ConstructorError(
                None, None, f"unhashable mapping key {key!r}", key_node.start_mark
            ) from exc
    return result


def _refuse_repeated_keys(node: yaml.MappingNode) -> None:
    """A key written twice in one mapping (``id: s1`` ... ``id: s2``) is an error, not "the
    last one wins": YAML says keys are unique, and a silently dropped value is a wrong golden
    sample. Keys a ``<<`` merge brings in may be overridden, as YAML allows."""
    import yaml

    seen: set[tuple[str, str]] = set()
    for key_node, _ in node.value:
        if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == _MERGE_TAG:
            continue
        key = (key_node.tag, key_node.value)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"key {key_node.value!r} is given twice", key_node.start_mark
            )
        seen.add(key)


def read_capped(path: Path, error: type[InputError] = DatasetError) -> bytes:
    """A file's bytes, at most MAX_DATASET_BYTES of them, with errors that name it.

    A pipe or a device such as ``/dev/zero`` reports no size, so the read itself stops one
    byte past the cap rather than growing without end.
    """
    try:
        status = path.stat()
    except OSError as exc:
        raise error(f"cannot read file ({exc.strerror or exc})", file=str(path)) from None
    if status.st_size > MAX_DATASET_BYTES:
        raise error(
            f"file is {status.st_size} bytes; the limit is {MAX_DATASET_BYTES}", file=str(path)
        )
    try:
        with path.open("rb") as handle:
            # One read for a regular file (its size is known); a pipe or device a block at a
            # time, as read(cap + 1) would reserve the whole cap's memory for every read.
            regular = stat.S_ISREG(status.st_mode)
            data = handle.read() if regular else _read_upto(handle, MAX_DATASET_BYTES + 1)
    except OSError as exc:
        raise error(f"cannot read file ({exc.strerror or exc})", file=str(path)) from None
    if len(data) > MAX_DATASET_BYTES:
        raise error(f"file is over the limit of {MAX_DATASET_BYTES} bytes", file=str(path))
    return data


def _read_upto(handle: BinaryIO, limit: int) -> bytes:
    """At most ``limit`` bytes from ``handle``, read a megabyte at a time."""
    parts: list[bytes] = []
    left = limit
    while left > 0 and (chunk := handle.read(min(1 << 20, left))):
        parts.append(chunk)
        left -= len(chunk)
    return b"".join(parts)


def read_text(path: Path, error: type[InputError] = DatasetError) -> str:
    """Read a UTF-8 file with errors that name it (missing, too large, not UTF-8)."""
    data = read_capped(path, error)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise error(f"not valid UTF-8 (byte {exc.start}, line {line})", file=str(path)) from None


def parse_document(text: str, path: Path, error: type[InputError] = DatasetError) -> Any:
    """Parse YAML or JSON by extension; unknown extensions try JSON, then YAML.

    Depth is checked before the recursive parts of either parser run (:mod:`assay.data.bounded`).
    """
    suffix = path.suffix.lower()
    if suffix == ".json":
        return _parse_json(text, path, error)
    if suffix in (".yml", ".yaml"):
        return _parse_yaml(text, path, error)
    try:
        return _parse_json(text, path, error)
    except error:
        return _parse_yaml(text, path, error)


def _parse_json(text: str, path: Path, error: type[InputError]) -> Any:
    return loads_json(text, lambda message: error(message, file=str(path)), unique_keys=True)


def _check_expansion(data: object, text: str, path: Path, error: type[InputError]) -> None:
    """Refuse YAML whose aliases expand it far beyond its size (a 'billion laughs' document).

    Aliases share objects, so loading is cheap, but every later walk (validation, hashing,
    reports) would expand them. Counting values with a budget proportional to the text bounds
    this check itself.
    """
    budget = len(text) + 1_000_000
    stack = [data]
    while stack:
        item = stack.pop()
        budget -= 1
        if budget < 0:
            raise error(
                "the document expands to far more values than its size (YAML aliases nested too "
                "deeply?)",
                file=str(path),
            )
        if isinstance(item, dict):
            stack.extend(item.values())
            stack.extend(item.keys())
        elif isinstance(item, list):
            stack.extend(item)


def _parse_yaml(text: str, path: Path, error: type[InputError]) -> Any:
    import yaml

    loader = _verbatim_id_loader()
    try:
        problem = yaml_depth_problem(text, loader)
        if problem is not None:
            raise error(problem, file=str(path))
        data = yaml.load(text, Loader=loader)  # safe loader subclass
        if "&" in text and "*" in text:  # only anchors can create aliases
            _check_expansion(data, text, path, error)
        return data
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise error(f"not valid YAML: {problem}{where}", file=str(path)) from None
    except RecursionError:
        raise error("YAML is nested too deeply", file=str(path)) from None
    except (ValueError, OverflowError):  # an integer past Python's digit limit
        raise error("not valid YAML: a number is too long to read", file=str(path)) from None


def iter_jsonl(text: str, path: Path, error: type[InputError]) -> Iterator[tuple[int, Any]]:
    """Yield ``(line_number, value)`` for each non-blank JSONL line.

    Lines end at ``\n``, ``\r\n`` or a lone ``\r`` only. U+2028, U+2029 and U+0085 may stand
    unescaped inside a JSON string (``json.dumps(..., ensure_ascii=False)`` writes them so), so
    they are text, never a line break (``str.splitlines`` would cut such a line in two).
    """
    # without a carriage return every break is "\n": str.split is ~9x faster than the pattern
    lines = text.split("\n") if "\r" not in text else JSONL_BREAK.split(text)
    parse = LineParser(path, error)
    for number, line in enumerate(lines, start=1):
        if line.strip():
            yield number, parse(line, number)


def parse_jsonl_lines(lines: list[str]) -> list[Any] | None:
    """The values of JSONL lines already checked one by one, parsed in one call (about twice
    as fast as a call per line); None when that cannot be trusted to give what
    :func:`parse_jsonl_line` gives for each (a line that could nest deeply, a parse error, a
    value count that is not one per line): parse them one by one then."""
    for line in lines:
        if line.count("[") + line.count("{") > MAX_DEPTH:
            return None
    try:
        # Only keys are worth caching here: answers and inputs rarely repeat.
        values = _from_json("[" + ",".join(lines) + "]", cache_strings="keys")
    except ValueError:
        return None
    return values if type(values) is list and len(values) == len(lines) else None


def parse_jsonl_line(line: str, number: int, path: Path, error: type[InputError]) -> Any:
    """The value of one JSONL line, or ``error`` naming the file and line (bad JSON, too deep,
    a key given twice in one object)."""
    if line.count("[") + line.count("{") > MAX_DEPTH:  # else it cannot nest that deep
        problem = json_depth_problem(line)
        if problem is not None:
            raise error(f"line {number}: {problem}", file=str(path))
    try:
        # ~3x faster than json.loads per line; the same values as pydantic-core's from_json
        return _checked_json(line.encode("utf-8", "surrogatepass"), catch_duplicate_keys=True)
    except ValueError:
        raise error(f"line {number}{_line_problem(line)}", file=str(path)) from None


class LineParser:
    """:func:`parse_jsonl_line` over one file's lines, faster where a line proves it cannot
    hold a repeated key (:func:`_shallow_line`).

    The proof is tried on long lines that hold a list, until a line defeats it: a file whose
    lines carry colons in their text or objects in their lists then pays one extra parse, not
    one per line. Every value and every error is what :func:`parse_jsonl_line` gives.
    """

    def __init__(self, path: Path, error: type[InputError]) -> None:
        self.path, self.error = path, error
        self._trying = True

    def __call__(self, line: str, number: int) -> Any:
        """The value of line ``number`` (see :func:`parse_jsonl_line`)."""
        if self._trying and len(line) >= _SHALLOW_FROM and "[" in line:
            value = _shallow_line(line)
            if value is not _UNPROVEN:
                return value
            self._trying = False
        return parse_jsonl_line(line, number, self.path, self.error)


_UNPROVEN = object()
"""What :func:`_shallow_line` answers for a line it cannot vouch for."""
_SCALARS = frozenset({str, int, float, bool, type(None)})
_SCALARS_OR_LIST = _SCALARS | {list}
_SHALLOW_FROM = 256
"""The shortest line :class:`LineParser` tries to prove. The repeated-key check costs most
where a list's strings repeat across lines (jiter then keeps fewer of them in its string
cache): 30 ms of the 80 ms a 10,000-line file of 100-id rankings took to parse; on short
lines it costs less than the proof."""


def _shallow_line(line: str) -> Any:
    """The value of a JSONL line, parsed without the repeated-key check, when the line proves
    it needs none; else ``_UNPROVEN``, and the caller parses it with every check.

    The proof counts two characters. Every ``:`` outside a string ends a member's key, so when
    the line has exactly as many colons as the value's members (:func:`_shape`), no colon stood
    in a string and no member was dropped as a repeat (each repeat drops a member and keeps its
    colon). Every ``[`` outside a string opens a list, so when there are as many as the value
    has lists, no list holds another: the value is four levels deep at most, far inside
    ``MAX_DEPTH``.
    """
    colons = line.count(":")
    try:
        value = _checked_json(line.encode("utf-8", "surrogatepass"))
    except ValueError:
        return _UNPROVEN
    shape = _shape(value)
    return value if shape == (colons, line.count("[")) else _UNPROVEN


def _shape(value: Any) -> tuple[int, int] | None:
    """``(members, lists)`` of an object whose values are scalars, lists, or objects of scalars
    and lists, counting the inner objects' members (the lists' items are not looked at:
    :func:`_shallow_line` proves them from its counts); None for any other value."""
    if type(value) is not dict:
        return None
    members, lists = len(value), 0
    for item in value.values():
        kind = type(item)
        if kind is list:
            lists += 1
        elif kind is dict:
            members += len(item)
            kinds = set(map(type, item.values()))
            if not kinds <= _SCALARS:
                if not kinds <= _SCALARS_OR_LIST:
                    return None
                lists += sum(type(inner) is list for inner in item.values())
        elif kind not in _SCALARS:
            return None
    return members, lists


def _line_problem(line: str) -> str:
    """What is wrong with a JSONL line the fast parser refused, worded from the stdlib's
    reading (its messages name the column)."""
    try:
        value = json.loads(line, object_pairs_hook=unique_members)
    except RepeatedKey as exc:
        return f": {exc}"
    except json.JSONDecodeError as exc:
        return f" is not valid JSON: {exc.msg} (column {exc.colno})"
    except (ValueError, RecursionError):
        return " is not valid JSON: a number is too long to read, or the line is nested too deeply"
    # what the stdlib reads and jiter does not: a lone "\ud800" escape
    problem = lone_surrogate_problem(line, value)
    return f": {problem}" if problem is not None else " is not valid JSON: not valid JSON"
