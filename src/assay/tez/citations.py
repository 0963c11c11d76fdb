"""TIP citations: parse ``[[item-id]]`` / ``[[item-id:location]]`` and resolve them to text.

Grammar (TIP section 5): a bracket group may hold several comma-separated refs and may break
across lines; each ref splits on its *first* colon into item id and location, since locations
contain colons (timestamps, ``sheet:range``, ``p12:table-3``). Locations resolve against the
Markdown headings of the item: ``pN``, ``section-N`` (``Section N`` or ``N.`` headings),
``table-N``/``figure-N``, heading slugs (or their words, optionally with the parent heading),
page ranges, ``LN-M`` line ranges, timestamps, ``#anchors`` and ``$.json.paths``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache

from assay.data.bounded import loads_json
from assay.errors import TezError
from assay.tez.bundle import Bundle

CITATION = re.compile(r"\[\[([^\[\]]+?)\]\]")
_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$")
_FENCE = re.compile(r"^\s*(```|~~~)")
_PAGE_KEY = re.compile(r"^(?:p|page)\s*\.?\s*(\d+)\b", re.I)
_SECTION_WORD = re.compile(r"^section\s+(\d+(?:\.\d+)*)\b", re.I)
_NUMBERED = re.compile(r"^(\d+(?:\.\d+)*)[.)]?\s+\S")
_ELEMENT = re.compile(r"^(table|figure|chart|equation|footnote|listing|code|para)\s+(\d+)\b", re.I)
_LINES = re.compile(r"^L(\d+)(?:\s*-\s*L?(\d+))?$", re.I)
_PAGES = re.compile(r"^p(\d+)\s*-\s*p?(\d+)$", re.I)
_TIME = re.compile(r"^t?(\d{1,2}:)?\d{1,2}:\d{2}(?:\s*-\s*t?(\d{1,2}:)?\d{1,2}:\d{2})?$", re.I)
_ELEMENT_REF = re.compile(r"^(table|figure|para|chart|code|equation|footnote|listing)-\d+$", re.I)


@dataclass(frozen=True, slots=True)
class CitationRef:
    """One reference inside a bracket group; ``start``/``end`` span the whole group."""

    item_id: str
    location: str | None
    start: int
    end: int

    @property
    def label(self) -> str:
        return self.item_id if self.location is None else f"{self.item_id}:{self.location}"


@dataclass(frozen=True, slots=True)
class Resolution:
    """Where a citation points: existence, whether the location was found, and the text there."""

    exists: bool
    location_resolved: bool
    text: str | None
    reason: str
    synthesis: bool = False


def parse_citations(text: str) -> list[CitationRef]:
    """Every ref in ``text`` in order of appearance (a group of n refs gives n entries)."""
    refs: list[CitationRef] = []
    for match in CITATION.finditer(text):
        for raw in match.group(1).split(","):
            ref = " ".join(raw.split())
            if not ref:
                continue
            item_id, sep, location = ref.partition(":")
            item_id = item_id.strip()
            location = location.strip() if sep else ""
            if item_id:
                refs.append(CitationRef(item_id, location or None, match.start(), match.end()))
    return refs


def strip_citations(text: str) -> str:
    """``text`` with every bracket group removed (whitespace tidied)."""
    bare = CITATION.sub("", text)
    bare = re.sub(r"\(\s*[,;]?\s*\)", "", bare)
    bare = re.sub(r"[,;]\s*\)", ")", bare)
    return re.sub(r"[ \t]+([.,;:!?)])", r"\1", bare).strip()


# --------------------------------------------------------------------------- headings


@dataclass(frozen=True, slots=True)
class Heading:
    level: int
    title: str
    start: int  # 0-based line index of the heading
    end: int  # exclusive line index where the section ends
    parent: int | None  # index of the enclosing heading
    keys: frozenset[str]
    tokens: frozenset[str]


def _tokens(text: str) -> set[str]:
    """Words of a heading or ref, punctuation squeezed out.

    ``U.S.`` -> ``us``, ``C&I`` -> ``ci``.
    """
    out: set[str] = set()
    for word in re.split(r"[\s\-_/]+", text.lower()):
        squeezed = re.sub(r"[^a-z0-9]", "", word)
        if squeezed:
            out.add(squeezed)
            if len(squeezed) > 3 and squeezed.endswith("s"):
                out.add(squeezed[:-1])
    return out


def slug(text: str) -> str:
    """Lowercase-hyphen slug of a heading (what ``[[item:section-name]]`` SHOULD use)."""
    joined = re.sub(r"(?<=\w)&(?=\w)", "", text.lower()).replace("&", " ")
    squeezed = re.sub(r"[^\w\s-]", "", joined)
    return re.sub(r"[\s_-]+", "-", squeezed).strip("-")


def _heading_keys(title: str) -> set[str]:
    keys = {slug(title)}
    plain = title.strip().strip("*_").strip()
    if m := _PAGE_KEY.match(plain):
        keys.add(f"p{int(m.group(1))}")
    if (m := _SECTION_WORD.match(plain)) or (m := _NUMBERED.match(plain)):
        keys.add(f"section-{m.group(1)}")
    if m := _ELEMENT.match(plain):
        keys.add(f"{m.group(1).lower()}-{int(m.group(2))}")
    return keys


@lru_cache(maxsize=256)
def heading_index(text: str) -> tuple[tuple[Heading, ...], tuple[str, ...]]:
    """The headings of a Markdown text (outside code fences) and its lines."""
    lines = tuple(text.splitlines())
    raw: list[tuple[int, str, int]] = []
    fenced = False
    for number, line in enumerate(lines):
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced and (m := _HEADING.match(line)):
            raw.append((len(m.group(1)), m.group(2).strip(), number))
    headings: list[Heading] = []
    for index, (level, title, start) in enumerate(raw):
        end = len(lines)
        for later_level, _, later_start in raw[index + 1 :]:
            if later_level <= level:
                end = later_start
                break
        parent = None
        for back in range(index - 1, -1, -1):
            if raw[back][0] < level:
                parent = back
                break
        headings.append(
            Heading(
                level,
                title,
                start,
                end,
                parent,
                frozenset(_heading_keys(title)),
                frozenset(_tokens(title)),
            )
        )
    return tuple(headings), lines


def _section_text(
    lines: tuple[str, ...], heading: Heading, headings: tuple[Heading, ...] = ()
) -> str:
    """The section's lines, preceded by its ancestors' heading lines (they qualify it)."""
    trail: list[str] = []
    parent = heading.parent
    while parent is not None and headings:
        trail.append(lines[headings[parent].start])
        parent = headings[parent].parent
    return "\n".join([*reversed(trail), *lines[heading.start : heading.end]])


def resolve_location(text: str, location: str) -> tuple[str | None, str]:
    """The text a location points to inside ``text`` and how it was found (``None`` if not)."""
    headings, lines = heading_index(text)
    loc = location.strip()
    if m := _LINES.match(loc):
        first, last = int(m.group(1)), int(m.group(2) or m.group(1))
        if 1 <= first <= last <= len(lines):
            return "\n".join(lines[first - 1 : last]), "line range"
        return None, f"lines {loc} are outside the item's {len(lines)} lines"
    if loc.startswith("$"):
        return _json_path(text, loc)
    if _TIME.match(loc):
        return _timestamp(text, loc)
    if m := _PAGES.match(loc):
        first, last = int(m.group(1)), int(m.group(2))
        pages = (
            [_by_key(headings, f"p{n}") for n in range(first, last + 1)]
            if first <= last
            else [None]
        )
        if all(pages):
            return "\n".join(_section_text(lines, h, headings) for h in pages if h), "page range"
        return None, f"page range {loc} is not fully present"
    key = loc.lstrip("#").strip().lower()
    if heading := _by_key(headings, key):
        return _section_text(lines, heading, headings), "heading"
    if heading := _by_tokens(headings, key):
        return _section_text(lines, heading, headings), "heading words"
    if ":" in loc:  # element suffix (p12:table-3) or sheet:range -> fall back to the location part
        head, _, tail = loc.partition(":")
        found, how = resolve_location(text, head)
        if found is not None:
            if sub := resolve_location(found, tail)[0]:
                return sub, f"{how} + element"
            return found, f"{how} (element '{tail}' not found; fell back to the location)"
    return None, f"location '{location}' not found in the item"


def _by_key(headings: tuple[Heading, ...], key: str) -> Heading | None:
    normal = key.replace(" ", "-")
    m = re.fullmatch(r"(?:page|p)-?(\d+)", normal)
    if m:
        normal = f"p{int(m.group(1))}"
    return next((h for h in headings if normal in h.keys), None)


def _by_tokens(headings: tuple[Heading, ...], key: str) -> Heading | None:
    wanted = _tokens(key)
    if not wanted or _ELEMENT_REF.match(key):
        return None
    for heading in headings:
        if wanted <= heading.tokens:
            return heading
    for heading in headings:
        if (
            heading.parent is not None
            and wanted <= heading.tokens | headings[heading.parent].tokens
        ):
            return heading
    return None


def _json_path(text: str, path: str) -> tuple[str | None, str]:
    try:
        node = loads_json(text, TezError)
    except TezError:
        return None, "JSON path on an item that is not JSON"
    for part in re.findall(r"\.([^.\[\]]+)|\[(\d+)\]", path[1:]):
        key, index = part
        if key and isinstance(node, dict) and key in node:
            node = node[key]
        elif index and isinstance(node, list) and int(index) < len(node):
            node = node[int(index)]
        else:
            return None, f"JSON path {path} not found"
    return json.dumps(node, ensure_ascii=False), "JSON path"


def _timestamp(text: str, loc: str) -> tuple[str | None, str]:
    first = loc.lstrip("tT").split("-", 1)[0].strip()
    parts = first.split(":")
    variants = {first, ":".join(p.zfill(2) for p in parts)}
    if len(parts) == 3 and int(parts[0]) == 0:
        variants.add(":".join(p.zfill(2) for p in parts[1:]))
    for number, line in enumerate(text.splitlines()):
        if any(v in line for v in variants):
            lines = text.splitlines()
            return "\n".join(lines[number : number + 5]), "timestamp"
    return None, f"timestamp {loc} not found"


# --------------------------------------------------------------------------- bundle-level


def resolve(bundle: Bundle, ref: CitationRef) -> Resolution:
    """Check one ref against ``bundle``: item exists, location exists, and the cited text."""
    if bundle.is_synthesis_id(ref.item_id) and ref.item_id not in bundle.items:
        body = bundle.synthesis_text
        if body is None:
            return Resolution(True, False, None, "synthesis cited but the bundle has none", True)
        return _locate(body, ref, synthesis=True)
    item = bundle.item(ref.item_id)
    if item is None:
        return Resolution(False, False, None, f"no context item '{ref.item_id}' in the manifest")
    if item.text is None:
        return Resolution(True, False, None, f"content of '{ref.item_id}' is not readable text")
    return _locate(item.text, ref, synthesis=False)


def _locate(body: str, ref: CitationRef, *, synthesis: bool) -> Resolution:
    if ref.location is None:
        return Resolution(True, True, body, "whole item", synthesis)
    span, how = resolve_location(body, ref.location)
    return Resolution(True, span is not None, span, how, synthesis)


def iter_refs(bundle: Bundle, text: str) -> Iterator[tuple[CitationRef, Resolution]]:
    for ref in parse_citations(text):
        yield ref, resolve(bundle, ref)
