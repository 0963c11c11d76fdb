"""The mandatory redactor: personal data, secrets, canaries and the user's own patterns are
replaced by ``[REDACTED:kind]`` in every text of a span before anything is stored.

Personal data is found by the pii-leak metric's own detector (:func:`~assay.metrics.safety.
pii_spans`: card numbers by Luhn, IBANs by their checksum, SSNs, e-mail addresses, phone numbers);
canaries by the canary-leak metric's matching (case, spacing and punctuation folded, reversed,
base64 and hex forms); secrets by the key shapes below. User patterns run on RE2 (linear time).
Redaction cannot be turned off: a collector or ingest without it does not exist.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Final

from assay.errors import UsageError
from assay.metrics.safety import canary_leaks, pii_spans
from assay.production.mapping import SpanPart, ToolCall

SECRET_SHAPES: Final[dict[str, str]] = {
    # Each names a credential format by its documented prefix and alphabet.
    "private-key": (
        r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)"
    ),
    "jwt": r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
    "openai-key": r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}",
    "anthropic-key": r"\bsk-ant-[A-Za-z0-9_-]{20,}",
    "aws-access-key": r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",
    "github-token": r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{40,})",
    "slack-token": r"\bxox[abposr]-[A-Za-z0-9-]{10,}",
    "google-api-key": r"\bAIza[0-9A-Za-z_-]{35}",
    "stripe-key": r"\b(?:sk|rk|pk)_(?:live|test)_[0-9A-Za-z]{16,}",
    "bearer-token": r"(?i:\bbearer\s+[A-Za-z0-9._~+/-]{20,}=*)",
    "assigned-secret": (
        r"(?i:\b(?:api[_-]?key|secret|token|password|passwd)\b\s*[:=]\s*['\"]?[^\s'\",;]{8,})"
    ),
}
_SECRETS: Final = tuple((kind, re.compile(shape)) for kind, shape in SECRET_SHAPES.items())
# Every shape in one alternation: a text with no secret (nearly all) costs one scan, not eleven.
_ANY_SECRET: Final = re.compile("|".join(f"(?:{shape})" for shape in SECRET_SHAPES.values()))
MAX_TEXT: Final = 1_000_000
"""A text longer than this is replaced whole (``[REDACTED:oversize]``): no scan of 10 MB."""


def _marker(kind: str) -> str:
    return f"[REDACTED:{kind}]"


def _canary_pattern(canary: str) -> re.Pattern[str]:
    """The canary's letters and digits in order, any punctuation or spacing between them."""
    letters = [re.escape(c) for c in canary if c.isalnum()]
    return re.compile(r"[\W_]*".join(letters), re.IGNORECASE)


def _user_pattern(pattern: str) -> Any:
    import re2  # RE2: a user's pattern runs in linear time (DESIGN: user-supplied regex)

    options = re2.Options()
    options.log_errors = False
    try:
        return re2.compile(pattern, options=options)
    except re2.error as exc:
        message = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else exc
        raise UsageError(f"redaction pattern {pattern!r} is not valid RE2: {message}") from None


