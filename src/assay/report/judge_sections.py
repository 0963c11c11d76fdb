"""The judge block in Markdown and HTML: per judge metric, the judge, its agreement with people
(kappa or quadratic-weighted kappa, interval, n), and the pass rate raw and corrected.

A section of its own, after the per-metric table, so that a judge's trust sits beside the
scores it produced; a report with no judge metric has no such section.
"""

from __future__ import annotations

from collections.abc import Sequence

from assay.report.html_parts import esc, num, pct, table
from assay.report.judge_model import CorrectedPassRate, JudgeAgreement, JudgeCalibration

__all__ = ["agreement_text", "corrected_text", "judge_html", "judge_markdown"]


def _two(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def interval_text(low: float | None, high: float | None, confidence: float) -> str:
    if low is None or high is None:
        return "no interval"
    return f"{confidence:.0%} CI {_two(low)} to {_two(high)}"


def agreement_text(a: JudgeAgreement) -> str:
    """``correct: kappa 0.43 (95% CI 0.10 to 0.75, n=8)``."""
    return (
        f"{a.criterion}: {a.statistic} {_two(a.value)} "
        f"({interval_text(a.low, a.high, a.confidence)}, n={a.n})"
    )


def corrected_text(p: CorrectedPassRate | None) -> str:
    """``0.750 raw -> 0.612 corrected (95% CI 0.40 to 0.83)``; n/a when undefined."""
    if p is None:
        return "n/a"
    if p.corrected is None:
        return f"{num(p.raw, 3)} raw; correction undefined (sensitivity + specificity <= 1)"
    return (
        f"{num(p.raw, 3)} raw -> {num(p.corrected, 3)} corrected "
        f"({interval_text(p.low, p.high, p.confidence)})"
    )


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _block_markdown(b: JudgeCalibration) -> list[str]:
    out = [
        "",
        f"### {_cell(b.metric)}: judge {_cell(b.judge.model)} ({b.status})",
        "",
        f"_{_cell(b.note)}_",
        "",
        f"- judge: model `{_cell(b.judge.model)}`, prompt `{_cell(b.judge.prompt)}`, "
        f"options `{b.judge.options}` (key `{b.judge.key}`)",
    ]
    if b.calibration is not None:
        out.append(
            f"- calibration set: `{_cell(b.calibration)}` ({b.n_judged}/{b.n_labelled} judged)"
        )
    if b.agreement:
        out += [
            "",
            "| criterion | statistic | value | interval | n |",
            "| --- | --- | --- | --- | --- |",
        ]
        out += [
            f"| {_cell(a.criterion)} | {a.statistic} | {_two(a.value)} | "
            f"{interval_text(a.low, a.high, a.confidence)} | {a.n} |"
            for a in b.agreement
        ]
    if b.pass_agreement is not None:
        p = b.pass_agreement
        out += [
            "",
            f"- pass decision: sensitivity {_two(p.sensitivity)}, specificity "
            f"{_two(p.specificity)} (people pass: {p.true_pass} judge pass / {p.false_fail} "
            f"judge fail; people fail: {p.false_pass} judge pass / {p.true_fail} judge fail)",
            f"- pass rate: {corrected_text(b.pass_rate)}",
        ]
    return out


def judge_markdown(judges: Sequence[JudgeCalibration] | None) -> list[str]:
    """The ``## Judges`` section; nothing when the run has no judge metric."""
    if not judges:
        return []
    out = ["", "## Judges: agreement with people"]
    for block in judges:
        out += _block_markdown(block)
    return out


def _block_html(b: JudgeCalibration) -> str:
    head = (
        f"<h3><code>{esc(b.metric)}</code>: judge {esc(b.judge.model)} "
        f'<span class="meta">({esc(b.status)})</span></h3>'
        f'<p class="judge-note">{esc(b.note)}</p>'
        f'<p class="meta">prompt <code>{esc(b.judge.prompt)}</code> · options '
        f"<code>{esc(b.judge.options)}</code> · key <code>{esc(b.judge.key)}</code>"
        + (f" · set <code>{esc(b.calibration)}</code>" if b.calibration else "")
        + "</p>"
    )
    rows = [
        [
            esc(a.criterion),
            esc(a.statistic),
            num(a.value, 2),
            esc(interval_text(a.low, a.high, a.confidence)),
            str(a.n),
        ]
        for a in b.agreement
    ]
    body = table(["criterion", "statistic", "value", "interval", "n"], rows, left=2) if rows else ""
    if b.pass_agreement is not None:
        p = b.pass_agreement
        body += (
            f"<p>sensitivity {num(p.sensitivity, 2)} · specificity {num(p.specificity, 2)} · "
            f"pass rate {esc(corrected_text(b.pass_rate))}"
            + (f" (raw {pct(b.pass_rate.raw)})" if b.pass_rate is not None else "")
            + "</p>"
        )
    return f'<div class="judge">{head}{body}</div>'


def judge_html(judges: Sequence[JudgeCalibration] | None) -> str:
    """The judges section as HTML (every text escaped); empty without judge metrics."""
    if not judges:
        return ""
    return '<h2 id="judges">Judges: agreement with people</h2>' + "".join(
        _block_html(b) for b in judges
    )
