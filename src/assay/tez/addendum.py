"""TIP Enterprise Addendum section 8 metrics, thresholds and degradation alerts.

Per query (``None`` where the definition does not apply):

* ``relevance`` = relevant chunks / chunks used when the turn lists its chunks and the
  expectations name the relevant items (8.3.1); otherwise the method's relevance score;
* ``faithfulness`` = faithful claims / claims (``None`` with no claims);
* ``citation_accuracy`` = verified citations / citations, each ref of ``[[a, b]]`` counted, a
  citation verified when its item exists, its location resolves and the text there supports
  the claim (``None`` with no citations);
* ``completeness`` = relevant items cited / relevant items (``None`` without ground truth);
* ``abstention_rate`` = 1.0 or 0.0 on an abstention-appropriate query, else ``None``.

Session values pool the ratios (sum of numerators / sum of denominators); relevance is the mean
of the per-query values. The thresholds are the Addendum's RECOMMENDED ones; a drop alert fires
when a metric falls by more than ``drop`` (default 10%, relative) between two evaluations.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from assay.data.bounded import loads_json
from assay.data.documents import read_capped
from assay.errors import TezError
from assay.tez.records import AddendumValues, Alert, TezitEvalMetrics
from assay.tez.scoring import TurnScore

METRICS = ("relevance", "faithfulness", "citation_accuracy", "completeness", "abstention_rate")
THRESHOLDS: dict[str, float] = {
    "citation_accuracy": 0.95,
    "faithfulness": 0.90,
    "relevance": 0.80,
    "completeness": 0.70,
    "abstention_rate": 0.80,
}
DEFAULT_DROP = 0.10


def _ratio(num: float, den: float) -> float | None:
    return num / den if den else None


def query_values(score: TurnScore) -> AddendumValues:
    n_claims = len(score.claims)
    abstention = None
    if score.abstention_expected:
        abstention = 1.0 if score.abstention_correct else 0.0
    return AddendumValues(
        relevance=score.chunk_relevance if score.chunk_relevance is not None else score.relevance,
        faithfulness=_ratio(sum(c.faithful for c in score.claims), n_claims),
        citation_accuracy=score.citation_accuracy,
        completeness=score.completeness,
        abstention_rate=abstention,
    )


def session_values(scores: Sequence[TurnScore]) -> AddendumValues:
    """Pooled session metrics over ``scores``."""
    if not scores:
        return AddendumValues()
    relevances = [query_values(s).relevance for s in scores]
    appropriate = [s for s in scores if s.abstention_expected]
    with_truth = [s for s in scores if s.relevant_items]
    return AddendumValues(
        relevance=sum(r for r in relevances if r is not None) / len(relevances),
        faithfulness=_ratio(
            sum(c.faithful for s in scores for c in s.claims), sum(len(s.claims) for s in scores)
        ),
        citation_accuracy=_ratio(
            sum(s.n_verified for s in scores), sum(s.n_citations for s in scores)
        ),
        completeness=_ratio(
            sum(s.relevant_cited or 0 for s in with_truth),
            sum(len(s.relevant_items or ()) for s in with_truth),
        ),
        abstention_rate=_ratio(
            sum(bool(s.abstention_correct) for s in appropriate), len(appropriate)
        ),
    )


def false_abstentions(scores: Sequence[TurnScore]) -> int:
    """Answerable queries the response abstained on (a failure the Addendum formula omits)."""
    return sum(1 for s in scores if s.abstention_expected is False and s.abstained)


def to_tezit_metrics(values: AddendumValues) -> tuple[TezitEvalMetrics, list[str]]:
    """Fill undefined values with the vacuous 1.0 the enterprise schema forces; say which."""
    vacuous = [m for m in METRICS if getattr(values, m) is None]
    data = {m: (1.0 if getattr(values, m) is None else getattr(values, m)) for m in METRICS}
    return TezitEvalMetrics(**data), vacuous


def threshold_alerts(
    values: AddendumValues, thresholds: Mapping[str, float] = THRESHOLDS
) -> list[Alert]:
    alerts = []
    for metric, minimum in thresholds.items():
        value = getattr(values, metric, None)
        if value is not None and value < minimum:
            alerts.append(
                Alert(
                    metric=metric,
                    kind="below_threshold",
                    value=value,
                    reference=minimum,
                    message=f"{metric} {value:.3f} is below the recommended {minimum:.2f}",
                )
            )
    return alerts


def drop_alerts(
    previous: Mapping[str, float], current: AddendumValues, *, drop: float = DEFAULT_DROP
) -> list[Alert]:
    """Metrics that fell by more than ``drop`` (relative) since the previous evaluation."""
    alerts = []
    for metric in METRICS:
        before, now = previous.get(metric), getattr(current, metric)
        if before is None or now is None or before <= 0:
            continue
        fall = (before - now) / before
        if fall > drop + 1e-12:
            alerts.append(
                Alert(
                    metric=metric,
                    kind="dropped",
                    value=now,
                    reference=before,
                    message=(
                        f"{metric} fell {fall:.1%} (from {before:.3f} to {now:.3f}), "
                        f"more than {drop:.0%}"
                    ),
                )
            )
    return alerts


def previous_metrics(data: object, *, source: str = "<previous>") -> dict[str, float]:
    """Session metrics of an earlier evaluation: a tezit-eval report or an assay score report."""
    block = None
    if isinstance(data, Mapping):
        block = (
            data.get("metrics") if isinstance(data.get("metrics"), Mapping) else data.get("session")
        )
    if not isinstance(block, Mapping):
        raise TezError(
            "no 'metrics' (tezit-eval) or 'session' (assay score report) object", file=source
        )
    out = {}
    for metric in METRICS:
        value = block.get(metric)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            out[metric] = float(value)
    return out


def load_previous(path: str | Path) -> dict[str, float]:
    raw = read_capped(Path(path), TezError)
    data = loads_json(
        raw, lambda m: TezError(f"cannot read the previous evaluation: {m}", file=str(path))
    )
    return previous_metrics(data, source=str(path))
