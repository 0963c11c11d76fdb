"""Lexical metrics: exact-match, contains, regex, rouge-l.

ROUGE-L is checked against the ``rouge-score`` package (Google's reference implementation)
given a tokenizer equal to assay's, on seeded random sentence pairs.
"""

from __future__ import annotations

import random
from dataclasses import fields
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rouge_score import rouge_scorer

from assay.data.dataset import Sample
from assay.data.outputs import Output
from assay.errors import MetricConfigError, MetricError
from assay.metrics.base import MetricScore
from assay.metrics.lexical import Contains, ExactMatch, Regex, RougeL, parse_delimited, tokenize


def sample(expected: object, **metadata: object) -> Sample:
    return Sample(id="s1", input={}, expected_output=expected, metadata=metadata)


# --------------------------------------------------------------------------- exact-match


@pytest.mark.parametrize(
    ("expected", "actual", "value"),
    [
        ("Paris", "Paris", 1.0),
        ("Paris", "Paris.", 0.0),
        ("Paris", "paris", 0.0),
        ("Paris", "Paris ", 0.0),
        ("Paris", " Paris", 0.0),
        ("", "", 1.0),
        ("", " ", 0.0),
        ("caf\u00e9", "cafe\u0301", 0.0),  # no Unicode normalisation either
        ("日本", "日本", 1.0),
    ],
)
def test_exact_match_is_byte_equality(expected: str, actual: str, value: float) -> None:
    score = ExactMatch().score(sample(expected), Output(actual))
    assert score.value == value
    assert score.details == {"match": value == 1.0}


@pytest.mark.parametrize(
    ("expected", "type_label"),
    [
        (42, "number"),
        (1.5, "number"),
        (None, "null"),
        (True, "boolean"),
        (["a"], "list"),
        ({"a": 1}, "mapping"),
    ],
)
def test_exact_match_rejects_non_string_expected(expected: object, type_label: str) -> None:
    with pytest.raises(
        MetricError, match=f"expected_output must be a string for exact-match; got {type_label}"
    ):
        ExactMatch().score(sample(expected), Output("42"))


# --------------------------------------------------------------------------- contains


def test_contains_finds_substring_case_sensitively() -> None:
    text = "The capital of France is Paris, a city of about 2.1 million."
    assert Contains().score(sample("Paris"), Output(text)).value == 1.0
    assert Contains().score(sample("paris"), Output(text)).value == 0.0
    assert Contains().score(sample("Lyon"), Output(text)).details == {"match": False}


def test_contains_case_insensitive_option_casefolds() -> None:
    metric = Contains(case_sensitive=False)
    assert metric.score(sample("PARIS"), Output("it is paris")).value == 1.0
    assert metric.score(sample("STRASSE"), Output("die straße")).value == 1.0  # casefold, not lower
    assert metric.score(sample("Lyon"), Output("it is paris")).value == 0.0


@pytest.mark.parametrize("expected", ["", "   ", "\n\t"])
def test_contains_rejects_empty_expected(expected: str) -> None:
    with pytest.raises(MetricError, match="must not be empty for contains"):
        Contains().score(sample(expected), Output("anything"))


def test_contains_rejects_non_string_expected() -> None:
    with pytest.raises(MetricError, match="must be a string for contains; got list"):
        Contains().score(sample(["Paris"]), Output("Paris"))


# --------------------------------------------------------------------------- regex: delimiters


@pytest.mark.parametrize(
    ("pattern", "body"),
    [
        ("/ORD-\\d{6}/", "ORD-\\d{6}"),
        ("#a/b#", "a/b"),
        ("~x~", "x"),
        ("(ab(c))", "ab(c)"),
        ("[a[0-9]]", "a[0-9]"),
        ("{a{2}}", "a{2}"),
        ("<a<b>", "a<b"),
        ("//", ""),
    ],
)
def test_delimiters_including_bracket_pairs(pattern: str, body: str) -> None:
    assert parse_delimited(pattern)[0] == body


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        ("/", "must be delimited"),
        ("", "must be delimited"),
        ("abc", "must start with a delimiter"),
        ("1abc1", "must start with a delimiter"),
        (" abc ", "must start with a delimiter"),
        ("\\abc\\", "must start with a delimiter"),
        ("/abc", "no closing delimiter '/'"),
        ("(abc(", "no closing delimiter '\\)'"),
        ("/abc/z", "unknown regex modifier 'z'"),
        ("/abc/iq", "unknown regex modifier 'q'"),
        ("/abc/U", "modifier 'U' \\(ungreedy\\) is not supported"),
        ("/a+b/iU", "modifier 'U'"),
    ],
)
def test_bad_patterns_raise_metric_error(pattern: str, message: str) -> None:
    with pytest.raises(MetricError, match=message):
        Regex().score(sample(pattern), Output("abc"))


