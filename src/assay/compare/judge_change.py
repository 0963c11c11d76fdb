"""Judge swaps made explicit: which judge metrics two compared runs scored with different
judges (model, prompt template or options).

A pass that turned into a fail because the judge changed says nothing about the system under
test. Unless the comparison allows the change (``--allow-judge-change``), the flips and
regressions of those metrics are left out of the gate's flip and regression rules, and a
warning names each change.
"""

from __future__ import annotations

from typing import Literal

from assay.report.judge_model import JudgeChange, JudgeIdentity
from assay.report.model import Report

__all__ = ["judge_change_warnings", "judge_changes"]

_Part = Literal["model", "prompt", "options"]


def _identities(report: Report) -> dict[str, JudgeIdentity]:
    return {block.metric: block.judge for block in report.judges or []}


def _differences(before: JudgeIdentity, after: JudgeIdentity) -> list[_Part]:
    parts: list[_Part] = []
    if before.model != after.model:
        parts.append("model")
    if before.prompt != after.prompt:
        parts.append("prompt")
    if before.options != after.options:
        parts.append("options")
    return parts


def judge_changes(current: Report, reference: Report) -> list[JudgeChange]:
    """Every metric on both sides whose judge differs; a judge metric that names its judge on
    one side only counts as changed (a report from before judge blocks cannot vouch for it)."""
    mine, theirs = _identities(current), _identities(reference)
    shared = {item.name for item in current.metrics} & {item.name for item in reference.metrics}
    found: list[JudgeChange] = []
    for name in sorted(shared & (set(mine) | set(theirs))):
        before, after = theirs.get(name), mine.get(name)
        if before is not None and after is not None:
            parts = _differences(before, after)
            if not parts:
                continue
        else:
            parts = []
        found.append(JudgeChange(metric=name, reference=before, current=after, changed=parts))
    return found


def _describe(item: JudgeIdentity | None) -> str:
    return "an unnamed judge" if item is None else item.model


def judge_change_warnings(changes: list[JudgeChange], allowed: bool) -> list[str]:
    """One line per change, saying whether its flips and regressions count against the system."""
    consequence = (
        "counted against the system (--allow-judge-change)"
        if allowed
        else "not attributed to the system; --allow-judge-change counts them"
    )
    lines = []
    for change in changes:
        what = ", ".join(change.changed) or "judge"
        lines.append(
            f"judge changed for '{change.metric}' ({what}): {_describe(change.reference)} -> "
            f"{_describe(change.current)}; its flips and regressions are {consequence}"
        )
    return lines
