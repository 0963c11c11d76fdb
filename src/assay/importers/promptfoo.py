"""promptfoo test cases as an assay dataset: ``tests`` (inline in a promptfooconfig, a YAML /
JSON / JSONL list, or a CSV with ``__expected`` columns) with the assertions assay can score.

Each test becomes a sample: its ``vars`` are the input, its ``description`` names it. An
assertion whose type has an assay metric becomes a metric entry scoped by a tag the sample
carries (``pf-contains``...), with promptfoo's ``threshold`` as the pass threshold; its value
becomes the sample's ``expected_output``. A sample has one expected output, so a second
assertion with another value, and every type without an assay metric (``javascript``,
``is-json``, ``not-*``, ``cost``...), is listed as not mapped.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from assay.data.documents import read_text
from assay.errors import ForeignFileError
from assay.importers.common import (
    Imported,
    notes,
    parse_model,
    read_foreign,
    require_list,
    unique_id,
    unknown_keys,
)

# promptfoo assertion type -> (assay metric, options, takes a value as expected_output)
ASSERTIONS: dict[str, tuple[str, tuple[tuple[str, Any], ...], bool]] = {
    "equals": ("exact-match", (), True),
    "contains": ("contains", (), True),
    "icontains": ("contains", (("case_sensitive", False),), True),
    "regex": ("regex", (), True),
    "starts-with": ("regex", (), True),
    "similar": ("cosine-embedding", (), True),
    "llm-rubric": ("llm-as-judge", (), True),
    "factuality": ("llm-as-judge", (), True),
    "context-recall": ("context-recall", (), True),
    "answer-relevance": ("answer-relevancy", (), False),
    "context-faithfulness": ("faithfulness", (), False),
}
SIMILAR_THRESHOLD = 0.75
"""promptfoo's default ``similar`` threshold, written out so the pass rule stays the same."""
_CONFIG_KEYS = ("prompts", "providers", "defaultTest", "description", "tests")


class Assertion(BaseModel):
    """One promptfoo assertion."""

    model_config = ConfigDict(extra="allow")

    type: str
    value: Any = None
    threshold: float | None = None


class TestCase(BaseModel):
    """One promptfoo test case."""

    model_config = ConfigDict(extra="allow")

    description: str | None = None
    vars: dict[str, Any] = Field(default_factory=dict)
    assert_: list[Any] = Field(default_factory=list, alias="assert")
    metadata: dict[str, Any] = Field(default_factory=dict)


@dataclass
class _Metrics:
    """The metric entries the assertions need, each with the tag that scopes it."""

    entries: dict[tuple[str, tuple[tuple[str, Any], ...], float | None], dict[str, Any]] = field(
        default_factory=dict
    )
    names: set[str] = field(default_factory=set)

    def tag_for(
        self, metric: str, options: tuple[tuple[str, Any], ...], threshold: float | None
    ) -> str:
        """The tag of the entry for this metric, options and threshold (added when new)."""
        key = (metric, options, threshold)
        if key not in self.entries:
            alias = unique_id(metric, self.names)
            entry: dict[str, Any] = {"name": metric, **dict(options)}
            if alias != metric:
                entry["as"] = alias
            if threshold is not None:
                entry["threshold"] = threshold
            entry["tags"] = [f"pf-{alias}"]
            self.entries[key] = entry
        return str(self.entries[key]["tags"][0])


def import_tests(path: Path) -> Imported:
    """The promptfoo tests at ``path`` as an ``assay.dataset.v1`` document."""
    source = str(path)
    tests, config, unmapped = _load_tests(path)
    default = config.get("defaultTest") or {}
    metrics = _Metrics()
    samples: list[dict[str, Any]] = []
    seen: set[str] = set()
    for index, raw in enumerate(tests):
        test = parse_model(TestCase, _merged(default, raw), source, index)
        sid = unique_id(_slug(test.description) or f"test-{index + 1}", seen)
        sample, notes_ = _sample(test, sid, metrics, source)
        samples.append(sample)
        unmapped += notes_
    document: dict[str, Any] = {"schema_version": "assay.dataset.v1", "name": path.stem}
    if isinstance(config.get("description"), str) and config["description"]:
        document["description"] = config["description"]
    if metrics.entries:
        document["metrics"] = list(metrics.entries.values())
    document["samples"] = samples
    return Imported("dataset", document, notes(unmapped))


def _load_tests(path: Path) -> tuple[list[Any], dict[str, Any], list[str]]:
    """The raw test list, the config around it (``{}`` for a bare list), and notes on the
    config's keys that have no place in a dataset."""
    source = str(path)
    data: Any = _read_csv(path) if path.suffix.lower() == ".csv" else read_foreign(path)
    unmapped: list[str] = []
    config: dict[str, Any] = {}
    if isinstance(data, dict) and "tests" in data:
        unmapped += [
            f"config: field '{key}' is not mapped (assay runs your system, not prompts)"
            for key in ("prompts", "providers")
            if key in data
        ]
        unmapped += [f"config: field '{k}' is not mapped" for k in data if k not in _CONFIG_KEYS]
        if not isinstance(data.get("defaultTest") or {}, dict):
            raise ForeignFileError(
                "defaultTest must be a mapping", file=source, field="defaultTest"
            )
        config = data
        data = _resolve_tests(data["tests"], path)
    return require_list(data, source, "promptfoo test cases"), config, unmapped