def test_invalid_regex_body_is_a_metric_error() -> None:
    with pytest.raises(MetricError, match="invalid regex pattern"):
        Regex().score(sample("/(unclosed/"), Output("abc"))


def test_regex_rejects_non_string_expected() -> None:
    with pytest.raises(MetricError, match="must be a string for regex; got number"):
        Regex().score(sample(7), Output("7"))


# --------------------------------------------------------------------------- regex: flags


@pytest.mark.parametrize(
    ("pattern", "text", "value"),
    [
        # search semantics: unanchored unless the pattern anchors
        ("/ORD-\\d{6}/", "your order is ORD-123456, thanks", 1.0),
        ("/^ORD-\\d{6}$/", "your order is ORD-123456", 0.0),
        ("/^ORD-\\d{6}$/", "ORD-123456", 1.0),
        # i: case-insensitive
        ("/order #[0-9]+/", "ORDER #12", 0.0),
        ("/order #[0-9]+/i", "ORDER #12", 1.0),
        # m: ^ and $ at line boundaries
        ("/^b$/", "a\nb\nc", 0.0),
        ("/^b$/m", "a\nb\nc", 1.0),
        # s: dot matches newline
        ("/a.b/", "a\nb", 0.0),
        ("/a.b/s", "a\nb", 1.0),
        # x: whitespace and comments in the pattern are ignored
        ("/a b c/", "abc", 0.0),
        ("/a b c # letters\n/x", "abc", 1.0),
        # A: anchored at the start of the subject (preg's PCRE_ANCHORED)
        ("/bc/", "abc", 1.0),
        ("/bc/A", "abc", 0.0),
        ("/ab/A", "abc", 1.0),
        # D: '$' matches only at the very end, not before a final newline
        ("/abc$/", "abc\n", 1.0),
        ("/abc$/D", "abc\n", 0.0),
        ("/abc$/D", "abc", 1.0),
        ("/abc\\$/D", "abc$", 1.0),
        # u: accepted (patterns are Unicode already)
        ("/^\\w+$/u", "héllo", 1.0),
        # combined flags, and bracket delimiters with flags
        ("{^b.C$}ims", "a\nb\nc", 1.0),
        ("(^B$)mi", "a\nb", 1.0),
    ],
)
def test_regex_flags(pattern: str, text: str, value: float) -> None:
    score = Regex().score(sample(pattern), Output(text))
    assert score.value == value
    assert score.details["match"] is (value == 1.0)
    # x mode is the only construct here RE2 cannot spell; it runs in the backtracking worker
    assert score.details["engine"] == (
        "backtracking" if "x" in pattern.rsplit("/", 1)[-1] else "re2"
    )


def test_regex_timeout_option_is_validated() -> None:
    with pytest.raises(MetricConfigError, match="timeout_s"):
        Regex(timeout_s=0)
    with pytest.raises(MetricConfigError, match="timeout_s"):
        Regex(timeout_s=61)


# --------------------------------------------------------------------------- regex: time bound

BOUND_S = 0.25


@pytest.mark.parametrize("pattern", ["/^(a+)+$/", "/(a|aa)+$/"])
def test_catastrophic_patterns_run_in_linear_time_under_re2(pattern: str) -> None:
    """Classic ReDoS patterns are plain regular expressions: RE2 answers them without
    backtracking, so they score (no match: the subject ends in 'b') instead of timing out."""
    result = Regex(timeout_s=BOUND_S).score(sample(pattern), Output("a" * 40 + "b"))
    assert (result.value, result.details["engine"]) == (0.0, "re2")


def test_exponential_backtracking_pattern_is_reported_as_timeout() -> None:
    # the lookbehind keeps this one out of RE2, so the worker's wall-clock limit ends it
    with pytest.raises(MetricError, match=r"did not finish within 0\.25s"):
        Regex(timeout_s=BOUND_S).score(sample("/(a|aa)+(?<!c)$/"), Output("a" * 40 + "b"))


