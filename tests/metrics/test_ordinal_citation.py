"""ordinal-distance and citation-groundedness: values, scale sources, modes and error messages."""

from __future__ import annotations

import json
from typing import Any

import pytest

from assay.data.dataset import Sample
from assay.data.outputs import Output
from assay.errors import MetricConfigError, MetricError
from assay.metrics.citation import CitationGroundedness
from assay.metrics.ordinal import OrdinalDistance
from assay.metrics.registry import resolve

SCALE = ("low", "medium", "high", "urgent")


def sample(expected: Any = None, **metadata: Any) -> Sample:
    return Sample(id="s1", input={}, expected_output=expected, metadata=metadata)


# --------------------------------------------------------------------------- ordinal-distance


@pytest.mark.parametrize(
    ("expected", "actual", "value", "distance"),
    [
        ("high", "high", 1.0, 0),
        ("high", "urgent", 0.5, 1),
        ("high", "medium", 0.5, 1),
        ("high", "low", 0.0, 2),
        ("low", "urgent", 0.0, 3),
    ],
)
def test_ordinal_credit_by_distance(
    expected: str, actual: str, value: float, distance: int
) -> None:
    score = OrdinalDistance(scale=SCALE).score(sample(expected), Output(actual))
    assert score.value == value
    assert score.details == {
        "expected_index": SCALE.index(expected),
        "actual_index": SCALE.index(actual),
        "distance": distance,
    }


@pytest.mark.parametrize("actual", ["High", "high ", "", "critical", "medium\n"])
def test_ordinal_actual_off_scale_scores_zero_without_normalising(actual: str) -> None:
    score = OrdinalDistance(scale=SCALE).score(sample("high"), Output(actual))
    assert score.value == 0.0
    assert score.details == {"expected_index": 2, "actual_index": None, "distance": None}


def test_ordinal_scale_from_metadata_overrides_option() -> None:
    metric = OrdinalDistance(scale=SCALE)
    s = sample("b", ordinal_scale=["a", "b", "c"])
    assert metric.score(s, Output("c")).value == 0.5
    assert OrdinalDistance().score(s, Output("a")).value == 0.5  # no option: metadata is enough


def test_ordinal_scale_from_resolve_options() -> None:
    metric = resolve({"name": "ordinal-distance", "scale": list(SCALE)})
    assert metric.scale == SCALE  # type: ignore[attr-defined]
    assert metric.score(sample("urgent"), Output("high")).value == 0.5


def test_ordinal_without_any_scale_is_a_metric_error() -> None:
    with pytest.raises(MetricError, match="no ordinal scale"):
        OrdinalDistance().score(sample("high"), Output("high"))


@pytest.mark.parametrize(
    "bad_scale",
    [[], ["a", "a"], ["a", ""], ["a", 1], "low,high", {"low": 0}, [None], 5, True],
)
def test_invalid_metadata_scale_is_an_error_not_a_fallback(bad_scale: Any) -> None:
    """padosoft silently falls back to the constructor scale; assay reports the bad metadata."""
    with pytest.raises(MetricError, match=r"metadata\.ordinal_scale must be a non-empty list"):
        OrdinalDistance(scale=SCALE).score(sample("high", ordinal_scale=bad_scale), Output("high"))


def test_null_metadata_scale_means_not_given() -> None:
    score = OrdinalDistance(scale=SCALE).score(sample("high", ordinal_scale=None), Output("high"))
    assert score.value == 1.0


@pytest.mark.parametrize("bad_scale", [(), ("a", "a"), ("a", ""), ("a", 1), "low", [None]])
def test_invalid_scale_option_is_a_config_error(bad_scale: Any) -> None:
    with pytest.raises(
        MetricConfigError, match="scale must be a non-empty list of unique, non-empty strings"
    ):
        OrdinalDistance(scale=bad_scale)
    with pytest.raises(MetricConfigError):
        resolve({"name": "ordinal-distance", "scale": bad_scale})


def test_ordinal_expected_must_be_on_the_scale() -> None:
    with pytest.raises(MetricError, match="expected_output is not one of the 4 labels"):
        OrdinalDistance(scale=SCALE).score(sample("severe"), Output("high"))


@pytest.mark.parametrize(("expected", "label"), [(2, "number"), (None, "null"), (["high"], "list")])
def test_ordinal_expected_must_be_a_string(expected: Any, label: str) -> None:
    with pytest.raises(MetricError, match=f"must be a string for ordinal-distance; got {label}"):
        OrdinalDistance(scale=SCALE).score(sample(expected), Output("high"))


# --------------------------------------------------------------------------- citation: markers


def test_marker_mode_scores_share_of_markers() -> None:
    metric = CitationGroundedness()
    s = sample("ignored", citations=["[1]", "[2]", "[policy:refunds]"])
    score = metric.score(s, Output("Refunds take 30 days [1][policy:refunds]."))
    assert score.value == pytest.approx(2 / 3)
    assert score.details == {"mode": "markers", "required": 3, "matched": 2, "missing": 1}


def test_marker_mode_accepts_a_single_string_and_cleans_the_list() -> None:
    metric = CitationGroundedness()
    assert metric.score(sample(citations="[1]"), Output("see [1]")).value == 1.0
    # trimmed, de-duplicated, non-strings and empties dropped -> one marker
    s = sample(citations=[" [1] ", "[1]", "", "  ", 7, None, ["[2]"]])
    score = metric.score(s, Output("see [1]"))
    assert score.details == {"mode": "markers", "required": 1, "matched": 1, "missing": 0}


