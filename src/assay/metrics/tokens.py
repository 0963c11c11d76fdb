"""The rouge-l / bertscore tokens: lower-cased maximal runs of Unicode letters and digits.

The definition is ``re.findall(r"[^\\W_]+", text.lower())``. Faster paths give the same
tokens: rapidfuzz's ``default_process`` (C++: letters and digits lower-cased, everything else a
space) and ``split``, for text that holds none of the code points where the two disagree (nor
any past U+FFFF). Those (:data:`DIFFERENT_RANGES`) were found by comparing every code point
under one rapidfuzz release and one Unicode database; with any other pair that path is off
(tests/metrics/test_tokens.py recomputes the table and checks it), and ASCII text is mapped
with one ``str.translate`` table and split instead. Everything else goes through the regex.
A text is looked at block by block first (256 code points, the high byte of each UTF-16 code
unit, one ``bytes.translate``): most text holds no block with a listed code point, and the
regex's scan (about three times the cost) runs only where one is.

:func:`tokenize_all` gives the same tokens for many texts (the rouge-l batch): it looks for
those code points in a chunk of texts at once, one numpy table look-up per UTF-16 code unit,
where :func:`tokenize` runs one regex scan per text (about three times the cost per character).
"""

from __future__ import annotations

import re
import unicodedata
from codecs import utf_16_le_encode
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import cache
from itertools import chain
from typing import TYPE_CHECKING, TypeVar

import rapidfuzz
from rapidfuzz.utils import default_process

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

_T = TypeVar("_T")
_TOKEN = re.compile(r"[^\W_]+")
# ASCII: every non-alphanumeric becomes a space and A-Z become a-z, then split.
_ASCII_TOKENS = str.maketrans(
    {
        chr(c): (chr(c).lower() if chr(c).isalnum() else " ")
        for c in range(128)
        if not chr(c).isalnum() or chr(c).isupper()
    }
)
VERIFIED_FOR = ("3.14.6", "14.0.0")  # rapidfuzz.__version__, unicodedata.unidata_version
# Code points whose tokens differ, as inclusive ranges: lower() gives several characters
# (U+0130), the capital sigma (its lower case depends on the next letter), surrogates, and
# letters and digits newer than rapidfuzz's Unicode tables.
DIFFERENT_RANGES = (
    (0x130, 0x130), (0x3A3, 0x3A3), (0x870, 0x887), (0x889, 0x88E), (0x8B5, 0x8B5),
    (0x8C8, 0x8C9), (0xC5D, 0xC5D), (0xCDD, 0xCDD), (0x170D, 0x170D), (0x171F, 0x171F),
    (0x1B4C, 0x1B4C), (0x2C2F, 0x2C2F), (0x2C5F, 0x2C5F), (0x9FFD, 0x9FFF), (0xA7C0, 0xA7C1),
    (0xA7D0, 0xA7D1), (0xA7D3, 0xA7D3), (0xA7D5, 0xA7D9), (0xA7F2, 0xA7F4), (0xD800, 0xDFFF),
    (0x10570, 0x1057A), (0x1057C, 0x1058A), (0x1058C, 0x10592), (0x10594, 0x10595),
    (0x10597, 0x105A1), (0x105A3, 0x105B1), (0x105B3, 0x105B9), (0x105BB, 0x105BC),
    (0x10780, 0x10785), (0x10787, 0x107B0), (0x107B2, 0x107BA), (0x10F70, 0x10F81),
    (0x11071, 0x11072), (0x11075, 0x11075), (0x11740, 0x11746), (0x11AB0, 0x11ABF),
    (0x12F90, 0x12FF0), (0x16A70, 0x16ABE), (0x16AC0, 0x16AC9), (0x1AFF0, 0x1AFF3),
    (0x1AFF5, 0x1AFFB), (0x1AFFD, 0x1AFFE), (0x1B11F, 0x1B122), (0x1DF00, 0x1DF1E),
    (0x1E290, 0x1E2AD), (0x1E7E0, 0x1E7E6), (0x1E7E8, 0x1E7EB), (0x1E7ED, 0x1E7EE),
    (0x1E7F0, 0x1E7FE), (0x2A6DE, 0x2A6DF), (0x2B735, 0x2B738),
)  # fmt: skip
# What sends a text to the regex: the ranges above in the BMP, and every code point past it
# (rare in text; a class of BMP characters only is one table look-up per character).
_DIFFERENT = re.compile(
    "["
    + "".join(f"\\u{low:04x}-\\u{high:04x}" for low, high in DIFFERENT_RANGES if high <= 0xFFFF)
    + "\\U00010000-\\U0010ffff]"
)
FAST = (rapidfuzz.__version__, unicodedata.unidata_version) == VERIFIED_FOR
# Listed code points that are alone in their block of 256 (U+0100..U+01FF, U+0300..U+03FF: the
# Latin Extended-A and Greek of much text): looked for by ``in``, not by the regex.
_ALONE = ("\u0130", "\u03a3")


