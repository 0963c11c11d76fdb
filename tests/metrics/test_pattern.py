"""Regex patterns that cannot hurt the run: RE2 by default, a limited worker otherwise.

The RE2 spelling is checked against the ``regex`` engine itself (the reference semantics):
per code point for the rewritten classes, and on generated patterns for whole matches.
"""

from __future__ import annotations

import random
import signal
import unicodedata

import pytest
import re2
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.data.dataset import Sample
from assay.data.outputs import Output
from assay.errors import MetricError
from assay.metrics import backtrack
from assay.metrics.lexical import Regex, parse_delimited
from assay.metrics.pattern import _unicode_program, compile_pattern, match, re2_spelling


def score(pattern: str, text: str) -> float:
    sample = Sample(id="s", input={"q": "?"}, expected_output=pattern)
    return Regex().score(sample, Output(text)).value


def engine(pattern: str, text: str = "ascii") -> str:
    return match(compile_pattern(*parse_delimited(pattern)), text, 1.0)[1]


# -------------------------------------------------------------------------- the reproducers


@pytest.mark.parametrize(
    ("pattern", "text", "message"),
    [
        ("/((?(1)a|b)){1000000}/", "[zaza", "memory|crashed|did not finish"),
        ("/(?R)/", "abc", "memory|crashed|did not finish"),
        ("/a{1000000}/", "aaa", "memory|crashed|did not finish"),
        ("/(a|aa)+(?<!c)$/", "a" * 40 + "b", r"did not finish within 1s"),
        ("/[zaza/", "x", "invalid regex pattern: unterminated character set"),
    ],
)
def test_hostile_patterns_are_recorded_failures(pattern: str, text: str, message: str) -> None:
    with pytest.raises(MetricError, match=message):
        score(pattern, text)


def test_batch_groups_rows_by_pattern_and_keeps_row_order() -> None:
    """score_batch runs each distinct pattern once over its rows (RE2 inline on ASCII text,
    the worker for the others: a hostile pattern's row costs its bound once) and gives score()'s
    rows, errors keyed in row order."""
    rng = random.Random(3)
    patterns = ["/ORD-\\d{3}/", "/refund/i", "/^x/A", "no delimiter", None, "/é/"]
    texts = ["ORD-123 x", "a REFUND", "xa", "é ORD-999", "a" * 30 + "b"]
    rows = [(rng.choice(patterns), rng.choice(texts)) for _ in range(40)]
    rows[10:10] = [("/(a)\\1/", "aa"), ("/ORD/", "\ud800 ORD"), ("/(a)\\1/", "ab")]
    rows.insert(30, ("/(a|aa)+(?<!c)$/", "a" * 40 + "b"))  # hostile: its row errs
    samples = [Sample(id=str(n), input={}, expected_output=p) for n, (p, _) in enumerate(rows)]
    outputs = [Output(t) for _, t in rows]
    metric = Regex(timeout_s=0.5)
    column = metric.score_batch(samples, outputs)
    assert list(column.errors) == sorted(column.errors)
    for index, (sample, output) in enumerate(zip(samples, outputs)):
        try:
            expected = metric.score(sample, output)
        except MetricError as exc:
            assert column.errors[index] == str(exc)
            continue
        assert column.values[index] == expected.value
        assert column.details_at(index) == dict(expected.details)


def test_nested_quantifier_over_a_long_subject_is_linear() -> None:
    # took 5.4-6.5 s against a 1 s limit on a loaded machine in the backtracking engine
    assert engine("/(a+)+$/") == "re2"
    assert score("/(a+)+$/", "a" * 5000 + "!") == 0.0
    assert score("/(a+)+$/", "a" * 5000) == 1.0


def test_a_crashed_or_killed_worker_is_named() -> None:
    assert "crashed on this pattern (SIGSEGV)" in backtrack._stopped(-signal.SIGSEGV, 1.0)
    assert "did not finish within 1s" in backtrack._stopped(-signal.SIGALRM, 1.0)
    assert "exit 3" in backtrack._stopped(3, 1.0)


# --------------------------------------------------------------------------- engine choice


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("/ORD-\\d{6}$/", "re2"),
        ("/^\\w+@\\w+\\.com$/i", "re2"),
        ("/a.b/s", "re2"),
        ("/^b$/m", "re2"),
        ("/(?P<year>\\d{4})-\\d\\d/", "re2"),
        ("/[^\\s,]+/", "re2"),
        ("/(a)\\1/", "backtracking"),  # backreference
        ("/(?=a)a/", "backtracking"),  # lookahead
        ("/(?<!a)b/", "backtracking"),  # lookbehind
        ("/a++/", "backtracking"),  # possessive
        ("/a b/x", "backtracking"),  # verbose mode
        ("/(?m)^a$/", "backtracking"),  # inline multi-line changes what $ means
        ("/a{,3}/", "backtracking"),  # a repeat to Python, a literal to RE2
        ("/a{1001}/", "backtracking"),  # over RE2's repeat limit
        ("/[[:alpha:]]/", "backtracking"),  # nested set syntax
        ("/$a/", "backtracking"),  # $ not at the end of a branch
    ],
)
def test_engine_choice(pattern: str, expected: str) -> None:
    assert engine(pattern, "aé" if expected == "re2" else "a") == expected