# --------------------------------------------------------------------------- rouge-l: tokens


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("Hello, World!", ["hello", "world"]),
        ("snake_case-and kebab", ["snake", "case", "and", "kebab"]),
        ("Ünïcödé ÇA VA 42x", ["ünïcödé", "ça", "va", "42x"]),
        ("日本語のテキスト。次", ["日本語のテキスト", "次"]),
        ("Ελληνικά ΚΕΙΜΕΝΑ", ["ελληνικά", "κειμενα"]),
        ("cafe\u0301", ["cafe"]),  # combining marks separate tokens (as PCRE [[:alnum:]])
        ("...   \n\t", []),
        ("", []),
        ("٣ apples", ["٣", "apples"]),  # Unicode digits are token characters
    ],
)
def test_tokenize_unicode_alnum_runs(text: str, tokens: list[str]) -> None:
    assert tokenize(text) == tokens


# --------------------------------------------------------------------------- rouge-l: values


class AssayTokenizer:
    """rouge-score accepts any object with ``tokenize``; give it assay's tokens."""

    def tokenize(self, text: str) -> list[str]:
        return tokenize(text)


VOCABULARY = [
    "the",
    "a",
    "refund",
    "window",
    "is",
    "thirty",
    "days",
    "from",
    "delivery",
    "order",
    "Paris",
    "PARIS",
    "capital",
    "of",
    "France",
    "ORD",
    "123456",
    "30",
    "x2",
    "policy",
    "naïve",
    "café",
    "Straße",
    "Ελλάδα",
    "μήνας",
    "日本語",
    "東京",
    "Москва",
    "привет",
    "مرحبا",
    "שלום",
    "हिन्दी",
    "٣٠",
    "Ünïcödé",
    "emoji🙂word",
    "snake_case",
    "re-try",
]
PUNCTUATION = ["", "", "", ",", ".", "!", "?", " -", ";", "…", "¿", "«", "»"]


def random_sentence(rng: random.Random, length: int) -> str:
    words = [rng.choice(VOCABULARY) + rng.choice(PUNCTUATION) for _ in range(length)]
    separators = [rng.choice([" ", " ", " ", "  ", "\n", "\t", "\u00a0"]) for _ in words]
    return "".join(w + s for w, s in zip(words, separators, strict=True)).strip()


def random_pair(rng: random.Random) -> tuple[str, str]:
    reference = random_sentence(rng, rng.randint(1, 40))
    if rng.random() < 0.6:  # a perturbed copy: deletions, insertions and swaps
        words = reference.split()
        edited: list[str] = []
        for word in words:
            roll = rng.random()
            if roll < 0.15:
                continue
            if roll < 0.3:
                edited.append(random_sentence(rng, rng.randint(1, 3)))
            edited.append(word)
        if len(edited) > 2 and rng.random() < 0.5:
            i, j = rng.randrange(len(edited)), rng.randrange(len(edited))
            edited[i], edited[j] = edited[j], edited[i]
        candidate = " ".join(edited) or random_sentence(rng, 1)
    else:
        candidate = random_sentence(rng, rng.randint(1, 40))
    return reference, candidate


def test_rouge_l_agrees_with_rouge_score_on_random_pairs() -> None:
    rng = random.Random(20240611)
    scorer = rouge_scorer.RougeScorer(["rougeL"], tokenizer=AssayTokenizer())
    metric = RougeL()
    checked = 0
    for _ in range(1500):
        reference, candidate = random_pair(rng)
        if not tokenize(reference) and not tokenize(candidate):
            continue  # both empty: assay says 1.0 by definition, rouge-score says 0.0
        ours = metric.score(sample(reference), Output(candidate))
        theirs = scorer.score(reference, candidate)["rougeL"]
        assert ours.details["precision"] == pytest.approx(theirs.precision, abs=1e-9)
        assert ours.details["recall"] == pytest.approx(theirs.recall, abs=1e-9)
        assert ours.value == pytest.approx(theirs.fmeasure, abs=1e-9)
        checked += 1
    assert checked >= 1000


def test_rouge_l_scores_are_plain_checked_scores() -> None:
    """score() builds its result without MetricScore's checks; it is the same object as the
    checked construction (every field set, a float value in [0, 1], no usage)."""
    rng = random.Random(7)
    metric = RougeL()
    for _ in range(300):
        reference, candidate = random_pair(rng)
        ours = metric.score(sample(reference), Output(candidate))
        assert ours == MetricScore(ours.value, dict(ours.details))
        assert type(ours.value) is float and 0.0 <= ours.value <= 1.0 and ours.usage is None
    assert [f.name for f in fields(MetricScore)] == ["value", "details", "usage"]


