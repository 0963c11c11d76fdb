"""The lines ``assay simulate`` prints per scored conversation: the goal verdict, then each
turn metric's mean and minimum over the turns (from the report's conversation block)."""

from __future__ import annotations

from assay.generate.transcripts import goal_id
from assay.report.model import Report, Row


def _goal_text(row: Row | None) -> str:
    if row is None:
        return "goal-accuracy not run"
    score = row.scores.get("goal-accuracy")
    if score is None:
        error = row.errors.get("goal-accuracy", "not scored")
        return f"goal-accuracy errored ({error})"
    verdict = score.details.get("verdict")
    label = f" ({verdict})" if isinstance(verdict, str) else ""
    return f"goal-accuracy {score.score:.2f}{label}"


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def conversation_lines(report: Report) -> list[str]:
    """One line per conversation of the report, in dataset order."""
    rows = {row.id: row for row in report.rows if row.repetition == 0}
    lines = []
    for conversation in report.conversations or []:
        parts = [f"{conversation.turns} turns", _goal_text(rows.get(goal_id(conversation.id)))]
        for metric in conversation.metrics:
            errored = f", {metric.errored} errored" if metric.errored else ""
            parts.append(f"{metric.name} mean {_fmt(metric.mean)} min {_fmt(metric.min)}{errored}")
        lines.append(f"scored '{conversation.id}': " + "; ".join(parts))
    return lines
