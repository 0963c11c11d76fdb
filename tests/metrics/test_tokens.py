"""The tokenizer's fast paths give the tokens of its definition, ``[^\\W_]+`` on ``lower()``."""

from __future__ import annotations

import random
import re
import sys
import unicodedata

import pytest
import rapidfuzz
from rapidfuzz.utils import default_process

from assay.metrics import tokens
from assay.metrics.tokens import DIFFERENT_RANGES, VERIFIED_FOR, tokenize

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
