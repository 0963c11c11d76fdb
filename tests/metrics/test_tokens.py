"""The tokenizer's fast paths give the tokens of its definition, ``[^\\W_]+`` on ``lower()``:
``tokenize`` text by text and ``tokenize_all`` over a batch."""

from __future__ import annotations

import random
import re
import sys
import unicodedata

import pytest
import rapidfuzz
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rapidfuzz.utils import default_process

from assay.metrics import tokens
from assay.metrics.tokens import DIFFERENT_RANGES, VERIFIED_FOR, tokenize, tokenize_all

DEFINITION = re.compile(r"[^\W_]+")


def reference(text: str) -> list[str]:
    return DEFINITION.findall(text.lower())


def different_code_points() -> list[int]:
    """Every code point where default_process + split may not give the definition's tokens."""
    found = []
    for cp in range(sys.maxunicode + 1):
        char = chr(cp)
        if 0xD800 <= cp <= 0xDFFF or char == "\u03a3":  # surrogates; sigma depends on context
            found.append(cp)
            continue
        lowered, processed = char.lower(), default_process(char)
        if char.isalnum():
            same = len(lowered) == 1 and lowered.isalnum() and processed == lowered
        else:
            same = not any(c.isalnum() for c in lowered) and processed.strip() == ""
        if not same:
            found.append(cp)
    return found


verified = pytest.mark.skipif(
    (rapidfuzz.__version__, unicodedata.unidata_version) != VERIFIED_FOR,
    reason="the fast path is off for this rapidfuzz / Unicode pair (the regex runs)",
)


@verified
def test_the_table_of_different_code_points_is_exact() -> None:
    assert tokens.FAST
    listed = [cp for low, high in DIFFERENT_RANGES for cp in range(low, high + 1)]
    assert listed == different_code_points()


@verified
def test_the_fast_path_is_character_by_character() -> None:
    """default_process maps each character on its own: random strings of the other code points."""
    skip = {cp for low, high in DIFFERENT_RANGES for cp in range(low, high + 1)}
    rng = random.Random(4)
    letters, others = [], []
    for cp in range(sys.maxunicode + 1):
        if cp not in skip:
            (letters if chr(cp).isalnum() else others).append(chr(cp))
    for _ in range(30_000):
        text = "".join(
            rng.choice(letters if rng.random() < 0.7 else others) for _ in range(rng.randint(0, 16))
        )
        assert default_process(text).split() == reference(text), ascii(text)


WORDS = ["Refund", "ΣΟΦΙΑ", "Σ", "İstanbul", "naïve", "Straße", "東京", "हिन्दी", "x_y", "30%"]
WORDS += ["\u0870abc", "a\U0001e7e0", "ﬁne", "ǅ", "Ⅻ", "²", "\ud800", "e\u0301", "\u00a0", "—"]


def test_tokenize_equals_its_definition_on_mixed_text() -> None:
    rng = random.Random(9)
    for _ in range(5_000):
        words = [rng.choice(WORDS) for _ in range(rng.randint(0, 8))]
        text = rng.choice(["", " ", ", ", "\n", "-"]).join(words) + rng.choice(["", ".", " !"])
        assert tokenize(text) == reference(text), ascii(text)


def test_tokenize_all_equals_its_definition_across_chunks() -> None:
    """Batches longer than a chunk, with a listed code point in some chunks only (those go text
    by text) and none in others (one table look-up for the chunk)."""
    rng = random.Random(11)
    plain = ["Refund", "naïve", "Straße", "東京", "हिन्दी", "x_y", "30%", "Ⅻ", "—", "\u00a0"]
    texts = []
    for n in range(1_000):
        words = [rng.choice(plain) for _ in range(rng.randint(0, 8))]
        if n % 200 == 7:  # a few chunks hold one of the code points where the fast path differs
            words.append(rng.choice(["ΣΟΦΙΑ", "İstanbul", "a\U0001e7e0", "\ud800", "🙂", "\u0870"]))
        texts.append(rng.choice(["", " ", ", ", "\n"]).join(words))
    assert list(tokenize_all(texts)) == [reference(text) for text in texts]
    assert list(tokenize_all(texts[:1])) == [reference(texts[0])]
    assert list(tokenize_all([])) == []
    assert list(tokenize_all(["ASCII only, here."] * 100)) == [["ascii", "only", "here"]] * 100
    # a long chunk is looked up in blocks: the final sigma sits past the first block
    long = ["naïve " * 20_000 + "ΟΔΟΣ", "plain"]
    assert list(tokenize_all(long)) == [reference(text) for text in long]
    assert next(tokenize_all(long))[-1] == "\u03bf\u03b4\u03bf\u03c2"  # final sigma


@verified
def test_the_batch_table_flags_exactly_the_listed_code_units() -> None:
    """tokenize_all's look-up table over UTF-16 code units: the listed code points below
    U+10000, and every surrogate (a lone one, or half of a code point past U+FFFF)."""
    listed = {cp for low, high in DIFFERENT_RANGES for cp in range(low, high + 1)}
    table = tokens._different_units()
    flagged = {unit for unit in range(0x10000) if table[unit]}
    assert flagged == {cp for cp in listed if cp <= 0xFFFF} | set(range(0xD800, 0xE000))
    assert not table.flags.writeable


# Any code point, the surrogates and the listed ones made likely, with separators around.
SPECIAL = "İΣσςß\ud800\udfff\u0870\u9ffd\ua7c0\U00010570\U0001e7e0🙂\u0301_- .,\n\t"
CHARACTERS = st.one_of(
    st.characters(), st.characters(codec="ascii"), st.sampled_from(SPECIAL), st.just("Σ")
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts=st.lists(st.text(CHARACTERS, max_size=40), max_size=150))
def test_tokenizers_equal_the_definition_on_any_text(texts: list[str]) -> None:
    expected = [reference(text) for text in texts]
    assert [tokenize(text) for text in texts] == expected
    assert list(tokenize_all(texts)) == expected
