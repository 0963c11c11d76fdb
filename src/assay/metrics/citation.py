"""citation-groundedness: does the answer cite its evidence? Details hold counts only.

Marker mode: ``metadata.citations`` lists markers (``[1]``, ``[policy:refunds]``) that must
appear; score = matched / required. Evidence mode (``metadata.citation_evidence``, takes
precedence): each span needs its marker and one of its quotes (whitespace- and
case-normalised); score = fully matched spans / spans.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from assay.errors import MetricError
from assay.metrics.base import unique
from assay.metrics.batch import Row, RowScored

if TYPE_CHECKING:
    from assay.data.dataset import Sample
    from assay.data.outputs import Output

_SPACE = re.compile(r"\s+")


def _normalise(text: str) -> str:
    return _SPACE.sub(" ", text.strip()).casefold()


def _markers(raw: object) -> list[str]:
    items = [raw] if isinstance(raw, str) else raw if isinstance(raw, list) else []
    return unique([item.strip() for item in items if isinstance(item, str) and item.strip()])


def _spans(raw: object) -> list[tuple[str, list[str]]]:
    field = "metadata.citation_evidence"
    if not isinstance(raw, list) or not raw:
        raise MetricError(f"{field} must be a non-empty list of {{citation, quote}} spans")
    spans: list[tuple[str, list[str]]] = []
    for index, span in enumerate(raw):
        if not isinstance(span, Mapping):
            raise MetricError(f"{field}[{index}] must be an object with 'citation' and 'quote'")
        citation = span.get("citation")
        if not isinstance(citation, str) or not citation.strip():
            raise MetricError(f"{field}[{index}].citation must be a non-empty string")
        quotes: list[str] = []
        if "quote" in span:
            if not isinstance(span["quote"], str) or not span["quote"].strip():
                raise MetricError(f"{field}[{index}].quote must be a non-empty string")
            quotes.append(span["quote"])
        if "quotes" in span:
            listed = span["quotes"]
            if not isinstance(listed, list) or not all(
                isinstance(q, str) and q.strip() for q in listed
            ):
                raise MetricError(f"{field}[{index}].quotes must be a list of non-empty strings")
            quotes.extend(listed)
        if not quotes:
            raise MetricError(f"{field}[{index}] needs a 'quote' or a 'quotes' list")
        spans.append((citation.strip(), unique([_normalise(q) for q in quotes])))
    return spans


def citation_row(metadata: Mapping[str, Any], text: str) -> Row:
    """citation-groundedness' score of one answer for its sample's markers or evidence."""
    if "citation_evidence" in metadata:
        spans = _spans(metadata["citation_evidence"])
        normalised = _normalise(text)
        matched = missing_citation = missing_quote = 0
        for citation, quotes in spans:
            has_citation = citation in text
            has_quote = any(q in normalised for q in quotes)
            missing_citation += not has_citation
            missing_quote += not has_quote
            matched += has_citation and has_quote
        return matched / len(spans), {
            "mode": "evidence",
            "required": len(spans),
            "matched": matched,
            "missing_citation": missing_citation,
            "missing_quote": missing_quote,
        }
    markers = _markers(metadata.get("citations"))
    if not markers:
        raise MetricError(
            "metadata.citations (a marker or list of markers) or metadata.citation_evidence is "
            "required"
        )
    matched = sum(1 for marker in markers if marker in text)
    return matched / len(markers), {
        "mode": "markers",
        "required": len(markers),
        "matched": matched,
        "missing": len(markers) - matched,
    }


@dataclass(frozen=True)
class CitationGroundedness(RowScored):
    name: str = "citation-groundedness"

    def row(self, sample: Sample, output: Output) -> Row:
        return citation_row(sample.metadata, output.text)
