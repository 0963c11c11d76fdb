"""Citation grammar and location resolution, on synthetic text and on the real synthesis files."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from assay.tez.bundle import open_bundle
from assay.tez.citations import parse_citations, resolve_location, slug, strip_citations

ITEM = """# Report

## p1 - Introduction
Intro text.

## p2 - Market Size
The market is $18.7 billion.

## p3 - Growth
Growth is 22.4%.

## Section 5 - Runway Analysis
### Current Runway
Cash is $8.2M.
### Market Entry Impact
Costs $1.8M.

## Table 1 - Revenue
| a | b |

## 7. Geographic Distribution
Texas.

## U.S. Commercial & Industrial (C&I) Solar Market
C&I text.

## Risks and Headwinds
### Financial
Rates are 4.25%.
### Supply Chain
Polysilicon.

[00:15:30] Speaker: we said something.
"""


def test_parse_forms() -> None:
    text = (
        "A [[item-a]] B [[item-b:p12]] C [[auth.py:L42-L50]] D [[board:t0:15:30]] "
        "E [[model:Q3:B2-F20]] F [[cfg:$.api.rate]] G [[a:p5, b:p12]] H [[tez.md]] I [[x:\n  "
        "section-2]]"
    )
    refs = [(r.item_id, r.location) for r in parse_citations(text)]
    assert refs == [
        ("item-a", None), ("item-b", "p12"), ("auth.py", "L42-L50"), ("board", "t0:15:30"),
        ("model", "Q3:B2-F20"), ("cfg", "$.api.rate"), ("a", "p5"), ("b", "p12"), ("tez.md", None),
        ("x", "section-2"),
    ]  # fmt: skip
    assert strip_citations("Revenue was $3M [[a:p1]].") == "Revenue was $3M."


@pytest.mark.parametrize(
    ("location", "needle"),
    [
        ("p2", "$18.7 billion"),
        ("p2-3", "22.4%"),
        ("p2-p3", "$18.7 billion"),
        ("section-5", "$1.8M"),  # a section includes its subsections
        ("table-1", "| a | b |"),
        ("section-7", "Texas"),
        ("us-ci-market", "C&I text"),  # words of the heading, punctuation squeezed
        ("risks-financial", "4.25%"),  # parent + child heading words
        ("#market-size", "$18.7 billion"),
        ("market-entry-impact", "$1.8M"),
        ("L3-L4", "Intro text."),
        ("t0:15:30", "we said"),
        ("00:15:30", "we said"),
        ("p2:table-9", "$18.7 billion"),  # unknown element falls back to the location
        ("section-5:current-runway", "$8.2M"),
    ],
)
def test_locations_resolve(location: str, needle: str) -> None:
    span, how = resolve_location(ITEM, location)
    assert span is not None, how
    assert needle in span


@pytest.mark.parametrize(
    "location",
    ["p4", "p2-9", "section-12", "table-3", "L900", "t1:00:00", "nothing-like-this", "$.a"],
)
def test_locations_that_do_not_exist(location: str) -> None:
    span, how = resolve_location(ITEM, location)
    assert span is None and how


def test_risks_financial_does_not_pick_an_unrelated_financial_heading() -> None:
    text = "## Financial Overview\nwrong\n## Risks\n### Financial\nright\n"
    span, _ = resolve_location(text, "risks-financial")
    assert span is not None and "right" in span and "wrong" not in span


def test_json_path_on_a_json_item() -> None:
    span, how = resolve_location(
        '{"api": {"rateLimit": {"maxRequests": 100}}, "xs": [1, 2]}', "$.api.rateLimit.maxRequests"
    )
    assert span == "100" and how == "JSON path"
    assert resolve_location('{"xs": [1, 2]}', "$.xs[1]")[0] == "2"


def test_slug() -> None:
    assert (
        slug("U.S. Commercial & Industrial (C&I) Solar Market")
        == "us-commercial-industrial-ci-solar-market"
    )


def test_headings_inside_code_fences_are_not_sections() -> None:
    text = "## Real\nx\n```\n## Fake\n```\n"
    assert resolve_location(text, "fake")[0] is None
    assert resolve_location(text, "real")[0] is not None


def _refs(bundle_dir: Path) -> tuple[int, int, dict[str, str]]:
    from assay.tez.citations import iter_refs

    bundle = open_bundle(bundle_dir)
    assert bundle.synthesis_text is not None
    groups = len(re.findall(r"\[\[([^\[\]]+?)\]\]", bundle.synthesis_text))
    refs = list(iter_refs(bundle, bundle.synthesis_text))
    bad = {r.label: res.reason for r, res in refs if not (res.exists and res.location_resolved)}
    return groups, len(refs), bad


def test_every_synthesis_citation_of_the_official_bundles_resolves(bundles_dir: Path) -> None:
    """The counts stated in reference/tezit.md section 2.3: 120 groups / 127 refs, and only the
    literal placeholder [[citations]] is invalid; interop-level-3: 24 / 24, all valid."""
    groups, refs, bad = _refs(bundles_dir / "tip-compliance")
    assert (groups, refs) == (120, 127)
    assert list(bad) == ["citations"]
    groups, refs, bad = _refs(bundles_dir / "interop-level-3")
    assert (groups, refs, bad) == (24, 24, {})


def test_interop_gold_locations_from_the_rationales_resolve(bundles_dir: Path) -> None:
    bundle = open_bundle(bundles_dir / "interop-level-3")
    gold = {
        ("market-landscape", "p2"): "$18.7 billion",
        ("technical-assessment", "section-2"): "94.7%",
        ("financial-projections", "table-1"): "$19.2M",
        ("financial-projections", "table-3"): "47 enterprise customers",
        ("financial-projections", "section-5"): "$8.2M",
        ("technical-assessment", "section-5"): "$340K",
    }
    for (item, location), needle in gold.items():
        text = bundle.items[item].text
        assert text is not None
        span, how = resolve_location(text, location)
        assert span is not None and needle in span, (item, location, how)
