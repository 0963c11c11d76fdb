"""The label queue page: rows sampled by rule, labelled by keyboard (p pass, f fail, n note,
j/k next/previous), each label posted to ``/api/label`` with the page's CSRF token."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from assay.judges.label_queue import PairAgreement
from assay.view.layout import e, page

LABEL_SCRIPT = r"""
const token = document.querySelector('meta[name=assay-token]').content;
const items = Array.from(document.querySelectorAll('section.item'));
const who = document.getElementById('annotator');
let at = 0;
function show(i) {
  if (!items.length) return;
  at = Math.max(0, Math.min(items.length - 1, i));
  items.forEach((el, k) => el.classList.toggle('current', k === at));
  items[at].scrollIntoView({block: 'nearest'});
}
async function label(verdict) {
  const el = items[at];
  if (!who.value.trim()) { who.focus(); return; }
  const body = {run: el.dataset.run, sample: el.dataset.sample, repetition: +el.dataset.rep,
    metric: el.dataset.metric, label: verdict, note: el.querySelector('textarea').value,
    annotator: who.value.trim()};
  const reply = await fetch('/api/label', {method: 'POST', body: JSON.stringify(body),
    headers: {'Content-Type': 'application/json', 'X-Assay-Token': token}});
  const out = el.querySelector('.said');
  out.textContent = reply.ok ? 'labelled ' + verdict : 'not saved: ' + (await reply.text());
  el.dataset.labelled = reply.ok ? verdict : '';
  if (reply.ok) show(at + 1);
}
document.addEventListener('keydown', (ev) => {
  const typing = ev.target.tagName === 'TEXTAREA' || ev.target.tagName === 'INPUT';
  if (typing) { if (ev.key === 'Escape') ev.target.blur(); return; }
  if (ev.key === 'p') label('pass');
  else if (ev.key === 'f') label('fail');
  else if (ev.key === 'j') show(at + 1);
  else if (ev.key === 'k') show(at - 1);
  else if (ev.key === 'n') { ev.preventDefault(); items[at].querySelector('textarea').focus(); }
});
show(0);
"""


def _text(value: object) -> str:
    if value is None:
        return "n/a"
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _item(run_id: str, metric: str, detail: dict[str, Any], repetition: int) -> str:
    rep = next((r for r in detail["repetitions"] if r["repetition"] == repetition), None)
    score = (rep or {}).get("scores", {}).get(metric, {})
    details = score.get("details", {}) if isinstance(score, dict) else {}
    reason = details.get("judge_reason") or details.get("judge_reasons") or "n/a"
    answer = (rep or {}).get("answer")
    actual = answer.get("output") if isinstance(answer, dict) else answer
    verdict = "pass" if score.get("passed") else "fail"
    return (
        f'<section class="item" tabindex="0" data-run="{e(run_id)}" '
        f'data-sample="{e(detail["id"])}" data-rep="{repetition}" data-metric="{e(metric)}">'
        f'<h3>{e(detail["id"])} <span class="meta">rep {repetition}</span></h3>'
        f"<p><b>input</b> {e(_text(detail.get('input')))}</p>"
        f"<p><b>expected</b> {e(_text(detail.get('expected')))}</p>"
        f"<p><b>actual</b> {e(_text(actual))}</p>"
        f"<p><b>judge</b> {verdict} ({e(_text(score.get('score')))}): {e(_text(reason))}</p>"
        '<textarea rows="2" placeholder="note (n)"></textarea> <span class="said"></span>'
        "</section>"
    )


def _agreement(pairs: Sequence[PairAgreement]) -> str:
    if not pairs:
        return '<p class="meta">No two annotators have labelled the same rows yet.</p>'
    rows = "".join(
        f"<tr><td>{e(p.first)}</td><td>{e(p.second)}</td><td>{p.n}</td>"
        f"<td>{'n/a' if p.kappa is None else f'{p.kappa:.3f}'}</td>"
        f"<td>{'n/a' if p.agreement is None else f'{p.agreement:.1%}'}</td></tr>"
        for p in pairs
    )
    return (
        "<table><thead><tr><th>annotator</th><th>annotator</th><th>rows</th>"
        f"<th>Cohen's kappa</th><th>agreement</th></tr></thead><tbody>{rows}</tbody></table>"
    )


def label_page(
    run_id: str,
    metric: str,
    rule: str,
    items: Sequence[tuple[dict[str, Any], int]],
    pairs: Sequence[PairAgreement],
    *,
    token: str,
    annotator: str,
) -> str:
    """The queue of ``items`` ((sample detail, repetition) pairs) for ``metric``."""
    body = (
        f'<meta name="assay-token" content="{e(token)}">'
        f'<h1>Label queue: {e(metric)} <span class="meta">run {e(run_id)} · {e(rule)} · '
        f"{len(items)} rows</span></h1>"
        f'<p><label>annotator <input id="annotator" value="{e(annotator)}"></label></p>'
        '<p class="meta">Keys: <kbd>p</kbd> pass · <kbd>f</kbd> fail · <kbd>n</kbd> note '
        "(<kbd>Esc</kbd> leaves it) · <kbd>j</kbd>/<kbd>k</kbd> next/previous. Export: "
        f"<code>assay judge labels {e(run_id)} --metric {e(metric)} -o labels.csv</code></p>"
        + "".join(_item(run_id, metric, detail, rep) for detail, rep in items)
        + "<h2>Agreement between annotators</h2>"
        + _agreement(pairs)
    )
    return page(f"label {run_id}", body, LABEL_SCRIPT)
