"""The label queue's two routes: the page (GET ``/label/<run>``) and the write
(POST ``/api/label``), which needs the page's CSRF token and, off loopback, the team token.

Labels go to ``labels.sqlite`` beside the run store; the run store stays read-only.
"""

from __future__ import annotations

import hmac
import json
from datetime import datetime, timezone
from typing import Any

from pydantic import ValidationError

from assay.errors import NotFound, UsageError
from assay.judges.label_queue import annotator_agreement, queue_rows
from assay.store.labels import HumanLabel, LabelStore
from assay.view.data import ViewData, sample_detail
from assay.view.label_page import label_page

__all__ = ["MAX_BODY", "label_queue_page", "write_label"]

MAX_BODY = 65_536
MAX_ROWS = 200


def _one(query: dict[str, list[str]], name: str, default: str) -> str:
    values = query.get(name)
    return values[0] if values and values[0] else default


def _count(raw: str, name: str) -> int:
    if not raw.isdigit() or not 1 <= int(raw) <= MAX_ROWS:
        raise UsageError(f"'{name}' must be a whole number from 1 to {MAX_ROWS}; got {raw!r}")
    return int(raw)


def label_queue_page(
    data: ViewData, labels: LabelStore, run_id: str, query: dict[str, list[str]], token: str
) -> str:
    """The queue: ``metric`` (default: the run's first), ``rule``, ``n``, ``seed``,
    ``annotator``."""
    view = data.run(run_id)
    names = [m.name for m in view.report.metrics]
    metric = _one(query, "metric", names[0] if names else "")
    if metric not in names:
        raise NotFound(f"run '{run_id}' has no metric '{metric}'")
    rule = _one(query, "rule", "failing")
    n = _count(_one(query, "n", "10"), "n")
    seed = _count(_one(query, "seed", "1"), "seed")
    made = labels.labels(run_id, metric)
    rows = queue_rows(view.report, metric, rule, n, seed=seed, labels=made)
    items = [(sample_detail(data, run_id, row.id), row.repetition) for row in rows]
    annotator = _one(query, "annotator", "")
    return label_page(
        run_id, metric, rule, items, annotator_agreement(made), token=token, annotator=annotator
    )


def authorised(headers: Any, token: str, team_token: str | None, loopback: bool) -> str | None:
    """Why a write is refused, or None: the page's token always, the team token off loopback."""
    given = headers.get("X-Assay-Token", "")
    if not hmac.compare_digest(given.encode(), token.encode()):
        return "missing or wrong X-Assay-Token (reload the label page)"
    if loopback:
        return None
    if not team_token:
        return "labelling off loopback needs ASSAY_VIEW_TOKEN set when the viewer starts"
    bearer = headers.get("Authorization", "").removeprefix("Bearer ").strip()
    if not hmac.compare_digest(bearer.encode(), team_token.encode()):
        return "missing or wrong team token (Authorization: Bearer ...)"
    return None


def write_label(data: ViewData, labels: LabelStore, body: bytes) -> dict[str, Any]:
    """Check and keep one label; UsageError (422) on a bad body, NotFound on an unknown row."""
    try:
        raw = json.loads(body)
    except ValueError:
        raise UsageError("the body must be JSON") from None
    if not isinstance(raw, dict):
        raise UsageError("the body must be a JSON object")
    try:
        label = HumanLabel(
            run_id=raw.get("run"),
            sample_id=raw.get("sample"),
            repetition=raw.get("repetition"),
            metric=raw.get("metric"),
            annotator=str(raw.get("annotator", "")).strip(),
            label=raw.get("label"),
            note=raw.get("note") or "",
            labelled_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        )
    except ValidationError as exc:
        first = exc.errors()[0]
        raise UsageError(f"field '{first['loc'][0]}': {first['msg']}") from None
    report = data.run(label.run_id).report
    if not any(
        row.id == label.sample_id
        and row.repetition == label.repetition
        and label.metric in row.scores
        for row in report.rows
    ):
        raise NotFound(f"run '{label.run_id}' has no scored row {label.sample_id!r}")
    labels.add(label)
    return {"ok": True, "labels": len(labels.labels(label.run_id, label.metric))}
