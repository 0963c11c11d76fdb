"""Markdown view of a report, in the layout of seed 000 ("A complete report at a glance").

Diff-stable: fixed section order, four decimals, user strings escaped and single-lined.
"""

from __future__ import annotations

import html

from assay.data.terminal import printable, printable_lines
from assay.providers.pricing import format_usd
from assay.report.compliance import markdown_lines
from assay.report.judge_sections import judge_markdown
from assay.report.model import ComparisonSummary, FailingRow, Report
from assay.report.numbers import fmt
from assay.report.verdict import gate_warnings, verdict_of

_MAX_FAILURES = 200


def cell(text: str) -> str:
    """Escape a user string for a table cell: HTML, pipes, backticks, newlines, and the C0 and
    C1 control characters (written ``\\x1b``: raw, they would reach the terminal of whoever
    reads the report there)."""
    text = printable(" ".join(str(text).split()))
    return html.escape(text, quote=False).replace("|", "\\|").replace("`", "\\`")


def _signed(value: object) -> str:
    return f"{value:+.4f}" if isinstance(value, (int, float)) else "n/a"


def _comparison(comparison: ComparisonSummary) -> list[str]:
    """The baseline comparison digest: deltas, flips, and regressions beyond noise."""
    counts = comparison.counts
    out = [
        "",
        "## Baseline comparison",
        "",
        f"Against run {cell(comparison.reference_run_id)} (rows joined on "
        f"{cell(comparison.join_key)}, alpha {comparison.alpha}).",
        "",
        "| macro-F1 delta | pass-rate delta | compared | pass → fail | fail → pass "
        "| new failures | added | removed | regressions |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        f"| {_signed(comparison.macro_f1_delta)} | {_signed(comparison.pass_rate_delta)} | "
        f"{counts.compared} | {counts.pass_to_fail} | {counts.fail_to_pass} | "
        f"{counts.new_failures} | {counts.added} | {counts.removed} | {counts.regressions} |",
    ]
    if not comparison.regressions:
        line = "no regression the paired tests can confirm"
        if counts.pass_to_fail:
            line += f"; {counts.pass_to_fail} row(s) went from pass to fail"
        return [*out, "", line[0].upper() + line[1:] + "."]
    out += [
        "",
        "| metric | scope | statistic | reference | current | delta | adjusted p |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for item in comparison.regressions:
        scope = item.cohort_label or item.scope
        out.append(
            f"| {cell(item.metric)} | {cell(scope)} | {item.statistic} | {fmt(item.reference)} "
            f"| {fmt(item.current)} | {_signed(item.delta)} | {fmt(item.p_adjusted)} |"
        )
    return out


def _conversation_lines(report: Report) -> list[str]:
    """One row per (conversation, metric): turns scored, mean and min over the turns."""
    if not report.conversations:
        return []
    out = [
        "",
        "## Conversations",
        "",
        "| conversation | turns | passed | metric | mean | min | scored | errored |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for c in report.conversations:
        name = cell(c.id) + (f" (rep {c.repetition})" if report.run.repetitions > 1 else "")
        status = "yes" if c.passed else "no"
        if c.sut_errors:
            status += f" ({c.sut_errors} turn(s) errored)"
        for m in c.metrics:
            out.append(
                f"| {name} | {c.turns} | {status} | {cell(m.name)} | {fmt(m.mean)} | "
                f"{fmt(m.min)} | {m.scored} | {m.errored} |"
            )
        if not c.metrics:
            out.append(f"| {name} | {c.turns} | {status} | n/a | n/a | n/a | 0 | 0 |")
    return out


def render_markdown(report: Report) -> str:
    """The whole report as Markdown, sections in a fixed order."""
    out = [
        *_header(report),
        *_gate(report),
        *_failing_rows(report),
        *_summary(report),
        *_metric_lines(report),
        *judge_markdown(report.judges),
        *(_comparison(report.comparison) if report.comparison is not None else []),
        *_cohort_lines(report),
        *_usage_lines(report),
        *_sampling(report),
        *markdown_lines(report.adversarial),
        *_conversation_lines(report),
        *_histograms(report),
        *_errors(report),
    ]
    # Whatever a section quotes of a user's text, no control character reaches a terminal.
    return printable_lines("\n".join(out) + "\n")


def _header(report: Report) -> list[str]:
    """Title, what ran, and the run's halt reason and warnings."""
    s = report.summary
    out = [
        f"# Eval report — {cell(report.dataset.name)}",
        "",
        f"_Run {cell(report.run.run_id)} completed in {report.run.duration_seconds:.2f}s over "
        f"{s.total_samples} samples ({s.total_executions} executions: {s.failed_rows or 0} failed, "
        f"{s.errored_rows or 0} errored)._",
    ]
    if report.run.halted:
        out += ["", f"**Run halted:** {cell(report.run.halt_reason or 'stopped early')}"]
    return out


def _summary(report: Report) -> list[str]:
    """The summary table: what was tested, counts, pass-rate, providers."""
    s = report.summary
    out = [
        "",
        "## Summary",
        "",
        "| field | value |",
        "| --- | --- |",
        f"| system under test | {cell(report.run.system_under_test.kind)} "
        f"{cell(report.run.system_under_test.target or '')} |",
        f"| samples | {s.total_samples} |",
        f"| executions | {s.total_executions} |",
        f"| repetitions | {report.run.repetitions} |",
        f"| failed executions (a score below its threshold) | {s.failed_rows} |",
        f"| errored executions (could not be scored) | {s.errored_rows} |",
        f"| errors (system under test / metric) | {s.sut_errors} / {s.metric_errors} |",
        f"| pass-rate (every metric at or above its threshold) | {fmt(s.pass_rate)} |",
    ]
    if report.run.embedding_provider:
        out.append(f"| embedding provider | {cell(report.run.embedding_provider)} |")
    if report.run.judge_model:
        out.append(f"| judge model | {cell(report.run.judge_model)} |")
    return out


def _metric_lines(report: Report) -> list[str]:
    """Per-metric aggregates and the macro-F1 over them."""
    s = report.summary
    out = [
        "",
        "## Per-metric aggregates",
        "",
        "| metric | mean | p50 | p95 | pass-rate | threshold | scored | failed | errored |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for m in report.metrics:
        out.append(
            f"| {cell(m.name)} | {fmt(m.mean)} | {fmt(m.p50)} | {fmt(m.p95)} | {fmt(m.pass_rate)} "
            "| "
            f"{fmt(m.threshold, 2)} | {m.scored} | {m.failed} | {m.errored + m.skipped} |"
        )
    out += ["", f"## Macro-F1 (avg pass-rate across all metrics): {fmt(s.macro_f1)}"]
    if s.macro_f1_excluded:
        out += ["", f"_Left out (no score at all): {cell(', '.join(s.macro_f1_excluded))}._"]
    return out


def _usage_lines(report: Report) -> list[str]:
    """Provider calls, tokens and cost (nothing when no provider was called)."""
    usage = report.usage
    if not usage.calls:
        return []
    cost = "unpriced" if usage.cost_usd is None else format_usd(usage.cost_usd)
    if usage.unpriced_models:
        cost += f" (unpriced: {cell(', '.join(usage.unpriced_models))})"
    return [
        "",
        "## Usage summary",
        "",
        "| calls | cached | prompt tokens | completion tokens | total tokens | mean latency ms "
        "| cost |",
        "| --- | --- | --- | --- | --- | --- | --- |",
        f"| {usage.calls} | {usage.cached_calls} | {usage.prompt_tokens} | "
        f"{usage.completion_tokens} | "
        f"{usage.total_tokens} | {fmt(usage.latency_ms_mean, 2)} | {cost} |",
    ]


def _sampling(report: Report) -> list[str]:
    """Repetitions per sample and the samples whose verdict flips between them."""
    reps = report.repetitions
    if reps is None:
        return []
    out = [
        "",
        "## Sampling",
        "",
        f"{reps.count} repetitions per sample; {len(reps.unstable_samples)} unstable samples.",
    ]
    if not reps.unstable_samples:
        return out
    out += [
        "",
        "### Unstable samples",
        "",
        "| sample | passed | pass-rate | 95% interval |",
        "| --- | --- | --- | --- |",
    ]
    for agg in reps.samples:
        if agg.unstable:
            out.append(
                f"| {cell(agg.id)} | {agg.passed}/{agg.repetitions} | {fmt(agg.pass_rate)} "
                "| "
                f"{fmt(agg.pass_rate_ci.low)}–{fmt(agg.pass_rate_ci.high)} |"
            )
    return out


def _cohort_lines(report: Report) -> list[str]:
    """Each tag cohort's metrics (those that apply to it), with pass-rate intervals."""
    out = [
        "",
        "## Cohorts by metadata.tags",
        "",
        "| cohort | samples | metric | mean | pass-rate | pass-rate 95% interval |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for cohort in report.cohorts:
        for cm in cohort.metrics:
            if cm.scored + cm.errored == 0:
                continue  # the metric does not apply to this cohort
            ci = cm.pass_rate_ci
            interval = f"{fmt(ci.low)}–{fmt(ci.high)}" if ci is not None else "n/a"
            label = f"_{cell(cohort.label)}_" if cohort.is_untagged else cell(cohort.label)
            out.append(
                f"| {label} | {cohort.samples} | {cell(cm.name)} | {fmt(cm.mean)} "
                f"| {fmt(cm.pass_rate)} | {interval} |"
            )
    return out


def _histograms(report: Report) -> list[str]:
    """One bucket table per metric; the last bucket includes its upper bound."""
    out = ["", "## Score histograms"]
    for m in report.metrics:
        out += ["", f"### {cell(m.name)}", "", "| bucket | count |", "| --- | --- |"]
        last = len(m.histogram) - 1
        for i, bucket in enumerate(m.histogram):
            label = f"{bucket.lower:.1f}-{bucket.upper:.1f}" + (" inclusive" if i == last else "")
            out.append(f"| {label} | {bucket.count} |")
    return out


def _gate(report: Report) -> list[str]:
    """The verdict first: the gate's word, the rules that decided it, the counts, the warnings
    (each once)."""
    verdict = verdict_of(report)
    word = verdict.headline if verdict.passed is not False else verdict.headline.upper()
    out = ["", "## Verdict", "", f"**{word}**", ""]
    out += [f"- {cell(rule)}" for rule in verdict.rules]
    out += ["", f"_{cell(verdict.counts)}._"]
    for warning in [*report.warnings, *gate_warnings(report)]:
        out += ["", f"> warning: {cell(warning)}"]
    return out


def _errors(report: Report) -> list[str]:
    """Every captured error message (what could not be scored, and why)."""
    if not report.failures:
        return []
    out = ["", f"## Errors ({len(report.failures)}: could not be scored)", ""]
    for failure in report.failures[:_MAX_FAILURES]:
        where = failure.metric if failure.metric is not None else failure.stage
        rep = f" (repetition {failure.repetition})" if report.run.repetitions > 1 else ""
        out.append(
            f"- **sample <code>{cell(failure.sample_id)}</code> / {cell(where)}**{rep} - "
            f"{cell(failure.message)}"
        )
    if len(report.failures) > _MAX_FAILURES:
        out.append(f"- … and {len(report.failures) - _MAX_FAILURES} more (see the JSON report)")
    return out


def _failing_rows(report: Report) -> list[str]:
    """The failed and errored rows with their texts (ids and numbers only when redacted)."""
    rows = report.failing_rows
    failed = sum(1 for r in rows if r.status == "failed")
    errored = len(rows) - failed
    out = ["", "## Failed and errored rows", ""]
    if not rows:
        s = report.summary
        if s.failed_rows or s.errored_rows or report.failures:
            out.append(
                f"{s.failed_rows or 0} executions failed and {s.errored_rows or 0} errored; "
                "their texts are not in this report (see the rows of the JSON report)."
            )
        else:
            out.append("No row failed or errored.")
        return out
    executions = len({(r.sample_id, r.repetition) for r in rows if r.status == "failed"})
    out.append(
        f"{failed} results failed (scored below threshold) in {executions} executions, "
        f"{errored} errored (could not be scored)."
    )
    if report.redacted:
        out.append("Texts are redacted.")
    out += [
        "",
        "| sample | tags | metric | status | score | threshold | reason | input | expected | "
        "actual |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    out += [_failing_row(r, repeated=report.run.repetitions > 1) for r in rows[:_MAX_FAILURES]]
    more = len(rows) - min(len(rows), _MAX_FAILURES) + report.failing_rows_omitted
    if more:
        out.append(f"\n… and {more} more (see the JSON report)")
    return out


def _failing_row(r: FailingRow, *, repeated: bool) -> str:
    """One failed or errored row; the tools called follow the actual output."""
    rep = f" (rep {r.repetition})" if repeated else ""
    actual = "_(empty answer)_" if r.actual == "" else r.actual
    if r.tools is not None:
        actual = f"{actual or ''} [tools: {' → '.join(r.tools) or 'none'}]"
    texts = " | ".join(cell(t) if t is not None else "" for t in (r.input, r.expected, actual))
    return (
        f"| {cell(r.sample_id)}{rep} | {cell(', '.join(r.tags))} | {cell(r.metric)} | "
        f"{r.status} | {fmt(r.score)} | {fmt(r.threshold, 2)} | {cell(r.reason)} | {texts} |"
    )