def test_rouge_l_extreme_beta_is_an_error_not_nan() -> None:
    """beta * beta overflows: F is inf / inf, which MetricScore refuses (as before)."""
    with pytest.raises(MetricError, match=r"must be in \[0.0, 1.0\]; got nan"):
        RougeL(beta=1e200).score(sample("a b c"), Output("a b x"))


def test_rouge_l_worked_example() -> None:
    # reference 4 tokens, candidate 3 tokens, LCS = "a b" (2 tokens)
    score = RougeL().score(sample("A b, c d."), Output("a b x"))
    assert score.details == {"lcs_tokens": 2, "precision": 2 / 3, "recall": 0.5}
    assert score.value == pytest.approx(
        float(Fraction(2, 1) * Fraction(2, 3) * Fraction(1, 2) / (Fraction(2, 3) + Fraction(1, 2)))
    )


def test_rouge_l_beta_weights_recall() -> None:
    # P = 2/3, R = 1/2; F_beta = (1 + b^2) P R / (R + b^2 P); beta = 2 -> 10/19
    score = RougeL(beta=2.0).score(sample("a b c d"), Output("a b x"))
    assert score.value == pytest.approx(float(Fraction(10, 19)), abs=1e-12)
    # beta = 0.5 -> 1.25 * (1/3) / (1/2 + 1/6) = 5/8
    score = RougeL(beta=0.5).score(sample("a b c d"), Output("a b x"))
    assert score.value == pytest.approx(0.625, abs=1e-12)


def test_rouge_l_empty_sides() -> None:
    assert RougeL().score(sample(""), Output("!!")).details == {
        "lcs_tokens": 0,
        "precision": 1.0,
        "recall": 1.0,
    }
    assert RougeL().score(sample("..."), Output("")).value == 1.0
    one_empty = RougeL().score(sample("words here"), Output(" , "))
    assert one_empty.value == 0.0
    assert one_empty.details == {"lcs_tokens": 0, "precision": 0.0, "recall": 0.0}
    assert RougeL().score(sample(""), Output("words")).value == 0.0


def test_rouge_l_no_common_token_scores_zero() -> None:
    score = RougeL().score(sample("alpha beta"), Output("gamma delta"))
    assert score.value == 0.0
    assert score.details["lcs_tokens"] == 0


def test_rouge_l_token_cap() -> None:
    metric = RougeL(max_tokens=3)
    assert metric.score(sample("a b c"), Output("a b c")).value == 1.0
    with pytest.raises(
        MetricError, match="expected_output has 4 tokens; rouge-l supports at most 3"
    ):
        metric.score(sample("a b c d"), Output("a"))
    with pytest.raises(MetricError, match="output has 5 tokens; rouge-l supports at most 3"):
        metric.score(sample("a"), Output("a b c d e"))


def test_rouge_l_default_cap_is_1024_tokens() -> None:
    ok = " ".join(["w"] * 1024)
    assert RougeL().score(sample(ok), Output(ok)).value == 1.0
    with pytest.raises(MetricError, match="has 1025 tokens"):
        RougeL().score(sample(ok + " w"), Output(ok))


@pytest.mark.parametrize(
    "options", [{"max_tokens": 0}, {"max_tokens": -3}, {"beta": 0}, {"beta": -1.0}]
)
def test_rouge_l_rejects_bad_options(options: dict[str, float]) -> None:
    with pytest.raises(MetricConfigError):
        RougeL(**options)


def test_rouge_l_rejects_non_string_expected() -> None:
    with pytest.raises(MetricError, match="must be a string for rouge-l; got mapping"):
        RougeL().score(sample({"text": "a"}), Output("a"))


def _alnum_runs(text: str) -> list[str]:
    """Independent statement of the token rule: maximal runs of str.isalnum() characters."""
    tokens: list[str] = []
    current: list[str] = []
    for char in text.lower():
        if char.isalnum():
            current.append(char)
        elif current:
            tokens.append("".join(current))
            current = []
    if current:
        tokens.append("".join(current))
    return tokens


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_tokenize_is_maximal_alnum_runs(text: str) -> None:
    assert tokenize(text) == _alnum_runs(text)
