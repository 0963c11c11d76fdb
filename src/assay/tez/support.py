"""Lexical support: does a piece of context back a claim? (the ``automated_heuristic`` core)

A claim is supported by a text when (1) every number in the claim occurs in the text, up to the
claim's own rounding (``$3.4M`` matches ``$3,412,000``; ``$25M`` matches ``$25,000,000``),
(2) every named entity or code of the claim (capitalised words past the first, acronyms,
letter-digit codes) occurs in the item the text belongs to, and (3) at least ``tau`` of the
claim's content words occur in the text. This is rule-based evidence matching, accuracy
"Low-Medium" in the Addendum's own words; it cannot see negation or attribution.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import lru_cache

DEFAULT_TAU = 0.5

_NUMBER = re.compile(
    r"(?<![\w.\-])(-?)([$\u20ac\u00a3]?)(\d{1,3}(?:,\d{3})+(?!\d)|\d+)(\.\d+)?"
    r"(?:(\s?(?:million|billion|thousand|trillion|bn|mn|[MBKT])(?![A-Za-z]))|(\s?%|\s?percent\b))?"
    r"(?![A-Za-z0-9])"
)
_SCALE = {
    "thousand": 1e3, "k": 1e3, "million": 1e6, "mn": 1e6, "m": 1e6,
    "billion": 1e9, "bn": 1e9, "b": 1e9, "trillion": 1e12, "t": 1e12,
}  # fmt: skip
_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9&'\-]*")
_CODE = re.compile(
    r"(?<![\w.$\u20ac\u00a3,\-])(?=[A-Za-z0-9\-]*[A-Za-z])(?=[A-Za-z0-9\-]*\d)[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*\b"
)
_AMOUNT = re.compile(r"^\d+(?:\.\d+)?(?:[kmbt]|bn|mn)$", re.I)
_COUNTED = re.compile(r"^\d+-[a-z]+$")  # 5-person, 3-month: a number and a word, not a code
STOPWORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "and",
        "or",
        "but",
        "if",
        "then",
        "than",
        "that",
        "this",
        "these",
        "those",
        "there",
        "their",
        "them",
        "they",
        "it",
        "its",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "has",
        "have",
        "had",
        "do",
        "does",
        "did",
        "of",
        "in",
        "on",
        "at",
        "to",
        "for",
        "from",
        "by",
        "with",
        "as",
        "into",
        "onto",
        "about",
        "over",
        "under",
        "between",
        "through",
        "during",
        "per",
        "via",
        "which",
        "who",
        "whom",
        "whose",
        "what",
        "when",
        "where",
        "why",
        "how",
        "all",
        "any",
        "both",
        "each",
        "few",
        "more",
        "most",
        "other",
        "some",
        "such",
        "no",
        "nor",
        "not",
        "only",
        "own",
        "same",
        "so",
        "too",
        "very",
        "can",
        "will",
        "just",
        "should",
        "would",
        "could",
        "may",
        "might",
        "must",
        "also",
        "our",
        "we",
        "you",
        "your",
        "he",
        "she",
        "his",
        "her",
        "i",
        "me",
        "my",
        "us",
        "context",
        "bundle",
        "bundled",
        "provided",
        "available",
        "according",
        "based",
        "item",
        "items",
        "document",
        "documents",
        "source",
        "sources",
        "cited",
        "cite",
        "citation",
        "states",
        "stated",
        "state",
        "says",
        "said",
        "notes",
        "noted",
        "mentions",
        "mentioned",
        "indicates",
        "indicated",
        "shows",
        "shown",
        "reports",
        "reported",
        "describes",
        "described",
        "lists",
        "listed",
        "suggests",
        "suggested",
        "while",
        "whereas",
        "however",
        "although",
        "though",
        "because",
        "since",
        "therefore",
        "thus",
        "approximately",
        "around",
        "roughly",
        "about",
        "nearly",
        "including",
        "include",
        "includes",
        "included",
    ]
)


@dataclass(frozen=True, slots=True)
class Number:
    value: float
    tolerance: float
    text: str


@dataclass(frozen=True, slots=True)
class Verdict:
    supported: bool
    reason: str


def numbers(text: str) -> tuple[Number, ...]:
    """Numbers with their scale applied and the tolerance implied by their rounding."""
    out = []
    for m in _NUMBER.finditer(text):
        sign, digits, decimals = m.group(1), m.group(3), m.group(4) or ""
        scale_word = (m.group(5) or "").strip()
        scale = _SCALE.get(scale_word.lower(), 1.0) if scale_word else 1.0
        value = float(sign + digits.replace(",", "") + decimals) * scale
        places = len(decimals) - 1 if decimals else 0
        out.append(Number(value, 0.5 * 10.0 ** (-places) * scale, m.group(0).strip()))
    return tuple(out)


def stem(word: str) -> str:
    """A deliberately small stemmer: possessives, plurals, -ing/-ed, final e."""
    w = word.lower().strip("'-")
    if w.endswith("'s"):
        w = w[:-2]
    if w.endswith("ies") and len(w) > 4:
        w = w[:-3] + "y"
    elif w.endswith("s") and not w.endswith("ss") and len(w) > 3:
        w = w[:-1]
    if w.endswith("ing") and len(w) > 5:
        w = w[:-3]
    elif w.endswith("ed") and len(w) > 4:
        w = w[:-2]
    if w.endswith("e") and len(w) > 4:
        w = w[:-1]
    return w


def content_words(text: str) -> set[str]:
    """Stemmed words that carry meaning (no stopwords, no bare numbers)."""
    out = set()
    for token in _TOKEN.findall(text):
        low = token.lower()
        if (
            low in STOPWORDS
            or low.isdigit()
            or (len(low) < 3 and not any(c.isdigit() for c in low))
        ):
            continue
        out.add(stem(low))
    return out


def entities(text: str) -> set[str]:
    """Names and codes a supporting text must also contain (lowercased, stemmed)."""
    tokens = _TOKEN.findall(text)
    found = {stem(t) for t in tokens[1:] if t[:1].isupper() and t.lower() not in STOPWORDS}
    found |= {stem(t) for t in tokens if len(t) > 1 and t.isupper()}
    found |= {c.lower() for c in _codes(text)}
    return {e for e in found if len(e) > 1 and not _AMOUNT.match(e) and not _COUNTED.match(e)}


def _codes(text: str) -> list[str]:
    """Letter-digit codes (``Q3``, ``TAMARIND-4``, ``A100``), not amounts like ``25M``."""
    return [c for c in _CODE.findall(text) if not _AMOUNT.match(c) and not _COUNTED.match(c)]


@dataclass(frozen=True, slots=True)
class TextIndex:
    """Pre-computed facts of a context text (cached per text)."""

    numbers: tuple[Number, ...]
    words: frozenset[str]
    lowered: str


@lru_cache(maxsize=1024)
def index(text: str) -> TextIndex:
    words = content_words(text) | {c.lower() for c in _codes(text)}
    return TextIndex(numbers(text), frozenset(words), " ".join(text.lower().split()))


def _number_found(number: Number, pool: tuple[Number, ...]) -> bool:
    return any(math.isclose(number.value, p.value, abs_tol=number.tolerance + 1e-9) for p in pool)


def _entity_found(entity: str, idx: TextIndex) -> bool:
    return entity in idx.words or entity in idx.lowered


def supports(
    claim: str, span: str, item_text: str | None = None, *, tau: float = DEFAULT_TAU
) -> Verdict:
    """Whether ``span`` (inside ``item_text``) backs ``claim``; the reason names what failed."""
    span_idx = index(span)
    item_idx = index(item_text) if item_text is not None else span_idx
    missing_numbers = [n.text for n in numbers(claim) if not _number_found(n, span_idx.numbers)]
    if missing_numbers:
        return Verdict(False, f"number {missing_numbers[0]} not found at the cited location")
    missing_entities = sorted(e for e in entities(claim) if not _entity_found(e, item_idx))
    if missing_entities:
        return Verdict(False, f"name '{missing_entities[0]}' not found in the cited item")
    words = content_words(claim)
    if not words:
        return Verdict(True, "no content words to check")
    covered = sum(1 for w in words if w in span_idx.words) / len(words)
    if covered + 1e-12 < tau:
        return Verdict(
            False, f"only {covered:.0%} of the claim's words occur at the cited location"
        )
    return Verdict(True, f"{covered:.0%} of the claim's words and all its numbers and names found")


def contributes(claim: str, span: str) -> bool:
    """Whether ``span`` holds part of the claim: one of its numbers, else one of its words."""
    idx = index(span)
    claim_numbers = numbers(claim)
    if claim_numbers:
        return any(_number_found(n, idx.numbers) for n in claim_numbers)
    return bool(content_words(claim) & idx.words)