@dataclass(frozen=True)
class Redactor:
    """Every built-in detector, plus ``canaries`` and the user's ``patterns`` (RE2)."""

    canaries: Sequence[str] = ()
    patterns: Sequence[str] = ()
    _compiled: tuple[Any, ...] = field(init=False, repr=False, compare=False)
    _canaries: tuple[tuple[str, re.Pattern[str]], ...] = field(
        init=False, repr=False, compare=False
    )
    _memo: Callable[[str], tuple[str, dict[str, int]]] = field(
        init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        short = [c for c in self.canaries if sum(ch.isalnum() for ch in c) < 8]
        if short:
            raise UsageError(f"canary {short[0]!r} is too short: 8 letters or digits at least")
        object.__setattr__(self, "_compiled", tuple(_user_pattern(p) for p in self.patterns))
        canaries = tuple((c, _canary_pattern(c)) for c in self.canaries)
        object.__setattr__(self, "_canaries", canaries)
        # A memo of the pure function below: retrieved documents, system prompts and tool
        # names repeat across spans, and each costs ~20 regex scans.
        object.__setattr__(self, "_memo", lru_cache(maxsize=4096)(self._scan))

    def text(self, value: str) -> tuple[str, dict[str, int]]:
        """``value`` with every finding replaced, and how many of each kind were found."""
        if not value:
            return value, {}
        clean, counts = self._memo(value)
        return clean, dict(counts)

    def _scan(self, value: str) -> tuple[str, dict[str, int]]:
        counts: dict[str, int] = {}
        if len(value) > MAX_TEXT:
            return _marker("oversize"), {"oversize": 1}
        value = self._secrets(value, counts)
        value = self._canary(value, counts)
        value = self._user(value, counts)
        return _pii(value, counts), counts

    def _secrets(self, value: str, counts: dict[str, int]) -> str:
        if not _ANY_SECRET.search(value):
            return value
        for kind, pattern in _SECRETS:
            value, n = pattern.subn(_marker("secret"), value)
            if n:
                counts["secret"] = counts.get("secret", 0) + n
                counts[kind] = counts.get(kind, 0) + n
        return value

    def _canary(self, value: str, counts: dict[str, int]) -> str:
        for canary, pattern in self._canaries:
            value, n = pattern.subn(_marker("canary"), value)
            if canary_leaks(canary, value):  # an encoded form: the whole text goes
                value, n = _marker("canary"), n + 1
            if n:
                counts["canary"] = counts.get("canary", 0) + n
        return value

    def _user(self, value: str, counts: dict[str, int]) -> str:
        for pattern in self._compiled:
            value, n = pattern.subn(_marker("pattern"), value)
            if n:
                counts["pattern"] = counts.get("pattern", 0) + n
        return value

    def texts(self, values: Iterable[str], counts: dict[str, int]) -> list[str]:
        out = []
        for value in values:
            clean, found = self.text(value)
            _add(counts, found)
            out.append(clean)
        return out

    def part(self, part: SpanPart) -> SpanPart:
        """Redact every text of ``part`` in place and return it; ``redacted`` counts what went,
        by kind. (The part is the intake's own, fresh from ``span_part``: copying each of them
        was a tenth of an ingest's time.)"""
        counts: dict[str, int] = {}
        output_counts: dict[str, int] = {}
        if part.input:
            part.input = self.texts([part.input], counts)[0]
        if part.session:
            part.session = self.texts([part.session], counts)[0]
        if part.model:
            part.model = self.texts([part.model], counts)[0]
        if part.output:
            part.output = self.texts([part.output], output_counts)[0]
            _add(counts, output_counts)
        if part.contexts:
            part.contexts = self.texts(part.contexts, counts)
        if part.context_ids:
            part.context_ids = self.texts(part.context_ids, counts)
        if part.metadata:
            part.metadata = dict(zip(part.metadata, self.texts(part.metadata.values(), counts)))
        if part.tool is not None:
            part.tool = self._tool(part.tool, counts)
        part.redacted, part.output_redacted = counts, output_counts
        return part

    def _tool(self, tool: ToolCall, counts: dict[str, int]) -> ToolCall:
        name = self.texts([tool.name], counts)[0]
        return ToolCall(name=name, arguments=self._value(tool.arguments, counts, 0))

    def _value(self, value: object, counts: dict[str, int], depth: int) -> Any:
        """Every string inside a JSON value (keys too) redacted; deeper than 32 levels, cut."""
        if depth > 32:
            return _marker("nested")
        if isinstance(value, str):
            return self.texts([value], counts)[0]
        if isinstance(value, list):
            return [self._value(v, counts, depth + 1) for v in value]
        if isinstance(value, dict):
            return {
                self.texts([str(k)], counts)[0]: self._value(v, counts, depth + 1)
                for k, v in value.items()
            }
        return value


def _pii(value: str, counts: dict[str, int]) -> str:
    spans = pii_spans(value)
    if not spans:
        return value
    pieces, last = [], 0
    for start, end, kind in spans:
        pieces += [value[last:start], _marker(kind)]
        counts[kind] = counts.get(kind, 0) + 1
        last = end
    pieces.append(value[last:])
    return "".join(pieces)


def _add(total: dict[str, int], counts: dict[str, int]) -> None:
    for kind, n in counts.items():
        total[kind] = total.get(kind, 0) + n
