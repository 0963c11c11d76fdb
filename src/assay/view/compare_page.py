"""Two runs side by side: deltas with intervals, flips highlighted, changed samples first."""

from __future__ import annotations

from assay.compare.pairing import SampleAt, SampleTable
from assay.report.comparison_model import Comparison, MetricComparison, no_regression_line
from assay.report.model import Report
from assay.view.data import RunView
from assay.view.layout import e, gate_chip, num, page, pct, run_link, signed, table
from assay.view.static import COMPARE_SCRIPT

MAX_PAIRS = 5000


def _delta(value: float | None, low: float | None, high: float | None) -> str:
    if low is None or high is None:
        return signed(value)
    return f'{signed(value)} <span class="ci">[{low:+.3f}, {high:+.3f}]</span>'


def _metric_row(item: MetricComparison) -> list[str]:
    mean, rate = item.mean, item.pass_rate
    mean_ci, rate_ci = mean.interval, rate.interval
    return [
        e(item.metric if item.scope == "overall" else f"{item.metric} · {item.cohort_label}"),
        str(item.paired),
        num(mean.reference),
        num(mean.current),
        _delta(mean.delta, mean_ci.low if mean_ci else None, mean_ci.high if mean_ci else None),
        pct(rate.reference),
        pct(rate.current),
        _delta(rate.delta, rate_ci.low if rate_ci else None, rate_ci.high if rate_ci else None),
        num(mean.p_adjusted if mean.p_adjusted is not None else rate.p_adjusted),
        str(item.pass_to_fail),
        str(item.fail_to_pass),
        f'<span class="chip {e(item.verdict)}" title="{e(item.why())}">{e(item.label())}</span>',
    ]


def _metrics(comparison: Comparison) -> str:
    head = [
        "metric",
        "paired",
        "mean A",
        "mean B",
        "Δ mean [95% CI]",
        "pass A",
        "pass B",
        "Δ pass rate [95% CI]",
        "p (Holm)",
        "pass→fail",
        "fail→pass",
        "verdict",
    ]
    overall = table(head, [_metric_row(m) for m in comparison.metrics], attrs='class="deltas"')
    cohorts = [_metric_row(m) for m in comparison.cohorts if m.paired]
    if not cohorts:
        return overall
    return (
        f"{overall}<details><summary>per cohort ({len(cohorts)} metric × tag pairs)</summary>"
        f"{table(head, cohorts)}</details>"
    )


def _cell(metric: str, ref: SampleAt | None, cur: SampleAt | None) -> tuple[str, int]:
    """One metric's 'A → B' cell and its change: -1 pass→fail, +1 fail→pass, 0 otherwise."""
    before = ref.passes_metric(metric) if ref else None
    after = cur.passes_metric(metric) if cur else None
    a = (
        num(ref.score_mean(metric))
        if ref and ref.scored(metric)
        else ("error" if ref and metric in ref.errors else "")
    )
    b = (
        num(cur.score_mean(metric))
        if cur and cur.scored(metric)
        else ("error" if cur and metric in cur.errors else "")
    )
    change = -1 if before and after is False else 1 if before is False and after else 0
    if not a and not b:
        return "<td></td>", 0
    css = {-1: "flip-down", 1: "flip-up", 0: ""}[change]
    return f'<td class="{css}">{a} → {b}</td>', change


def _outcome(view: SampleAt | None, metrics: list[str]) -> str:
    if view is None:
        return "absent"
    if view.errors:
        return "errored"
    return "passed" if view.passed_all(metrics) else "failed"


def _pair_row(
    key: str, ref: SampleAt | None, cur: SampleAt | None, metrics: list[str]
) -> tuple[int, str]:
    cells, changes = [], []
    for metric in metrics:
        cell, change = _cell(metric, ref, cur)
        cells.append(cell)
        changes.append(change)
    before, after = _outcome(ref, metrics), _outcome(cur, metrics)
    moved = any(
        (ref.score_mean(m) if ref else None) != (cur.score_mean(m) if cur else None)
        for m in metrics
    )
    changed = before != after or moved or any(changes)
    css = "flip-down" if -1 in changes else "flip-up" if 1 in changes else ""
    rank = 0 if css == "flip-down" else 1 if css == "flip-up" else 2 if changed else 3
    either = cur or ref
    sample = either.sample_id if either is not None else key
    row = (
        f'<tr class="{css}" data-changed="{int(changed)}" data-id="{e(sample)}">'
        f'<td class="l">{e(sample)}</td><td class="l status-{before}">{before}</td>'
        f'<td class="l status-{after}">{after}</td>{"".join(cells)}</tr>'
    )
    return rank, row


