"""The judge's replies to a rubric prompt: strict JSON verdicts (one object per rubric, or one
verdict per criterion) turned into verdict codes, with a bounded reason."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from assay.calibration.model import Criterion


def _verdict_code(criterion: Criterion, raw: object, name: str) -> int:
    from assay.errors import JudgeParseError

    if not isinstance(raw, str):
        raise JudgeParseError(f"the verdict for '{name}' must be a string")
    if criterion.options is not None and raw.strip().upper().replace(" ", "_") == "CANNOT_ASSESS":
        return criterion.abstain_codes[0]
    try:
        return criterion.code_of(raw)
    except ValueError:
        allowed = (
            "MET, UNMET or CANNOT_ASSESS"
            if criterion.options is None
            else "one of the listed options"
        )
        raise JudgeParseError(f"the verdict for '{name}' is not {allowed}") from None


def parse_rubric_reply(text: str, criteria: Sequence[Criterion]) -> tuple[list[int], str | None]:
    """Codes (in criteria order) and the reason from a one-call-per-rubric reply."""
    from assay.errors import JudgeParseError
    from assay.judging.replies import parse_object

    data = parse_object(text)
    verdicts = data.get("verdicts")
    if not isinstance(verdicts, dict):
        raise JudgeParseError("judge response must have a 'verdicts' object")
    names = [c.name for c in criteria]
    missing = [n for n in names if n not in verdicts]
    if missing:
        raise JudgeParseError(f"judge response has no verdict for: {', '.join(missing)}")
    extra = [k for k in verdicts if k not in names]
    if extra:
        raise JudgeParseError(f"judge response has {len(extra)} verdict(s) for unknown criteria")
    codes = [_verdict_code(c, verdicts[c.name], c.name) for c in criteria]
    return codes, _reason(data)


def parse_criterion_reply(text: str, criterion: Criterion) -> tuple[int, str | None]:
    """Code and reason from a one-call-per-criterion reply."""
    from assay.errors import JudgeParseError
    from assay.judging.replies import parse_object

    data = parse_object(text)
    if "verdict" not in data:
        raise JudgeParseError("judge response is missing the required 'verdict' key")
    return _verdict_code(criterion, data["verdict"], criterion.name), _reason(data)


def _reason(data: Mapping[str, Any]) -> str | None:
    from assay.errors import JudgeParseError

    reason = data.get("reason")
    if reason is not None and not isinstance(reason, str):
        raise JudgeParseError("judge response 'reason' must be a string")
    return reason[:500] if isinstance(reason, str) else None
