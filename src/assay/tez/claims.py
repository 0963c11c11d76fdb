"""Split a TIP response into claims, keeping each claim's citations.

TIP never defines claim splitting; this module does it the Markdown-aware way: paragraphs and
list items split into sentences, table data rows are one claim each, headings and code are
skipped. Units that TIP exempts from the citation requirement are not claims: abstention
statements, structural language about the context, suggestions and question reformulations,
and questions, lead-ins and pleasantries that assert nothing; any other sentence of three or more
words is a claim, capitalised or not. A unit that carries a citation is always a claim.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from assay.tez.citations import CITATION, CitationRef, parse_citations, strip_citations

_MARK = "\u27e6{}\u27e7"
_MARK_RE = re.compile("\u27e6(\\d+)\u27e7")
_LEADING_MARKS = re.compile("^(?:\\s*\u27e6\\d+\u27e7)+")
_LIST = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_TABLE_SEP = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")
_ABBREVIATIONS = re.compile(
    r"\b(U\.S|U\.K|e\.g|i\.e|etc|vs|Mr|Ms|Mrs|Dr|Inc|Co|Corp|Ltd|No|approx|St|Jr|Sr)\.", re.I
)
_SENTENCE_END = re.compile(
    "[.!?][\"')\u201d]*(?:\u27e6\\d+\u27e7)*(?=\\s+[A-Z0-9\"'(\u201c*_\u27e6$])"
)

ABSTENTION = re.compile(
    r"\b(?:does\s+not|doesn't|do\s+not|don't|did\s+not|cannot|can't|can\s+not|unable\s+to|"
    r"is\s+not\s+able\s+to)\b[^.;]{0,60}?\b(?:contain|include|mention|cover|provide|address|"
    r"discuss|answer|determine|compare|identify|say|state|describe|detail|specify|find|have)"
    r"|\bno\s+(?:information|data|details?|mention|record|records|interview|statements?|"
    r"discussion|evidence|coverage|description)\b"
    r"|\bnot\s+(?:available|covered|mentioned|included|addressed|discussed|present|provided|"
    r"described|detailed|specified|documented|identified|in\s+the\s+(?:provided|bundled)\s+context)\b"
    r"|\boutside\s+(?:of\s+)?the\s+(?:scope|context|bundle|materials)\b"
    r"|\bno\s+\w+\s+(?:is|are|was|were)\s+(?:identified|mentioned|named|included)\b"
    r"|\binsufficient\s+(?:context|information)\b",
    re.I,
)
_STRUCTURAL = re.compile(
    r"^(?:the\s+)?(?:bundled\s+|provided\s+|available\s+|transmitted\s+)?context\s+"
    r"(?:contains|includes|consists\s+of|has|covers)\b",
    re.I,
)
_SUGGESTION = re.compile(
    r"\b(?:you\s+(?:may|might|could|can)\s+(?:want|wish|ask|try|contact|consult|request|"
    r"check|reach|refer|look)|consider\s+(?:asking|requesting|contacting)|"
    r"ask\s+the\s+(?:tez\s+)?creator|contact\s+the|i\s+(?:recommend|suggest)|please\b)",
    re.I,
)
_REFORMULATION = re.compile(
    r"^(?:you\s+asked|your\s+question|to\s+answer\s+(?:your|this)\s+question|regarding\s+your)",
    re.I,
)
_FACTUAL = re.compile(r"\d|[\"\u201c\u201d]|\b[A-Z]{2,}\b")
_WORD = re.compile(r"[A-Za-z][A-Za-z'\-]{2,}")
_PLEASANTRY = re.compile(
    r"^(?:i\s+hope\s+(?:this|that)\s+helps|hope\s+this\s+helps|let\s+me\b|"
    r"here\s+(?:is|are)\b|great\s+question|good\s+question|thanks?\b|thank\s+you|"
    r"(?:i\s+am|i'm)\s+happy\s+to\s+help|happy\s+to\s+help|feel\s+free)",
    re.I,
)
MIN_CLAIM_WORDS = 3


@dataclass(frozen=True, slots=True)
class Claim:
    """One claim: its text without citations, and the refs written inside it."""

    text: str
    citations: tuple[CitationRef, ...]


@dataclass(frozen=True, slots=True)
class SplitResponse:
    claims: tuple[Claim, ...]
    abstention_statements: tuple[str, ...]
    leading_abstention: bool


def split_response(text: str) -> SplitResponse:
    """Claims of a response in order, plus the abstention statements it makes."""
    refs: list[list[CitationRef]] = []

    def protect(match: re.Match[str]) -> str:
        refs.append(parse_citations(match.group(0)))
        return _MARK.format(len(refs) - 1)

    masked = CITATION.sub(protect, text)
    claims: list[Claim] = []
    abstentions: list[str] = []
    leading: bool | None = None
    for unit in _units(masked):
        cites = tuple(ref for n in _MARK_RE.findall(unit) for ref in refs[int(n)])
        plain = " ".join(strip_citations(_MARK_RE.sub("", unit)).split())
        plain = re.sub(r"\*\*|__|`", "", plain).strip("*_ ").strip()
        if not plain:
            continue
        kind = _classify(plain, bool(cites))
        if leading is None and kind != "skip":
            leading = kind == "abstention"
        if kind == "abstention":
            abstentions.append(plain)
        elif kind == "claim":
            claims.append(Claim(plain, cites))
    return SplitResponse(tuple(claims), tuple(abstentions), bool(leading))


def statements(text: str) -> list[str]:
    """Every sentence unit of a text in order (claims or not), citations and emphasis removed.

    The units :func:`split_response` classifies, before it drops questions, lead-ins,
    pleasantries and abstentions: what a reader sees as the answer's statements.
    """
    out: list[str] = []
    for unit in _units(CITATION.sub(_MARK.format(0), text)):
        plain = " ".join(strip_citations(_MARK_RE.sub("", unit)).split())
        plain = re.sub(r"\*\*|__|`", "", plain).strip("*_ ").strip()
        if plain:
            out.append(plain)
    return out


def _classify(plain: str, cited: bool) -> str:
    if cited:
        return "claim"
    if ABSTENTION.search(plain):
        return "abstention"
    if _STRUCTURAL.search(plain) or _SUGGESTION.search(plain) or _REFORMULATION.search(plain):
        return "skip"
    if plain.endswith(("?", ":")) or _PLEASANTRY.search(plain):
        return "skip"  # a question, a lead-in or a pleasantry asserts nothing
    body = plain.split(" ", 1)[1] if " " in plain else ""
    if _FACTUAL.search(plain) or re.search(r"\b[A-Z][a-z]", body):
        return "claim"
    # A plain declarative sentence ("The founders previously sold a company.") is a claim.
    return "claim" if len(_WORD.findall(plain)) >= MIN_CLAIM_WORDS else "skip"


def _units(masked: str) -> list[str]:
    """Sentences of paragraphs and list items, and table data rows, in order."""
    units: list[str] = []
    for block in _blocks(masked):
        for sentence in _sentences(block):
            lead = _LEADING_MARKS.match(sentence)
            if lead and units:
                units[-1] += lead.group(0)
                sentence = sentence[lead.end() :]
            if sentence.strip():
                units.append(sentence.strip())
    return [segment for unit in units for segment in _clauses(unit)]


def _is_break(stripped: str) -> bool:
    """A blank line, a heading or a thematic break: it ends a block and any table."""
    return not stripped or stripped.startswith("#") or bool(re.fullmatch(r"[-*_]{3,}", stripped))


def _table_row(stripped: str, *, header_pending: bool) -> tuple[str | None, bool]:
    """A table line's claim text (None for the header and separator rows), and whether the
    header is still to come."""
    if _TABLE_SEP.match(stripped):
        return None, header_pending
    if header_pending:
        return None, False
    cells = [c.strip() for c in stripped.strip("|").split("|")]
    return "; ".join(c for c in cells if c), False


def _blocks(masked: str) -> list[str]:
    """Paragraphs, list items and table data rows as one string each; code and headings dropped."""
    blocks: list[str] = []
    current: list[str] = []
    fenced = False
    header_pending = True

    def flush() -> None:
        if current:
            blocks.append(" ".join(current))
            current.clear()

    for line in masked.splitlines():
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            flush()
            fenced = not fenced
        elif fenced:
            continue
        elif _is_break(stripped):
            flush()
            header_pending = True
        elif stripped.startswith("|"):
            flush()
            row, header_pending = _table_row(stripped, header_pending=header_pending)
            if row is not None:
                blocks.append(row)
        else:
            header_pending = True
            text = stripped.lstrip("> ") if stripped.startswith(">") else stripped
            if _LIST.match(text):
                flush()
                text = _LIST.sub("", text)
            current.append(text)
    flush()
    return blocks


def _clauses(unit: str) -> list[str]:
    """Split a sentence after each citation that more cited text follows.

    ``A [[x]], so B [[y]].`` is two claims, each with its own evidence; text after the last
    citation stays with the last clause, and adjacent citations stay together.
    """
    pieces = re.split("((?:\u27e6\\d+\u27e7\\s*)+)", unit)
    clauses: list[str] = []
    current = ""
    for piece in pieces:
        if _MARK_RE.match(piece or " "):
            current += piece
            if _WORD.search(_MARK_RE.sub("", current)):
                clauses.append(current)
                current = ""
        else:
            current += piece
    if current.strip():
        if clauses and (not _WORD.search(current) or not _MARK_RE.search(current)):
            clauses[-1] += current
        else:
            clauses.append(current)
    return [c.strip().lstrip(",;: ").strip() for c in clauses if c.strip()] or [unit]


def _sentences(block: str) -> list[str]:
    guarded = _ABBREVIATIONS.sub(lambda m: m.group(0).replace(".", "\u2024"), block)
    guarded = re.sub(r"(?<=\d)\.(?=\d)", "\u2024", guarded)
    parts: list[str] = []
    cursor = 0
    for match in _SENTENCE_END.finditer(guarded):
        parts.append(guarded[cursor : match.end()])
        cursor = match.end()
    parts.append(guarded[cursor:])
    return [part.replace("\u2024", ".").strip() for part in parts if part.strip()]