def _block_marks() -> bytes:
    """A byte per block of 256 BMP code points: 0 where no code point is listed, the block's
    number where only one of :data:`_ALONE` is (below 0x80), 0x80 where the regex decides
    (every surrogate block among them: past U+FFFF, UTF-16 gives surrogates)."""
    listed = [cp for low, high in DIFFERENT_RANGES for cp in range(low, min(high, 0xFFFF) + 1)]
    marks = bytearray(256)
    for cp in listed:
        marks[cp >> 8] = 0x80
    for char in _ALONE:
        block = ord(char) >> 8
        if [cp for cp in listed if cp >> 8 == block] == [ord(char)]:
            marks[block] = block
    return bytes(marks)


_BLOCKS = _block_marks()


def tokenize(text: str) -> list[str]:
    """Lower-cased maximal runs of Unicode letters and digits (the rouge-l/bertscore tokens)."""
    if FAST:
        if text.isascii() or _regular(text):
            return default_process(text).split()
    elif text.isascii():
        return text.translate(_ASCII_TOKENS).split()
    return _TOKEN.findall(text.lower())


def token_keys(first: str, second: str) -> tuple[list[bytes], list[bytes]]:
    """The tokens of two texts (rouge-l's reference and candidate) as UTF-8 bytes: keys to
    compare them by, cheaper to make than strings. On the fast path they come from splitting
    default_process's output as bytes: it leaves letters, digits and ASCII spaces only
    (tests/metrics/test_tokens.py checks every code point), and no byte of a multi-byte UTF-8
    character is an ASCII space, so bytes.split cuts where str.split does.

    Both texts are looked at in one go: a listed code point is one code point of either text
    (every surrogate is listed, so joining a lone high one and a lone low one changes nothing).
    """
    if FAST:
        both = first + second
        if both.isascii() or _regular(both):
            return default_process(first).encode().split(), default_process(second).encode().split()
    return _keys(first), _keys(second)


def _keys(text: str) -> list[bytes]:
    """``tokenize(text)`` as UTF-8 bytes (a token is letters and digits: never a surrogate)."""
    if FAST and (text.isascii() or _regular(text)):
        return default_process(text).encode().split()
    return [token.encode() for token in tokenize(text)]


def _regular(text: str) -> bool:
    """Whether ``text`` holds none of the listed code points (default_process gives its tokens).
    First a look-up of each UTF-16 code unit's high byte in :data:`_BLOCKS`, then ``in`` for the
    two listed code points alone in their blocks; where that cannot tell, the regex."""
    marks = utf_16_le_encode(text, "surrogatepass")[0][1::2].translate(_BLOCKS)
    if (
        marks.isascii()
        and not (1 in marks and "\u0130" in text)
        and not (3 in marks and "\u03a3" in text)
    ):
        return True
    return _DIFFERENT.search(text) is None


_CHUNK = 64  # texts per look-up; a chunk holding one of those code points goes text by text
_UNITS = 1 << 16  # code units per take(): its index copy (8 bytes each) stays at 512 KiB


def tokenize_all(texts: Sequence[str]) -> Iterator[list[str]]:
    """``tokenize`` of each text, lazily (one chunk of texts at a time, so that the token lists
    of a long batch are not all alive at once)."""
    if not FAST:
        return map(tokenize, texts)
    return _by_chunk(texts, _fast_tokens, tokenize)


def token_keys_all(texts: Sequence[str]) -> Iterator[list[bytes]]:
    """Each text's tokens as UTF-8 bytes (as :func:`token_keys` gives them), lazily: the rouge-l
    batch's tokens."""
    if not FAST:
        return map(_keys, texts)
    return _by_chunk(texts, _fast_keys, _keys)


def _fast_tokens(texts: Iterable[str]) -> Iterable[list[str]]:
    return map(str.split, map(default_process, texts))


def _fast_keys(texts: Iterable[str]) -> Iterable[list[bytes]]:
    return map(bytes.split, map(str.encode, map(default_process, texts)))


def _by_chunk(
    texts: Sequence[str],
    fast: Callable[[Sequence[str]], Iterable[_T]],
    one: Callable[[str], _T],
) -> Iterator[_T]:
    """``fast`` on each chunk of texts that holds none of the listed code points, ``one`` on
    each text of the other chunks."""
    chunks = (texts[start : start + _CHUNK] for start in range(0, len(texts), _CHUNK))
    return chain.from_iterable(
        fast(chunk) if _chunk_regular(chunk) else map(one, chunk) for chunk in chunks
    )


def _chunk_regular(texts: Sequence[str]) -> bool:
    """Whether no text of the chunk holds a listed code point: one table look-up per UTF-16
    code unit of all of them."""
    import numpy as np

    joined = "".join(texts)
    if joined.isascii():
        return True
    # UTF-16 code units: past U+FFFF becomes a surrogate pair, and surrogates are listed
    units = np.frombuffer(joined.encode("utf-16-le", "surrogatepass"), dtype="<u2")
    table = _different_units()
    return not any(
        table.take(units[start : start + _UNITS]).any() for start in range(0, len(units), _UNITS)
    )


@cache  # a constant, built on first use so that importing this module does not load numpy
def _different_units() -> npt.NDArray[np.bool_]:
    """True at each UTF-16 code unit that sends a text off the fast path."""
    import numpy as np

    table = np.zeros(0x10000, dtype=np.bool_)
    for low, high in DIFFERENT_RANGES:
        if high <= 0xFFFF:
            table[low : high + 1] = True
    table[0xD800:0xE000] = True  # surrogates: a lone one, or one half of a code point > U+FFFF
    table.flags.writeable = False
    return table
