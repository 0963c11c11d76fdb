"""Every judge-reply parser is total: any reply text ends as a value or as the parser's own
JudgeParseError (which triggers the re-ask), never ValueError, OverflowError or RecursionError."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.calibration.model import Criterion
from assay.errors import JudgeParseError
from assay.judging import replies
from assay.metrics.rubric import parse_criterion_reply, parse_rubric_reply

HUGE = "9" * 5000
WILD_NUMBERS = [HUGE, "-" + HUGE, str(2**1100), "1e999", "-1e999", "NaN", "Infinity", "-Infinity"]
CRITERIA = (Criterion(name="accurate"),)

PARSERS: dict[str, tuple[Callable[[str], Any], type[Exception]]] = {
    "verdict": (replies.parse_verdict, JudgeParseError),
    "refusal": (replies.parse_refusal, JudgeParseError),
    "rubric": (lambda t: parse_rubric_reply(t, CRITERIA), JudgeParseError),
    "criterion": (lambda t: parse_criterion_reply(t, CRITERIA[0]), JudgeParseError),
    "tez-claim": (lambda t: replies.parse_tez_claim(t, 2), JudgeParseError),
    "tez-relevance": (replies.parse_tez_relevance, JudgeParseError),
}


def wild_replies() -> list[str]:
    replies = []
    for number in WILD_NUMBERS:
        replies += [
            f'{{"score": {number}, "reason": "r"}}',
            f'{{"score": "{number}", "refusal": "appropriate", "reason": "r"}}',
            f'{{"relevance": {number}}}',
            f'{{"supported_by": [{number}], "faithful": true}}',
            f'{{"verdict": {number}}}',
            f'{{"verdicts": {{"accurate": {number}}}}}',
        ]
    replies += ["[" * 100_000 + "]" * 100_000, '{"a": ' * 50_000 + "1" + "}" * 50_000]
    replies += ["```" + " " * 50_000 + "x", "```json" + " " * 50_000]
    return replies


@pytest.mark.parametrize("name", sorted(PARSERS))
@pytest.mark.parametrize("reply", wild_replies(), ids=lambda r: r[:30])
def test_wild_replies_are_parse_errors(name: str, reply: str) -> None:
    parse, error = PARSERS[name]
    with pytest.raises(error):
        parse(reply)


def test_the_issue_reproducers_name_the_problem_without_quoting_it() -> None:
    with pytest.raises(JudgeParseError, match="number too long"):
        replies.parse_verdict(f'{{"score": {HUGE}}}')
    with pytest.raises(JudgeParseError, match="integer of about 332 digits"):
        replies.parse_verdict(f'{{"score": {2**1100}}}')
    with pytest.raises(JudgeParseError, match="'relevance' must be a number"):
        replies.parse_tez_relevance(f'{{"relevance": {2**1100}}}')


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**1200), max_value=2**1200)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(
        st.sampled_from(["score", "reason", "refusal", "relevance", "supported_by", "faithful",
                         "verdict", "verdicts", "accurate"]) | st.text(max_size=5),
        children,
        max_size=4,
    ),
    max_leaves=12,
)  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(value=JSON_VALUES, name=st.sampled_from(sorted(PARSERS)))
def test_any_json_value_parses_or_is_a_parse_error(value: Any, name: str) -> None:
    parse, error = PARSERS[name]
    try:
        result = parse(json.dumps(value))
    except error:
        return
    if name in ("verdict", "refusal"):
        assert 0.0 <= result[0] <= 1.0
    if name == "tez-relevance":
        assert 0.0 <= result <= 1.0


@settings(max_examples=150, deadline=None)
@given(text=st.text(max_size=300), name=st.sampled_from(sorted(PARSERS)))
def test_any_text_parses_or_is_a_parse_error(text: str, name: str) -> None:
    parse, error = PARSERS[name]
    with contextlib.suppress(error):
        parse(text)