def _at(table: SampleTable, index: int | None) -> SampleAt | None:
    return None if index is None else SampleAt(table, index)


def _pairs(reference: Report, current: Report, comparison: Comparison) -> str:
    ref_table, cur_table = SampleTable.of(reference.rows), SampleTable.of(current.rows)
    ref_keys = ref_table.keyed(comparison.join_key)
    cur_keys = cur_table.keyed(comparison.join_key)
    metrics = sorted({m.name for m in reference.metrics} | {m.name for m in current.metrics})
    keys = list(dict.fromkeys([*cur_keys, *ref_keys]))[:MAX_PAIRS]
    ranked = [
        _pair_row(k, _at(ref_table, ref_keys.get(k)), _at(cur_table, cur_keys.get(k)), metrics)
        for k in keys
    ]
    ranked.sort(key=lambda item: item[0])  # stable: dataset order within each rank
    head = "".join(f"<th>{e(m)} A → B</th>" for m in metrics)
    return (
        '<div class="filters"><label><input type="checkbox" id="f-changed">'
        " changed rows only</label>"
        '<span id="f-count" class="count"></span></div>'
        '<div class="scroll"><table id="pairs"><thead><tr><th class="l">sample</th>'
        f'<th class="l">A</th><th class="l">B</th>{head}</tr></thead>'
        f"<tbody>{''.join(row for _, row in ranked)}</tbody></table></div>"
    )


def _warnings(warnings: list[str]) -> str:
    items = "".join(f'<li class="warn">{e(w)}</li>' for w in warnings)
    return (
        f"<details><summary>{len(warnings)} notes</summary><ul>{items}</ul></details>"
        if items
        else ""
    )


def _verdict(comparison: Comparison) -> str:
    """The comparison's verdict first: the regressions, or what 'none' means here."""
    if comparison.regressions:
        items = "".join(f"<li>{e(r.message)}</li>" for r in comparison.regressions)
        return (
            f'<div class="verdict fail">Regressions the paired tests confirm<ul>{items}</ul></div>'
        )
    line = no_regression_line(comparison.metrics, comparison.counts.pass_to_fail)
    css = "warn" if comparison.counts.pass_to_fail or "too few" in line else "pass"
    return f'<div class="verdict {css}">{e(line[0].upper() + line[1:])}.</div>'


def compare_page(reference: RunView, current: RunView, comparison: Comparison) -> str:
    c = comparison.counts
    cards = [
        ("paired samples", c.compared),
        ("pass → fail", c.pass_to_fail),
        ("fail → pass", c.fail_to_pass),
        ("new failures", c.new_failures),
        ("regressions the paired tests confirm", c.regressions),
        ("added / removed", f"{c.added} / {c.removed}"),
    ]
    body = (
        f"<h1>{e(comparison.dataset)}: A vs B</h1>"
        f'<p class="meta">A (reference): {run_link(reference.record.run_id)} '
        f"{gate_chip(reference.gate)}"
        f" · B (current): {run_link(current.record.run_id)} {gate_chip(current.gate)} · "
        f"paired on {e(comparison.join_key)}, α = {comparison.alpha}, Holm-adjusted</p>"
        + (
            ""
            if comparison.comparable
            else f'<p class="warn">{e(comparison.incomparable_reason or "")}</p>'
        )
        + _verdict(comparison)
        + _warnings(comparison.warnings)
        + '<div class="cards">'
        + "".join(
            f'<div class="card"><div class="v">{v}</div><div class="k">{k}</div></div>'
            for k, v in cards
        )
        + '</div><h2>Metrics</h2><div class="scroll">'
        + _metrics(comparison)
        + "</div>"
        + '<h2>Samples</h2><p class="meta">Flips first (red: pass → fail, green: fail → pass), '
        "then other changes, then unchanged rows.</p>"
        + _pairs(reference.report, current.report, comparison)
    )
    return page(
        f"compare {reference.record.run_id} and {current.record.run_id}", body, COMPARE_SCRIPT
    )
