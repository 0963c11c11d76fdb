"""Property tests for the eleven deterministic metrics (hypothesis).

For every metric: the score is in [0, 1] with JSON-safe details, identity scores 1 where the
definition says so, and arbitrary Unicode or malformed inputs (wrong expected_output types,
broken metadata, junk retrieved lists) give a MetricScore or a MetricError, never another
exception.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
import regex
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from assay.data.dataset import Sample
from assay.data.outputs import Output, Retrieved, coerce_output
from assay.errors import MetricError, SystemUnderTestError
from assay.metrics.base import MetricScore
from assay.metrics.citation import CitationGroundedness
from assay.metrics.lexical import Contains, ExactMatch, Regex, RougeL, tokenize
from assay.metrics.ordinal import OrdinalDistance
from assay.metrics.retrieval import MRR, AnswerContainmentAtK, HitAtK, NDCGAtK, RecallAtK

SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FEW = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])

SCALE = ("low", "medium", "high", "urgent")
METRICS = [
    ExactMatch(),
    Contains(),
    Contains(case_sensitive=False),
    Regex(timeout_s=0.05),
    RougeL(),
    RougeL(beta=2.0, max_tokens=50),
    OrdinalDistance(scale=SCALE),
    OrdinalDistance(),
    CitationGroundedness(),
    HitAtK(),
    RecallAtK(k=3),
    MRR(),
    NDCGAtK(),
    AnswerContainmentAtK(),
    AnswerContainmentAtK(k=1, case_sensitive=True),
]
METRIC_IDS = [f"{m.name}-{n}" for n, m in enumerate(METRICS)]
ALL_METRICS = [pytest.param(m, id=i) for m, i in zip(METRICS, METRIC_IDS, strict=True)]


def sample(expected: Any, metadata: dict[str, Any] | None = None) -> Sample:
    return Sample(id="p", input={}, expected_output=expected, metadata=metadata or {})


def checked(metric: Any, s: Sample, output: Output) -> MetricScore | None:
    """Score, or None for a MetricError; anything else escapes and fails the test."""
    try:
        score = metric.score(s, output)
    except MetricError:
        return None
    assert isinstance(score, MetricScore)
    assert 0.0 <= score.value <= 1.0
    json.dumps(dict(score.details), allow_nan=False)  # strict JSON: no NaN/inf, no objects
    return score


# --------------------------------------------------------------------------- strategies

texts = st.text(max_size=60)
json_scalars = st.none() | st.booleans() | st.integers() | st.floats() | texts
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=12,
)
regex_source = st.text(alphabet="ab()[]{}*+?|^$\\.0123,-:!=<>PpNnwWsSdD&~/#\n ", max_size=16)
regexes = st.builds(
    lambda delim, body, flags: delim[0] + body + delim[1] + flags,
    st.sampled_from(
        [
            ("/", "/"),
            ("#", "#"),
            ("(", ")"),
            ("[", "]"),
            ("{", "}"),
            ("<", ">"),
            ("a", "a"),
            ("/", ""),
            ("\\", "\\"),
        ]
    ),
    regex_source,
    st.text(alphabet="imsxuADUz \n", max_size=4),
)
gain_maps = st.dictionaries(
    st.text(min_size=1, max_size=4),
    st.integers(-3, 3)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=3)
    | st.booleans(),
    max_size=6,
)
expected_values = st.one_of(
    json_values,
    regexes,
    st.sampled_from(SCALE),
    gain_maps,
    gain_maps.map(lambda g: json.dumps(g)),
    st.lists(st.text(max_size=4) | st.integers(), max_size=6),
)
metadata_values = st.dictionaries(
    st.sampled_from(["k", "ordinal_scale", "citations", "citation_evidence", "tags", "other"]),
    json_values
    | st.integers(-2, 30)
    | st.text(alphabet="0123456789 -", max_size=3)
    | st.lists(st.text(max_size=8), max_size=5)
    | st.lists(
        st.fixed_dictionaries(
            {},
            optional={
                "citation": json_values | texts,
                "quote": json_values | texts,
                "quotes": json_values,
            },
        ),
        max_size=3,
    ),
    max_size=4,
)
retrieved_entries = st.one_of(
    st.text(max_size=6),
    st.integers(),
    st.none(),
    st.booleans(),
    st.fixed_dictionaries({}, optional={"id": json_scalars, "text": json_scalars}),
    st.lists(st.integers(), max_size=2),
)
outputs = st.one_of(
    texts.map(Output),
    json_values.map(lambda v: Output(json.dumps(v))),
    st.lists(retrieved_entries, max_size=8).map(lambda v: Output(json.dumps(v))),
    st.lists(retrieved_entries, max_size=8).map(lambda v: Output(json.dumps({"retrieved": v}))),
    st.builds(
        lambda t, items: Output(t, tuple(Retrieved(i, x) for i, x in items)),
        texts,
        st.lists(st.tuples(st.text(max_size=4), texts), max_size=8),
    ),
)


# --------------------------------------------------------------------------- malformed input


@pytest.mark.parametrize("metric", ALL_METRICS)
@SETTINGS
@given(expected=expected_values, metadata=metadata_values, output=outputs)
def test_arbitrary_input_gives_score_or_metric_error(
    metric: Any, expected: Any, metadata: dict[str, Any], output: Output
) -> None:
    checked(metric, sample(expected, metadata), output)


@pytest.mark.parametrize("metric", ALL_METRICS)
@FEW
@given(
    expected=expected_values,
    metadata=metadata_values,
    text=texts,
    retrieved=st.lists(retrieved_entries, max_size=8) | json_values,
)
def test_junk_from_a_system_under_test(
    metric: Any, expected: Any, metadata: dict[str, Any], text: str, retrieved: Any
) -> None:
    """What a SUT returns passes coerce_output (or is rejected there) before any metric sees it."""
    try:
        output = coerce_output({"output": text, "retrieved": retrieved})
    except SystemUnderTestError:
        return
    checked(metric, sample(expected, metadata), output)


# --------------------------------------------------------------------------- lexical identities


@FEW
@given(text=st.text())
def test_exact_match_identity(text: str) -> None:
    assert ExactMatch().score(sample(text), Output(text)).value == 1.0


@FEW
@given(
    needle=st.text(min_size=1).filter(lambda t: t.strip() != ""), before=st.text(), after=st.text()
)
def test_contains_identity(needle: str, before: str, after: str) -> None:
    assert Contains().score(sample(needle), Output(before + needle + after)).value == 1.0
    # caseless matching holds only where upper-casing keeps the case fold ('ı'.upper() is 'I')
    assume(needle.upper().casefold() == needle.casefold())
    assert (
        Contains(case_sensitive=False)
        .score(sample(needle.upper()), Output(before + needle + after))
        .value
        == 1.0
    )


@FEW
@given(
    literal=st.text(max_size=40),
    before=st.text(max_size=10),
    after=st.text(max_size=10),
    delimiter=st.sampled_from("/#~%"),
)
def test_regex_identity_for_escaped_literals(
    literal: str, before: str, after: str, delimiter: str
) -> None:
    assume(delimiter not in literal)
    pattern = delimiter + regex.escape(literal) + delimiter
    assert Regex().score(sample(pattern), Output(before + literal + after)).value == 1.0


@FEW
@given(text=st.text(max_size=300))
def test_rouge_l_identity(text: str) -> None:
    assert RougeL().score(sample(text), Output(text)).value == 1.0


@FEW
@given(a=st.text(max_size=120), b=st.text(max_size=120))
def test_rouge_l_is_symmetric_and_bounded(a: str, b: str) -> None:
    forward = RougeL().score(sample(a), Output(b))
    backward = RougeL().score(sample(b), Output(a))
    assert forward.value == pytest.approx(backward.value, abs=1e-12)
    assert forward.details["precision"] == pytest.approx(backward.details["recall"], abs=1e-12)
    lcs = forward.details["lcs_tokens"]
    assert lcs <= min(len(tokenize(a)), len(tokenize(b)))


# --------------------------------------------------------------------------- ordinal and citation

scales = st.lists(st.text(min_size=1, max_size=8), min_size=1, max_size=8, unique=True)


@FEW
@given(scale=scales, data=st.data())
def test_ordinal_identity_and_steps(scale: list[str], data: st.DataObject) -> None:
    i = data.draw(st.integers(0, len(scale) - 1))
    j = data.draw(st.integers(0, len(scale) - 1))
    by_option = OrdinalDistance(scale=tuple(scale))
    by_metadata = OrdinalDistance()
    s_option = sample(scale[i])
    s_metadata = sample(scale[i], {"ordinal_scale": scale})
    assert by_option.score(s_option, Output(scale[i])).value == 1.0
    assert by_metadata.score(s_metadata, Output(scale[i])).value == 1.0
    expected = {0: 1.0, 1: 0.5}.get(abs(i - j), 0.0)
    assert by_option.score(s_option, Output(scale[j])).value == expected
    assert by_metadata.score(s_metadata, Output(scale[j])).value == expected


markers = st.text(min_size=1, max_size=12).filter(lambda t: t.strip() != "")


@FEW
@given(cited=st.lists(markers, min_size=1, max_size=5), filler=st.text(max_size=20))
def test_citation_markers_identity(cited: list[str], filler: str) -> None:
    text = filler.join(cited)
    score = CitationGroundedness().score(sample(None, {"citations": cited}), Output(text))
    assert score.value == 1.0
    assert score.details["required"] == score.details["matched"]


@FEW
@given(
    spans=st.lists(st.tuples(markers, markers), min_size=1, max_size=4), filler=st.text(max_size=10)
)
def test_citation_evidence_identity(spans: list[tuple[str, str]], filler: str) -> None:
    evidence = [{"citation": c, "quote": q} for c, q in spans]
    text = filler.join(f"{q} {c}" for c, q in spans)
    score = CitationGroundedness().score(
        sample(None, {"citation_evidence": evidence}), Output(text)
    )
    assert score.value == 1.0


# --------------------------------------------------------------------------- retrieval identities

judgements = st.dictionaries(
    st.text(min_size=1, max_size=6), st.integers(0, 4), min_size=1, max_size=12
).filter(lambda g: any(v > 0 for v in g.values()))


@FEW
@given(
    gains=judgements,
    k=st.integers(1, 15),
    noise=st.lists(st.text(min_size=1, max_size=3), max_size=5),
)
def test_ideal_ranking_scores_one(gains: dict[str, int], k: int, noise: list[str]) -> None:
    ideal = sorted(gains, key=lambda doc: -gains[doc])
    ranking = ideal + [n for n in noise if n not in gains]
    out = Output("", tuple(Retrieved(doc) for doc in ranking))
    relevant = sum(1 for v in gains.values() if v > 0)
    s = sample(gains, {"k": k})
    assert HitAtK().score(s, out).value == 1.0
    assert MRR().score(s, out).value == 1.0
    assert NDCGAtK().score(s, out).value == pytest.approx(1.0, abs=1e-12)
    assert NDCGAtK(gain="exponential").score(s, out).value == pytest.approx(1.0, abs=1e-12)
    recall = RecallAtK().score(s, out).value
    assert recall == (1.0 if k >= relevant else pytest.approx(k / relevant))


@FEW
@given(gains=judgements, data=st.data())
def test_any_ranking_is_bounded_and_monotone_in_k(
    gains: dict[str, int], data: st.DataObject
) -> None:
    ranking = data.draw(st.permutations([*gains, "x", "y"]))
    out = Output("", tuple(Retrieved(doc) for doc in ranking))
    previous = 0.0
    for k in range(1, len(ranking) + 1):
        recall = RecallAtK(k=k).score(sample(gains), out).value
        assert recall >= previous
        previous = recall
        ndcg = NDCGAtK(k=k).score(sample(gains), out).value
        assert 0.0 <= ndcg <= 1.0 + 1e-12
    assert previous == 1.0


@FEW
@given(
    answer=st.text(min_size=1, max_size=30).filter(lambda t: t.strip() != ""),
    before=st.text(max_size=20),
    after=st.text(max_size=20),
    rank=st.integers(1, 5),
)
def test_answer_containment_identity(answer: str, before: str, after: str, rank: int) -> None:
    texts_ = ["unrelated passage"] * (rank - 1) + [before + " " + answer + " " + after]
    out = Output("", tuple(Retrieved(f"p{n}", t) for n, t in enumerate(texts_)))
    score = AnswerContainmentAtK(k=rank).score(sample(answer), out)
    assert score.value == 1.0
    assert score.details["matched_rank"] <= rank


@SETTINGS
@given(
    gains=st.dictionaries(
        st.text(min_size=1, max_size=4),
        st.integers(-5, 60) | st.floats(1e-3, 60) | st.text(max_size=3) | st.booleans() | st.none(),
        max_size=8,
    ),
    metadata=metadata_values,
    output=outputs,
)
def test_exponential_ndcg_with_ordinary_gains(
    gains: dict[str, Any], metadata: dict[str, Any], output: Output
) -> None:
    """Exponential nDCG over ordinary graded levels, mixed with junk gains."""
    checked(NDCGAtK(k=2, gain="exponential"), sample(gains, metadata), output)
    checked(NDCGAtK(gain="exponential"), sample(json.dumps(gains), metadata), output)


# --------------------------------------------------------------------------- float extremes
# Regression tests: gains whose DCG overflows or whose 2^g - 1 underflows must still give a score
# with strict-JSON details or a MetricError (once an OverflowError / ZeroDivisionError / inf).


def test_exponential_ndcg_with_a_huge_gain() -> None:
    checked(
        NDCGAtK(gain="exponential"), sample({"a": 2000}), Output('["a"]')
    )  # 2.0 ** 2000 overflows


def test_exponential_ndcg_with_a_tiny_positive_gain() -> None:
    checked(
        NDCGAtK(gain="exponential"), sample({"a": 1e-199}), Output('["a"]')
    )  # 2^g - 1 == 0.0: IDCG 0


def test_linear_ndcg_whose_ideal_dcg_overflows() -> None:
    s = sample({"a": 1e308, "b": 1e308, "c": 1e308, "d": 1})
    result = checked(NDCGAtK(), s, Output('["d"]'))  # idcg = inf: details are not strict JSON
    assert result is None or math.isfinite(result.details["idcg"])