def test_marker_match_is_case_sensitive() -> None:
    score = CitationGroundedness().score(sample(citations=["[Policy]"]), Output("see [policy]"))
    assert score.value == 0.0


@pytest.mark.parametrize("citations", [None, [], "", "   ", [1, 2], {"a": "[1]"}, 5])
def test_marker_mode_needs_markers(citations: Any) -> None:
    with pytest.raises(
        MetricError, match=r"metadata\.citations .* or metadata\.citation_evidence is required"
    ):
        CitationGroundedness().score(sample(citations=citations), Output("text [1]"))


def test_citation_needs_metadata_at_all() -> None:
    with pytest.raises(MetricError, match=r"metadata\.citations"):
        CitationGroundedness().score(sample("[1]"), Output("[1]"))


# --------------------------------------------------------------------------- citation: evidence


EVIDENCE = [
    {"citation": "[policy:refunds]", "quote": "Refunds are available within 30 days."},
    {"citation": "[policy:shipping]", "quotes": ["Shipping is free", "free shipping"]},
    {"citation": "[faq:3]", "quote": "Contact support."},
]


def test_evidence_mode_needs_marker_and_quote() -> None:
    text = (
        "REFUNDS are available\nwithin  30 days. [policy:refunds] "  # both, quote normalised
        "We offer free shipping [policy:shipping-old] "  # quote without its marker
        "[faq:3]"  # marker without its quote
    )
    score = CitationGroundedness().score(sample(citation_evidence=EVIDENCE), Output(text))
    assert score.value == pytest.approx(1 / 3)
    assert score.details == {
        "mode": "evidence",
        "required": 3,
        "matched": 1,
        "missing_citation": 1,
        "missing_quote": 1,
    }


def test_evidence_span_can_miss_both() -> None:
    score = CitationGroundedness().score(sample(citation_evidence=EVIDENCE[:1]), Output("nothing"))
    assert score.details == {
        "mode": "evidence",
        "required": 1,
        "matched": 0,
        "missing_citation": 1,
        "missing_quote": 1,
    }


def test_evidence_mode_takes_precedence_over_markers() -> None:
    s = sample(citations=["[1]"], citation_evidence=[{"citation": "[2]", "quote": "two"}])
    score = CitationGroundedness().score(s, Output("[1] only"))
    assert score.details["mode"] == "evidence"
    assert score.value == 0.0


def test_evidence_quotes_and_quote_together() -> None:
    span = {"citation": "[a]", "quote": "alpha", "quotes": ["beta"]}
    assert (
        CitationGroundedness().score(sample(citation_evidence=[span]), Output("[a] BETA")).value
        == 1.0
    )


def test_details_hold_counts_only() -> None:
    """Evidence text and markers must never reach the report."""
    secret_quote = "Refunds are available within 30 days."
    for metadata in (
        {"citation_evidence": EVIDENCE},
        {"citations": ["[policy:refunds]", "[secret-marker]"]},
    ):
        score = CitationGroundedness().score(
            sample(**metadata), Output(secret_quote + " [policy:refunds]")
        )
        dumped = json.dumps(score.details)
        assert "policy" not in dumped
        assert "secret" not in dumped
        assert "Refunds" not in dumped and "refunds" not in dumped
        assert all(isinstance(v, int) for k, v in score.details.items() if k != "mode")


@pytest.mark.parametrize(
    ("evidence", "message"),
    [
        ([], "must be a non-empty list of \\{citation, quote\\} spans"),
        ("[1]", "must be a non-empty list"),
        ({"citation": "[1]", "quote": "q"}, "must be a non-empty list"),
        (None, "must be a non-empty list"),
        (["[1]"], "citation_evidence\\[0\\] must be an object with 'citation' and 'quote'"),
        ([{"citation": "[1]", "quote": "q"}, 5], "citation_evidence\\[1\\] must be an object"),
        ([{"quote": "q"}], "citation_evidence\\[0\\].citation must be a non-empty string"),
        ([{"citation": "  ", "quote": "q"}], "\\[0\\].citation must be a non-empty string"),
        ([{"citation": 1, "quote": "q"}], "\\[0\\].citation must be a non-empty string"),
        ([{"citation": "[1]", "quote": ""}], "\\[0\\].quote must be a non-empty string"),
        ([{"citation": "[1]", "quote": 3}], "\\[0\\].quote must be a non-empty string"),
        (
            [{"citation": "[1]", "quotes": "q"}],
            "\\[0\\].quotes must be a list of non-empty strings",
        ),
        (
            [{"citation": "[1]", "quotes": ["q", " "]}],
            "\\[0\\].quotes must be a list of non-empty strings",
        ),
        ([{"citation": "[1]", "quotes": [None]}], "\\[0\\].quotes must be a list"),
        ([{"citation": "[1]"}], "citation_evidence\\[0\\] needs a 'quote' or a 'quotes' list"),
        ([{"citation": "[1]", "quotes": []}], "\\[0\\] needs a 'quote' or a 'quotes' list"),
    ],
)
def test_bad_evidence_is_a_metric_error(evidence: Any, message: str) -> None:
    with pytest.raises(MetricError, match=message):
        CitationGroundedness().score(sample(citation_evidence=evidence), Output("[1] q"))


def test_bad_evidence_errors_do_not_echo_quotes() -> None:
    with pytest.raises(MetricError) as info:
        CitationGroundedness().score(
            sample(
                citation_evidence=[{"citation": "[confidential-7]", "quotes": ["top secret", ""]}]
            ),
            Output("x"),
        )
    assert "confidential" not in str(info.value)
    assert "top secret" not in str(info.value)
