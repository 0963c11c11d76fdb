"""User-supplied regex patterns, matched so that no pattern can hurt the run.

A pattern is matched by RE2 (``google-re2``, linear time, no recursion) whenever RE2 can say
exactly what the pattern means under Python ``regex`` semantics; :func:`re2_spelling`
rewrites the few constructs the two engines read differently (``\\d``, ``\\w``, ``\\s``, a
final ``$``, ``\\Z``) and declines everything else it is unsure of. A declined pattern
(backreferences, lookaround, recursion, conditionals, possessive quantifiers, ``x``
mode, huge repeats, invalid syntax...) runs in the backtracking ``regex`` engine inside a
separate process with a wall-clock and a memory limit (:mod:`assay.metrics.backtrack`), so a
hang, a ``MemoryError`` or a segfault there is one sample's recorded failure.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import re2
import regex
from re2 import _re2  # the extension itself: half the per-call cost of re2.compile/search

from assay.errors import MetricError
from assay.metrics.backtrack_pool import BacktrackBudget

# Python ``regex`` classes spelled for RE2: exactly, on ASCII text (RE2's Perl classes are
# ASCII, but its \s lacks \v); through Unicode properties otherwise (checked code point by
# code point in tests). The Unicode spelling costs 10-100x more to compile, so it is built
# only when an answer is not ASCII.
_WORD = r"\p{L}\p{M}\p{Nd}\p{Pc}\p{Nl}"
_SPACE = r"\t-\r\x{85}\p{Z}"
_ASCII_IN: dict[str, str | None] = {"d": r"\d", "D": r"\D", "w": r"\w", "W": r"\W"}
_ASCII_IN |= {"s": r"\t-\r ", "S": None, "b": None, "B": None}
_ASCII_OUT: dict[str, str | None] = {"d": r"\d", "D": r"\D", "w": r"\w", "W": r"\W"}
_ASCII_OUT |= {"s": r"[\t-\r ]", "S": r"[^\t-\r ]", "b": r"\b", "B": r"\B"}
_UNICODE_IN: dict[str, str | None] = {"d": r"\p{Nd}", "D": r"\P{Nd}", "w": _WORD, "W": None}
_UNICODE_IN |= {"s": _SPACE, "S": None, "b": None, "B": None}
_UNICODE_OUT: dict[str, str | None] = {"d": r"\p{Nd}", "D": r"\P{Nd}", "w": f"[{_WORD}]"}
_UNICODE_OUT |= {"W": f"[^{_WORD}]", "s": f"[{_SPACE}]", "S": f"[^{_SPACE}]"}
_UNICODE_OUT |= {"b": None, "B": None}  # RE2's \b is ASCII-only
_SAME_ESCAPES = frozenset("Azntrfva0")
_IGNORECASE, _MULTILINE, _DOTALL = int(regex.I), int(regex.M), int(regex.S)
_VERBOSE = int(regex.X)
_FLAG_PREFIX = ((_IGNORECASE, "i"), (_MULTILINE, "m"), (_DOTALL, "s"))
# What the spelling must look at; everything between two of these is copied as it is.
_SPECIAL = re.compile(r"\\.?|[\[\]${(]", re.DOTALL)
_REPEAT = re.compile(r"(\d+)(?:,(\d*))?\}")  # after "{": a bounded repeat's counts
_RE2_MAX_REPEAT = 1000
_START, _ANYWHERE = re2._Anchor.ANCHOR_START, re2._Anchor.UNANCHORED


@lru_cache(maxsize=1)  # one immutable-by-convention options object for every compile
def _options() -> Any:
    options = re2.Options()
    options.log_errors = False  # a declined pattern is normal, not something to print
    options.never_capture = True  # only "does it match" is asked
    return options


@dataclass(frozen=True, slots=True)
class Pattern:
    """A parsed user pattern and its RE2 program for ASCII answers, when RE2 can take it."""

    body: str
    flags: int
    anchored: bool
    program: Any  # a compiled RE2 for ASCII text, or None: the backtracking worker runs it

    def find(
        self, text: str, timeout_s: float, budget: BacktrackBudget | None = None
    ) -> tuple[bool, str]:
        """``(matched, engine)``: search, or a match at the start when the pattern is anchored.
        RE2 reads ASCII text with this pattern's program, other text with the Unicode spelling;
        a text or pattern RE2 cannot take goes to the backtracking worker (under ``budget``,
        the run's, when given)."""
        found = self._re2(text)
        if found is not None:
            return found, "re2"
        outcome = (budget or BacktrackBudget()).run(
            [(self.body, self.flags, self.anchored, text)], timeout_s, self.fallback_reason()
        )[0]
        if isinstance(outcome, str):
            raise MetricError(outcome)
        return outcome, "backtracking"

    def _re2(self, text: str) -> bool | None:
        """Whether RE2 finds the pattern in ``text``; None when RE2 cannot take the two."""
        if text.isascii():
            program, data = self.program, text.encode("ascii")
        else:
            program = _unicode_program(self.body, self.flags)
            try:
                data = text.encode("utf-8")
            except UnicodeEncodeError:  # a lone surrogate: RE2 reads UTF-8 only
                program = None
        if program is None:
            return None
        anchor = _START if self.anchored else _ANYWHERE
        return bool(program.Match(anchor, data, 0, len(data))[0][0] >= 0)

    def fallback_reason(self) -> str:
        """Why this pattern needs the backtracking engine, in a few words."""
        if self.program is None:
            return "constructs RE2 cannot take (backreferences, lookaround, ...)"
        return "text RE2 cannot read with this pattern (non-ASCII, lone surrogates)"

    def find_each(
        self, texts: Iterable[str], timeout_s: float, budget: BacktrackBudget | None = None
    ) -> list[tuple[bool, str] | str]:
        """:meth:`find` of each text, or the message of the MetricError it raised: the loop for
        a batch's texts that share this pattern, with RE2 on ASCII text inline (no call per
        text but RE2's own), and the texts RE2 cannot take matched together on the budget's
        pool of backtracking workers (each hostile text costs its bound once)."""
        program = self.program
        anchor = _START if self.anchored else _ANYWHERE
        found: list[tuple[bool, str] | str] = []
        append = found.append
        waiting: list[tuple[int, str]] = []
        for text in texts:
            if program is not None and text.isascii():
                data = text.encode("ascii")
                append((program.Match(anchor, data, 0, len(data))[0][0] >= 0, "re2"))
                continue
            matched = self._re2(text)
            if matched is None:
                waiting.append((len(found), text))
            append((bool(matched), "re2"))  # replaced below when it waits for a worker
        if waiting:
            jobs = [(self.body, self.flags, self.anchored, text) for _, text in waiting]
            outcomes = (budget or BacktrackBudget()).run(jobs, timeout_s, self.fallback_reason())
            for (index, _), outcome in zip(waiting, outcomes):
                found[index] = outcome if isinstance(outcome, str) else (outcome, "backtracking")
        return found


@lru_cache(maxsize=4096)  # a memo of a pure function: one compile per distinct pattern
def compile_pattern(body: str, flags: int, anchored: bool) -> Pattern:
    """The pattern with its RE2 program when RE2 can take it, else none (the worker runs it)."""
    return Pattern(body, flags, anchored, _program(re2_spelling(body, flags, unicode=False)))


@lru_cache(maxsize=1024)
def _unicode_program(body: str, flags: int) -> Any:
    return _program(re2_spelling(body, flags, unicode=True))


def _program(spelled: str | None) -> Any:
    if spelled is None:
        return None
    try:
        program = _re2.RE2(spelled.encode("utf-8"), _options())
    except UnicodeEncodeError:  # a lone surrogate in the pattern
        return None
    return program if program.ok() else None


def match(pattern: Pattern, text: str, timeout_s: float) -> tuple[bool, str]:
    """``(matched, engine)``: search, or a match at the start when the pattern is anchored."""
    return pattern.find(text, timeout_s)


def re2_spelling(body: str, flags: int, *, unicode: bool = True) -> str | None:
    """An RE2 pattern meaning what ``body`` means to ``regex`` (on ASCII text only when not
    ``unicode``), or None when this cannot be said with confidence."""
    flags = int(flags)
    if flags & _VERBOSE:
        return None
    multiline = bool(flags & _MULTILINE)
    letters = "".join(c for f, c in _FLAG_PREFIX if flags & f)
    out = [f"(?{letters})" if letters else ""]
    copied, in_class, class_start = 0, False, 0
    for token in _SPECIAL.finditer(body):
        start, end, text = token.start(), token.end(), token.group()
        out.append(body[copied:start])
        copied = end
        if text[0] == "\\":
            piece = _escape(text, body[end : end + 1], in_class, unicode)
        elif in_class:
            piece = None if text == "[" else text  # nested sets, POSIX classes: declined
            in_class = not (text == "]" and start > class_start)
        elif text == "[":
            in_class, class_start = True, end + (body[end : end + 1] == "^")
            piece = text
        else:
            piece = _outside(body, text, end, multiline)
        if piece is None:
            return None
        out.append(piece)
    out.append(body[copied:])
    return "".join(out)


def _outside(body: str, text: str, end: int, multiline: bool) -> str | None:
    """The spelling of ``$``, ``{``, ``(`` or ``]`` outside a character class."""
    following = body[end : end + 1]
    if text == "$" and not multiline:
        # Python's $: the very end, or before a final newline; only at the end of a branch
        return r"(?:\n?\z)" if following in ("", "|", ")") else None
    if text == "{" and following == ",":
        return None  # {,n} is a repeat to Python, a literal to RE2
    if text == "{" and _past_re2_limit(body, end):
        return None  # a literal to RE2, "repeat count too big" or a repeat to Python
    if text == "(" and following == "?" and _inline_flags_change(body, end - 1):
        return None
    return text


def _past_re2_limit(body: str, end: int) -> bool:
    """Whether the ``{m}``/``{m,}``/``{m,n}`` starting at ``end`` has a count over RE2's
    1,000 (RE2 then reads the braces as literal text; ``regex`` does not)."""
    repeat = _REPEAT.match(body, end)
    if repeat is None:
        return False
    counts = [count.lstrip("0") for count in repeat.groups() if count]
    return any(len(count) > 4 or int(count or "0") > _RE2_MAX_REPEAT for count in counts)


def _escape(text: str, following: str, in_class: bool, unicode: bool) -> str | None:
    """The RE2 spelling of one escape (``\\`` and its letter), or None when not faithful."""
    if len(text) < 2:
        return None
    letter = text[1]
    if in_class:
        table = _UNICODE_IN if unicode else _ASCII_IN
    else:
        table = _UNICODE_OUT if unicode else _ASCII_OUT
    if letter in table:
        return table[letter]  # None: no faithful spelling
    if letter == "Z":
        return r"\z"
    if letter in ("p", "P") or (letter == "x" and following != "{"):
        return text
    if letter in _SAME_ESCAPES:
        return None if letter == "0" and following.isdigit() else text
    if letter.isalnum() or not letter.isascii():
        return None  # backreferences, \Q, \N{}, \e, \c...: engine-specific, left to the worker
    return text


def _inline_flags_change(body: str, i: int) -> bool:
    """Whether ``(?...`` at ``i`` is an inline-flag group that sets m or x (x: verbose)."""
    j = i + 2
    while j < len(body) and body[j] in "aiLmsux-":
        j += 1
    flags = body[i + 2 : j]
    return j < len(body) and body[j] in ":)" and ("m" in flags or "x" in flags)
