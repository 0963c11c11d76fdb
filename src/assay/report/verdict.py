"""The first thing every report format says: the gate's verdict, the rule that decided it, and
the run's counts in one vocabulary (passed, failed = scored below threshold, errored = not
scored). Renderers put these lines above the failing rows and the numbers."""

from __future__ import annotations

from typing import NamedTuple

from assay.report.model import Report


class Verdict(NamedTuple):
    """The headline ('Gate failed'), the deciding rules, and the counts line."""

    passed: bool | None  # None: no gate ran
    headline: str
    rules: list[str]
    counts: str


def counts_line(report: Report) -> str:
    """'30 executions: 20 passed, 10 failed (below threshold), 0 errored (not scored)'."""
    s = report.summary
    passed = s.total_executions - s.failed_rows - s.errored_rows
    return (
        f"{s.total_executions} executions: {passed} passed, {s.failed_rows} failed "
        f"(a score below its threshold), {s.errored_rows} errored (could not be scored)"
    )


def verdict_of(report: Report) -> Verdict:
    """The gate's verdict in words; the rules that decided it (or that every rule held)."""
    gate = report.gate
    counts = counts_line(report)
    if not gate:
        return Verdict(None, "No gate ran", [], counts)
    passed = bool(gate.get("passed"))
    messages = [
        str(item.get("message", "")) for item in gate.get("failures", []) if isinstance(item, dict)
    ]
    if passed:
        checked = gate.get("checked", 0)
        messages = [f"every rule held ({checked} checked)"]
    return Verdict(passed, "Gate passed" if passed else "Gate failed", messages, counts)


def gate_warnings(report: Report) -> list[str]:
    """The gate's warnings that the report's own warnings do not already say (each once)."""
    gate = report.gate or {}
    shown = set(report.warnings)
    return [str(w) for w in gate.get("warnings", []) if str(w) not in shown]


def error_causes(report: Report, limit: int = 5) -> list[str]:
    """One line per distinct error cause with its count, most frequent first:
    ``30 errored (bertscore-like): the local embedding provider needs ...``."""
    counts: dict[tuple[str, str], int] = {}
    for failure in report.failures:
        where = failure.metric if failure.metric is not None else failure.stage
        key = (where, " ".join(failure.message.split()))
        counts[key] = counts.get(key, 0) + 1
    ranked = sorted(counts.items(), key=lambda item: -item[1])
    lines = [f"{count} errored ({where}): {message}" for (where, message), count in ranked[:limit]]
    if len(ranked) > limit:
        rest = sum(count for _, count in ranked[limit:])
        lines.append(f"{rest} errored with {len(ranked) - limit} other causes (see the report)")
    if any(_SCOPE_HINTED in message for (_, message) in counts):
        lines.append(SCOPE_HINT)
    return lines


_SCOPE_HINTED = "expected_output must be"
SCOPE_HINT = (
    "a metric was applied to samples it cannot score (their expected output has another shape):"
    " scope it with --tag, or name it in the dataset's metrics: with tags:"
)
