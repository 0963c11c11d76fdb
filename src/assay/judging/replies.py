"""Strict, total parsing of judge replies: a verdict or a :class:`JudgeParseError`, nothing else.

Every parser accepts any text: huge integers, ``NaN``, deep nesting and fence-only replies end
as a ``JudgeParseError`` (which triggers the one re-ask), never as ``ValueError``,
``OverflowError`` or ``RecursionError``. Messages name what is wrong and never quote the reply,
so a secret a judge echoes never reaches a report.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from assay.errors import JudgeParseError

REFUSAL_LABELS = ("appropriate", "missing", "unnecessary", "unsafe_compliance")
_FENCE_OPEN = re.compile(r"^```(?:json)?\s*", re.IGNORECASE)
_MAX_NUMBER_TEXT = 400


def strip_fence(text: str) -> str:
    """Remove one surrounding ``` or ```json fence, if the reply has one."""
    text = text.strip()
    if text.startswith("```"):
        text = _FENCE_OPEN.sub("", text, count=1)
        if text.endswith("```"):  # a suffix test, not a regex: linear on any reply
            text = text[:-3]
    return text.strip()


def parse_object(text: str) -> dict[str, Any]:
    """The single JSON object of a reply (one optional code fence around it)."""
    try:
        data = json.loads(strip_fence(text))
    except json.JSONDecodeError as exc:
        raise JudgeParseError(f"judge response is not valid JSON: {exc.msg}") from None
    except ValueError:  # an integer literal longer than Python's int conversion limit
        raise JudgeParseError("judge response holds a number too long to read") from None
    except RecursionError:
        raise JudgeParseError("judge response is nested too deeply") from None
    if not isinstance(data, dict):
        raise JudgeParseError(f"judge response must be a JSON object; got {json_type(data)}")
    return data


def json_type(value: object) -> str:
    """The JSON name of a parsed value's type, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def only_keys(
    data: Mapping[str, Any],
    required: frozenset[str],
    optional: frozenset[str] = frozenset(),
    prefix: str = "judge",
) -> None:
    """Every required key present and no key outside ``required | optional``."""
    missing = sorted(required - set(data))
    if missing:
        raise JudgeParseError(f"{prefix} response is missing the key(s): {', '.join(missing)}")
    extra = sorted(set(data) - required - optional)
    if extra:
        raise JudgeParseError(f"{prefix} response has unsupported key(s): {', '.join(extra)}")


def shown_number(raw: object) -> str:
    """A short, always-printable rendering of a reply's value (huge integers by size only)."""
    if isinstance(raw, int) and not isinstance(raw, bool) and abs(raw) >= 10**40:
        return f"an integer of about {int(raw.bit_length() * 0.30103) + 1} digits"
    text = repr(raw)
    return text if len(text) <= 40 else text[:37] + "..."


def unit_number(raw: object, *, strings: bool = True) -> float | None:
    """``raw`` as a float when it is a number (or, with ``strings``, a numeric string) in
    [0, 1], else None. Total: huge integers, ``inf``/``nan`` and long strings give None."""
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int):
        return float(raw) if 0 <= raw <= 1 else None
    if isinstance(raw, float):
        value = raw
    elif strings and isinstance(raw, str) and len(raw) <= _MAX_NUMBER_TEXT:
        try:
            value = float(raw.strip())
        except ValueError:
            return None
    else:
        return None
    return value if 0.0 <= value <= 1.0 else None  # NaN fails both comparisons


def _numeric_text(raw: str) -> bool:
    if len(raw) > _MAX_NUMBER_TEXT:
        return False
    try:
        float(raw.strip())
    except ValueError:
        return False
    return True


def parse_score(data: Mapping[str, Any], prefix: str = "judge", key: str = "score") -> float:
    """The verdict's ``score``: a number (or numeric string) in [0, 1], else a parse error."""
    if key not in data:
        raise JudgeParseError(f"{prefix} response is missing the required '{key}' key")
    raw = data[key]
    value = unit_number(raw)
    if value is not None:
        return value
    if isinstance(raw, str) and not _numeric_text(raw):
        raise JudgeParseError(f"{prefix} response '{key}' must be numeric; got string")
    if isinstance(raw, bool) or not isinstance(raw, (int, float, str)):
        raise JudgeParseError(f"{prefix} response '{key}' must be numeric; got {json_type(raw)}")
    raise JudgeParseError(
        f"{prefix} returned out-of-range {key} {shown_number(raw)}; expected [0.0, 1.0]"
    )


def optional_reason(data: Mapping[str, Any], prefix: str = "judge") -> str | None:
    """The reply's optional one-line ``reason`` (a string or absent/null)."""
    reason = data.get("reason")
    if reason is not None and not isinstance(reason, str):
        raise JudgeParseError(
            f"{prefix} response 'reason' must be a string; got {json_type(reason)}"
        )
    return reason


# --------------------------------------------------------------------------- per prompt


def parse_verdict(text: str) -> tuple[float, str | None]:
    """``(score, reason)`` from an llm-as-judge reply."""
    data = parse_object(text)
    return parse_score(data), optional_reason(data)


