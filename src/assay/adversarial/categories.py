"""The red-team categories of the adversarial lane, their compliance labels and severities.

The ten categories, their labels, the frameworks each maps to and their default severity follow
padosoft/eval-harness (shared/reference §5.3), so reports from either tool line up. A category
is named by its kebab-case value everywhere (``--category``, ``metadata.adversarial.category``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from assay.errors import UsageError

OWASP = "OWASP LLM Top 10"
NIST = "NIST AI RMF"
EU_AI_ACT = "EU AI Act"
FRAMEWORKS = (OWASP, NIST, EU_AI_ACT)

SEVERITIES = ("low", "medium", "high", "critical")
"""Severities from mildest to worst; the order decides the "worst severity failed"."""


@dataclass(frozen=True, slots=True)
class Category:
    """One red-team category: its value, human label, frameworks and default severity."""

    value: str
    label: str
    frameworks: tuple[str, ...]
    severity: str
    summary: str


CATEGORIES: tuple[Category, ...] = (
    Category(
        "prompt-injection",
        "Prompt injection",
        (OWASP, NIST),
        "high",
        "instructions smuggled into the request or a retrieved document override the system prompt",
    ),
    Category(
        "jailbreak",
        "Jailbreak",
        (OWASP, NIST),
        "critical",
        "role-play, hypotheticals or pressure talk the model out of its safety policy",
    ),
    Category(
        "tool-abuse",
        "Tool abuse",
        (OWASP,),
        "critical",
        "the user steers the agent into calling a tool it must not call for them",
    ),
    Category(
        "pii-leak",
        "PII leak",
        (OWASP, NIST, EU_AI_ACT),
        "critical",
        "personal data of other people, or secrets from the context, end up in the answer",
    ),
    Category(
        "ssrf",
        "SSRF",
        (OWASP,),
        "critical",
        "the agent is asked to fetch internal or cloud-metadata addresses on the user's behalf",
    ),
    Category(
        "sql-shell-injection",
        "SQL/shell injection",
        (OWASP,),
        "critical",
        "user text is meant to reach a database query or a shell command unescaped",
    ),
    Category(
        "ascii-smuggling",
        "ASCII smuggling",
        (OWASP, NIST),
        "high",
        "invisible Unicode (tag block, zero-width, bidi controls) hides instructions or data",
    ),
    Category(
        "competitor-endorsement",
        "Competitor endorsement",
        (NIST,),
        "medium",
        "the assistant is baited into recommending or praising a competitor",
    ),
    Category(
        "excessive-agency",
        "Excessive agency",
        (OWASP,),
        "high",
        "the agent takes consequential actions beyond what the user asked or may authorise",
    ),
    Category(
        "hallucination-overreliance",
        "Hallucination overreliance",
        (NIST,),
        "high",
        "false premises or demands for certainty push the model to invent facts",
    ),
)

_BY_VALUE: Mapping[str, Category] = {c.value: c for c in CATEGORIES}


def supported() -> str:
    return ", ".join(c.value for c in CATEGORIES)


def category(value: str) -> Category:
    """The category named ``value``, or a :class:`UsageError` listing the supported ones."""
    found = _BY_VALUE.get(value)
    if found is None:
        raise UsageError(
            f"Unsupported adversarial category {value!r}. Supported categories: {supported()}"
        )
    return found


def select(values: Iterable[str]) -> tuple[Category, ...]:
    """Categories picked by ``--category`` (all of them when none is given).

    Unknown names and names given twice are errors, so a typo never silently narrows a lane.
    """
    picked: list[Category] = []
    for value in values:
        item = category(value)
        if item in picked:
            raise UsageError(f"adversarial category {value!r} is selected twice")
        picked.append(item)
    return tuple(picked) if picked else CATEGORIES


def severity_rank(value: str) -> int:
    return SEVERITIES.index(value)


def worst(severities: Iterable[str]) -> str | None:
    """The worst of some severities (critical > high > medium > low); None for none."""
    ranked = [s for s in severities if s in SEVERITIES]
    return max(ranked, key=severity_rank) if ranked else None


def block(item: Category, severity: str | None = None) -> dict[str, Any]:
    """The ``metadata.adversarial`` mapping of a sample in ``item``."""
    return {
        "category": item.value,
        "label": item.label,
        "severity": severity or item.severity,
        "compliance_frameworks": list(item.frameworks),
    }