def test_word_boundary_uses_re2_on_ascii_text_only() -> None:
    assert engine("/\\bcaf\\b/", "a caf") == "re2"
    assert engine("/\\bcafé\\b/", "un café noir") == "backtracking"
    assert score("/\\bcafé\\b/", "un café noir") == 1.0
    assert score("/\\bcafé\\b/", "cafétéria") == 0.0


def test_lone_surrogates_in_the_answer_fall_back_to_the_worker() -> None:
    assert score("/a.c/", "a\ud800c") == 1.0


# --------------------------------------------------------------------------- same meaning as regex


def assigned(first: int, last: int) -> str:
    return "".join(
        chr(c)
        for c in range(first, last)
        if not 0xD800 <= c <= 0xDFFF and unicodedata.category(chr(c)) != "Cn"
    )


@pytest.mark.parametrize("cls", ["\\d", "\\D", "\\w", "\\W", "\\s", "\\S", "[\\d\\s_]", "."])
def test_rewritten_classes_agree_with_regex_on_every_assigned_code_point(cls: str) -> None:
    text = assigned(0, 0x30000)
    spelled = re2_spelling(cls, 0)
    assert spelled is not None and _unicode_program(cls, 0) is not None
    ours = set(re2.findall(spelled, text))
    reference = set(regex.findall(cls, text))
    differ = sorted(ours ^ reference)
    # both engines follow the Unicode tables of their own release: a few dozen new letters
    assert len(differ) <= 200, [hex(ord(c)) for c in differ[:20]]


ATOMS = st.sampled_from(
    ["a", "b", "é", "\\d", "\\w", "\\s", "\\W", "\\S", "\\D", ".", "[ab]", "[^a\\d]", "[\\w-]",
     "\\.", "\\n", "x", "1", "\\Z", "^", "$"]
)  # fmt: skip


@st.composite
def patterns(draw: st.DrawFn) -> str:
    pieces = draw(st.lists(ATOMS, min_size=1, max_size=5))
    quantified = [p + draw(st.sampled_from(["", "", "*", "+", "?", "{1,2}", "*?"])) for p in pieces]
    if draw(st.booleans()):
        return "(" + "".join(quantified[:2]) + "|" + "".join(quantified[2:]) + ")"
    return "".join(quantified)


@settings(max_examples=300, deadline=None)
@given(
    body=patterns(),
    flags=st.sampled_from([0, regex.IGNORECASE, regex.MULTILINE, regex.DOTALL]),
    anchored=st.booleans(),
    text=st.text(alphabet="ab1 \n.éÉ_-xX٣\u2028", max_size=12),
)
def test_re2_path_agrees_with_the_regex_engine(
    body: str, flags: int, anchored: bool, text: str
) -> None:
    pattern = compile_pattern(body, flags, anchored)
    program = pattern.program if text.isascii() else _unicode_program(body, flags)
    if program is None:
        return  # the worker runs the regex engine itself
    compiled = regex.compile(body, flags)
    reference = (compiled.match if anchored else compiled.search)(text) is not None
    assert match(pattern, text, 1.0) == (reference, "re2"), pattern


@pytest.mark.parametrize(
    "body", ["a{99999999999999999999}", "a{4294967296}", "a{2,1001}", "a{0001001}", "x{5000,}"]
)
def test_a_repeat_past_re2_s_limit_keeps_the_regex_engine_s_meaning(body: str) -> None:
    """RE2 reads ``a{1001}`` and beyond as literal text; ``regex`` repeats or refuses it. Such a
    pattern is never spelled for RE2: its outcome is the regex engine's, an error included."""
    assert re2_spelling(body, 0) is None
    assert re2_spelling("a{1000}", 0) == "a{1000}" and re2_spelling("a{2,}", 0) == "a{2,}"
    text = "a" * 1100  # a repeat to regex; RE2 would look for the braces themselves
    try:
        compiled = regex.compile(body)
    except regex.error:
        with pytest.raises(MetricError, match="repeat count too big"):
            match(compile_pattern(body, 0, False), text, 5.0)
        return
    expected = compiled.search(text) is not None
    assert match(compile_pattern(body, 0, False), text, 5.0) == (expected, "backtracking")


def test_the_regex_metric_pickles_for_a_ray_worker() -> None:
    """The run's backtracking budget holds a lock; the metric still crosses to another process."""
    import pickle

    from assay.metrics.registry import resolve

    metric = resolve("regex")
    copy = pickle.loads(pickle.dumps(metric))
    assert copy.run_budget_s == metric.run_budget_s
    assert copy.budget.seconds == metric.budget.seconds
    with copy.budget._lock:  # a lock of its own
        pass