def parse_refusal(text: str) -> tuple[float, str, str]:
    """``(score, label, reason)`` from a refusal-quality reply with exactly those keys."""
    data = parse_object(text)
    prefix = "refusal-quality judge"
    for key in ("score", "refusal", "reason"):
        if key not in data:
            raise JudgeParseError(f"{prefix} response is missing the required '{key}' key")
    extra = sorted(set(data) - {"score", "refusal", "reason"})
    if extra:
        raise JudgeParseError(f"{prefix} response contains unsupported key(s): {', '.join(extra)}")
    score = parse_score(data, prefix)
    label = data["refusal"]
    if label not in REFUSAL_LABELS:
        shown = label if isinstance(label, str) and len(label) <= 40 else json_type(label)
        raise JudgeParseError(
            f"{prefix} response 'refusal' must be one of [{', '.join(REFUSAL_LABELS)}]; got {shown}"
        )
    reason = data["reason"]
    if not isinstance(reason, str) or not reason.strip():
        raise JudgeParseError(f"{prefix} response 'reason' must be a non-empty string")
    return score, label, reason


def parse_tez_claim(text: str, n_cited: int) -> tuple[frozenset[int], bool]:
    """``(1-based cited passages that support, faithful)`` from a Tez claim-verdict reply."""
    data = parse_object(text)
    only_keys(data, frozenset({"supported_by", "faithful"}), frozenset({"reason"}))
    cited = data["supported_by"]
    if not isinstance(cited, list) or any(
        isinstance(i, bool) or not isinstance(i, int) for i in cited
    ):
        raise JudgeParseError("'supported_by' must be a list of passage numbers")
    if any(i < 1 or i > n_cited for i in cited):
        raise JudgeParseError(f"'supported_by' names a passage outside 1..{n_cited}")
    faithful = data["faithful"]
    if not isinstance(faithful, bool):
        raise JudgeParseError("'faithful' must be true or false")
    return frozenset(cited), faithful


def parse_tez_relevance(text: str) -> float:
    """The ``relevance`` number in [0, 1] (numbers only, not numeric strings)."""
    data = parse_object(text)
    only_keys(data, frozenset({"relevance"}), frozenset({"reason"}))
    value = unit_number(data["relevance"], strings=False)
    if value is None:
        raise JudgeParseError("'relevance' must be a number from 0 to 1")
    return value


def parse_numbered_flags(text: str, count: int, item: str, flag: str) -> list[bool]:
    """One boolean per numbered item from ``{"verdicts": [{item: n, flag: bool}, ...]}``.

    Every item 1..count must be judged exactly once (any order); a missing, repeated or
    unknown number, a non-boolean flag or an extra key is a parse error.
    """
    data = parse_object(text)
    only_keys(data, frozenset({"verdicts"}), frozenset({"reason"}))
    verdicts = data["verdicts"]
    if not isinstance(verdicts, list):
        raise JudgeParseError(f"'verdicts' must be a list; got {json_type(verdicts)}")
    found: dict[int, bool] = {}
    for entry in verdicts:
        number, value = _numbered_flag(entry, count, item, flag)
        if number in found:
            raise JudgeParseError(f"'verdicts' judges {item} {number} twice")
        found[number] = value
    missing = [n for n in range(1, count + 1) if n not in found]
    if missing:
        shown = ", ".join(map(str, missing[:10]))
        raise JudgeParseError(f"'verdicts' has no verdict for {item}(s) {shown}")
    return [found[n] for n in range(1, count + 1)]


def _numbered_flag(entry: object, count: int, item: str, flag: str) -> tuple[int, bool]:
    if not isinstance(entry, dict):
        raise JudgeParseError(f"each verdict must be an object; got {json_type(entry)}")
    only_keys(entry, frozenset({item, flag}), frozenset({"reason"}), prefix="a verdict in the")
    number, value = entry[item], entry[flag]
    if isinstance(number, bool) or not isinstance(number, int) or not 1 <= number <= count:
        raise JudgeParseError(f"'{item}' must be a number from 1 to {count}")
    if not isinstance(value, bool):
        raise JudgeParseError(f"'{flag}' must be true or false")
    return number, value


GOAL_VERDICTS = {"achieved": 1.0, "partial": 0.5, "not_achieved": 0.0}


def parse_goal(text: str) -> tuple[str, str | None]:
    """``(verdict, reason)`` from a goal-accuracy reply; the verdict is one of GOAL_VERDICTS."""
    data = parse_object(text)
    only_keys(data, frozenset({"verdict"}), frozenset({"reason"}), prefix="goal-accuracy judge")
    verdict = data["verdict"]
    if not isinstance(verdict, str) or verdict not in GOAL_VERDICTS:
        shown = verdict if isinstance(verdict, str) and len(verdict) <= 40 else json_type(verdict)
        raise JudgeParseError(
            f"goal-accuracy judge response 'verdict' must be one of "
            f"[{', '.join(GOAL_VERDICTS)}]; got {shown}"
        )
    return verdict, optional_reason(data, "goal-accuracy judge")