def _resolve_tests(tests: object, config: Path) -> Any:
    """``tests`` with its ``file://`` references (relative to the config) read in place."""
    entries = [tests] if isinstance(tests, str) else tests
    if not isinstance(entries, list):
        return tests
    found: list[Any] = []
    for entry in entries:
        if not isinstance(entry, str):
            found.append(entry)
            continue
        if not entry.startswith("file://"):
            raise ForeignFileError(
                f"tests from {entry!r} cannot be imported (only file:// references)",
                file=str(config),
                field="tests",
            )
        target = config.parent / entry.removeprefix("file://")
        loaded = _read_csv(target) if target.suffix.lower() == ".csv" else read_foreign(target)
        found.extend(require_list(loaded, str(target), "promptfoo test cases"))
    return found


def _read_csv(path: Path) -> list[dict[str, Any]]:
    """A promptfoo CSV: columns are vars; ``__expected*`` assertions, ``__description``."""
    text = read_text(path, ForeignFileError)
    try:
        rows = list(csv.DictReader(io.StringIO(text)))
    except csv.Error as exc:
        raise ForeignFileError(f"not a readable CSV: {exc}", file=str(path)) from None
    return [_csv_test(row, path, number) for number, row in enumerate(rows, start=2)]


def _csv_test(row: dict[str | None, Any], path: Path, line: int) -> dict[str, Any]:
    """One CSV row as a test case (``__expected: contains: x`` -> ``{type, value}``)."""
    if None in row:
        raise ForeignFileError("more cells than the header has", file=str(path), sample=line)
    test: dict[str, Any] = {"vars": {}, "assert": []}
    for column, cell in row.items():
        name = str(column)
        if name.startswith("__expected"):
            if cell:
                kind, _, rest = str(cell).partition(":")
                known = kind.strip() in ASSERTIONS and rest
                test["assert"].append(
                    {"type": kind.strip(), "value": rest.strip()}
                    if known
                    else {"type": "equals", "value": cell}
                )
        elif name == "__description":
            test["description"] = cell
        elif not name.startswith("__"):
            test["vars"][name] = cell
    return test


def _merged(default: dict[str, Any], raw: object) -> Any:
    """A test with ``defaultTest``'s vars under its own and its assertions before its own."""
    if not default or not isinstance(raw, dict):
        return raw
    merged = dict(raw)
    merged["vars"] = {**(default.get("vars") or {}), **(raw.get("vars") or {})}
    merged["assert"] = [*(default.get("assert") or []), *(raw.get("assert") or [])]
    return merged


def _slug(description: str | None) -> str:
    """A description shortened into an id (lower case, dashes, at most 60 characters)."""
    return re.sub(r"[^a-z0-9]+", "-", (description or "").lower()).strip("-")[:60]


def _sample(
    test: TestCase, sid: str, metrics: _Metrics, source: str
) -> tuple[dict[str, Any], list[str]]:
    """One test as a sample: vars as input, mapped assertions as tags, the rest noted."""
    where = f"test '{sid}'"
    unmapped = unknown_keys(test, where)
    expected: Any = None
    tags: list[str] = []
    for position, raw in enumerate(test.assert_):
        assertion = parse_model(Assertion, raw, source, sid)
        mapped = _assertion(assertion, f"{where} assert[{position}]", expected)
        if isinstance(mapped, str):
            unmapped.append(mapped)
            continue
        metric, options, value = mapped
        expected = value if value is not None else expected
        threshold = assertion.threshold
        if assertion.type == "similar" and threshold is None:
            threshold = SIMILAR_THRESHOLD
        tags.append(metrics.tag_for(metric, options, threshold))
        unmapped += unknown_keys(assertion, f"{where} assert[{position}]")
    metadata = dict(test.metadata)
    if test.description:
        metadata["description"] = test.description
    if tags:
        metadata["tags"] = list(dict.fromkeys(tags))
    sample = {"id": sid, "input": test.vars, "expected_output": expected, "metadata": metadata}
    return sample, unmapped


def _assertion(
    assertion: Assertion, where: str, expected: object
) -> tuple[str, tuple[tuple[str, Any], ...], Any] | str:
    """``(metric, options, expected value)`` for an assertion assay can score, else a note."""
    kind = assertion.type
    if kind not in ASSERTIONS:
        return f"{where}: assertion type '{kind}' has no assay metric and is not mapped"
    metric, options, takes_value = ASSERTIONS[kind]
    if not takes_value:
        return metric, options, None
    value = assertion.value
    if not isinstance(value, str) or not value or value.startswith("file://"):
        return f"{where}: '{kind}' needs a literal string value to be mapped"
    if kind == "regex":
        value = f"/{value}/"
    elif kind == "starts-with":
        value = f"/^{re.escape(value)}/"
    if expected is not None and value != expected:
        return f"{where}: '{kind}' has a second expected value (a sample holds one); not mapped"
    return metric, options, value
