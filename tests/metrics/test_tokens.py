"""The tokenizer's fast paths give the tokens of its definition, ``[^\\W_]+`` on ``lower()``:
``tokenize`` text by text and ``tokenize_all`` over a batch."""

from __future__ import annotations

import random
import re
import sys
import unicodedata
from itertools import pairwise

import pytest
import rapidfuzz
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rapidfuzz.utils import default_process

from assay.metrics import tokens
from assay.metrics.tokens import (
    DIFFERENT_RANGES,
    VERIFIED_FOR,
    token_keys,
    token_keys_all,
    tokenize,
    tokenize_all,
)

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
    assert list(map(as_text, token_keys_all(texts))) == [reference(text) for text in texts]
    assert list(tokenize_all(texts[:1])) == [reference(texts[0])]
    assert list(tokenize_all([])) == []
    assert list(tokenize_all(["ASCII only, here."] * 100)) == [["ascii", "only", "here"]] * 100
    # a long chunk is looked up in blocks: the final sigma sits past the first block
    long = ["naïve " * 20_000 + "ΟΔΟΣ", "plain"]
    assert list(tokenize_all(long)) == [reference(text) for text in long]
    assert list(map(as_text, token_keys_all(long))) == [reference(text) for text in long]
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


class Consulted:
    """Stands in for the listed code points' regex: says "found" and counts the calls."""

    def __init__(self) -> None:
        self.calls = 0

    def search(self, text: str) -> object:
        self.calls += 1
        return self


@verified
def test_the_block_look_up_never_clears_a_listed_code_point(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``_regular`` says a text is clear without the regex only where it holds none of the
    listed code points: every code point, after a non-ASCII letter (the look-up's path) and
    between others; and the common scripts (Latin, Greek, Cyrillic, CJK, Devanagari) do clear
    without the regex, which is what the look-up is for."""
    listed = {cp for low, high in DIFFERENT_RANGES for cp in range(low, high + 1)}
    regex = Consulted()
    monkeypatch.setattr(tokens, "_DIFFERENT", regex)
    for cp in range(sys.maxunicode + 1):
        if cp in listed:
            assert not tokens._regular("é" + chr(cp)), hex(cp)
            assert not tokens._regular("Ωx" + chr(cp) + "İ東"), hex(cp)
    assert regex.calls >= len(listed)
    regex.calls = 0
    assert tokens._regular("Straße naïve ΟΔΟς Москва 東京 हिन्दी Ünïcödé ĀĒ 123")
    assert regex.calls == 0
    assert tokens._regular("ΟΔΟΣ") is False
    assert tokens._regular("İ") is False


@verified
def test_the_block_marks() -> None:
    """A block of 256 code points is marked unless it holds no listed code point; the two
    blocks that hold only U+0130 and only U+03A3 are marked with their number."""
    listed = {cp for low, high in DIFFERENT_RANGES for cp in range(low, high + 1)}
    for block in range(256):
        inside = {cp for cp in listed if cp >> 8 == block}
        expected = 0 if not inside else block if inside in ({0x130}, {0x3A3}) else 0x80
        assert tokens._BLOCKS[block] == expected, hex(block)
    assert tokens._BLOCKS[1] == 1 and tokens._BLOCKS[3] == 3


def as_text(keys: list[bytes]) -> list[str]:
    """token_keys' keys as the tokens they stand for."""
    assert all(type(key) is bytes for key in keys)
    return [key.decode("utf-8") for key in keys]


def pair_tokens(first: str, second: str) -> tuple[list[str], list[str]]:
    keys = token_keys(first, second)
    return as_text(keys[0]), as_text(keys[1])


def test_token_keys_join_no_surrogates() -> None:
    """A lone high surrogate ending one text and a lone low one starting the other are still
    two lone surrogates (the regex's tokens), not one code point."""
    assert (
        pair_tokens("a\ud83d", "\ude00b")
        == (["a"], ["b"])
        == (
            reference("a\ud83d"),
            reference("\ude00b"),
        )
    )
    assert pair_tokens("ΟΔΟΣ", "naïve") == (["οδος"], ["naïve"])
    assert pair_tokens("Straße, 東京!", "naïve\u3000x") == (["straße", "東京"], ["naïve", "x"])
    assert token_keys("", "") == ([], [])


@verified
def test_default_process_leaves_letters_digits_and_ascii_spaces() -> None:
    """What lets token_keys split UTF-8 bytes where tokenize splits the string: on every code
    point but the listed ones, default_process gives one letter or digit (not a space) or an
    ASCII space, so its output holds no other whitespace (and no byte of a multi-byte UTF-8
    character is ASCII)."""
    listed = {cp for low, high in DIFFERENT_RANGES for cp in range(low, high + 1)}
    for cp in range(sys.maxunicode + 1):
        if cp in listed:
            continue
        char = chr(cp)
        processed = default_process("a" + char + "b")
        if char.isalnum():
            assert len(processed) == 3 and processed[1].isalnum(), hex(cp)
            assert not processed[1].isspace(), hex(cp)
        else:
            assert processed == "a b", hex(cp)


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
    assert list(map(as_text, token_keys_all(texts))) == expected
    pairs = [pair_tokens(first, second) for first, second in pairwise(texts)]
    assert pairs == list(pairwise(expected))


def test_without_the_fast_path_every_tokenizer_gives_the_definition(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Another rapidfuzz or Unicode release turns the fast path off: the ASCII table and the
    regex give the same tokens, and the keys are their UTF-8 bytes."""
    monkeypatch.setattr(tokens, "FAST", False)
    rng = random.Random(5)
    texts = ["", "ASCII only, here.", "ΟΔΟΣ İstanbul", "a\U0001e7e0 \ud800x"]
    texts += [" ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 8))) for _ in range(300)]
    expected = [reference(text) for text in texts]
    assert [tokenize(text) for text in texts] == expected
    assert list(tokenize_all(texts)) == expected
    assert list(map(as_text, token_keys_all(texts))) == expected
    assert [pair_tokens(a, b) for a, b in pairwise(texts)] == list(pairwise(expected))
