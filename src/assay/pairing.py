"""Joining two reports sample by sample: per-sample views pooled over repetitions, the join key,
and the outcome changes (pass/fail flips, new failures) of the joined pairs."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from assay.report.comparison_model import Flip, NewFailure
from assay.report.model import Report, Row

Pairs = list[tuple["SampleView", "SampleView"]]  # (current, reference) per joined sample


@dataclass
class SampleView:
    """A sample's results on one side, pooled over its repetitions."""

    key: str
    sample_id: str
    tags: list[str]
    scores: dict[str, list[float]] = field(default_factory=dict)
    passes: dict[str, list[bool]] = field(default_factory=dict)
    errors: set[str] = field(default_factory=set)

    def score_mean(self, metric: str) -> float | None:
        values = self.scores.get(metric)
        return sum(values) / len(values) if values else None

    def pass_fraction(self, metric: str) -> float | None:
        values = self.passes.get(metric)
        return sum(values) / len(values) if values else None

    def passes_metric(self, metric: str) -> bool | None:
        """Most repetitions passed (with one repetition: the score was >= 0.5)."""
        fraction = self.pass_fraction(metric)
        return None if fraction is None else fraction > 0.5

    def passed_all(self, metrics: Iterable[str]) -> bool:
        if self.errors:
            return False
        return all(self.passes_metric(name) is not False for name in metrics)


def choose_join_key(*sides: Sequence[Row]) -> Literal["row_hash", "id"]:
    """``row_hash`` unless some row lacks one or one hash stands for two sample ids."""
    for rows in sides:
        owner: dict[str, str] = {}
        for row in rows:
            if not row.row_hash or owner.setdefault(row.row_hash, row.id) != row.id:
                return "id"
    return "row_hash"


def sample_views(report: Report, join_key: str) -> dict[str, SampleView]:
    """One view per sample of ``report``, keyed by ``join_key`` (repetitions pooled)."""
    views: dict[str, SampleView] = {}
    for row in report.rows:
        key = row.row_hash if join_key == "row_hash" else row.id
        view = views.get(key)
        if view is None:
            view = views[key] = SampleView(key=key, sample_id=row.id, tags=list(row.tags))
        for metric, score in row.scores.items():
            view.scores.setdefault(metric, []).append(score.score)
            view.passes.setdefault(metric, []).append(score.passed)
        view.errors.update(row.errors)
    return views


def _known(value: float | None) -> float:
    """A score that a pass/fail outcome implies exists (scores and passes are recorded together)."""
    if value is None:  # pragma: no cover - guarded by passes_metric()
        raise ValueError("pass outcome without a score")
    return value


def flips(joined: list[tuple[SampleView, SampleView]], metrics: list[str]) -> list[Flip]:
    """Every (sample, metric) whose pass/fail outcome changed, in sample then metric order."""
    flips: list[Flip] = []
    for cur, ref in joined:
        for metric in metrics:
            before, after = ref.passes_metric(metric), cur.passes_metric(metric)
            if before is None or after is None or before == after:
                continue
            flips.append(
                Flip(
                    key=cur.key,
                    sample_id=cur.sample_id,
                    metric=metric,
                    direction="pass-to-fail" if before else "fail-to-pass",
                    before=_known(ref.score_mean(metric)),
                    after=_known(cur.score_mean(metric)),
                )
            )
    return flips


def new_failures(
    joined: list[tuple[SampleView, SampleView]], metrics: list[str]
) -> list[NewFailure]:
    """Samples that passed every metric in the reference and now fail or error."""
    found: list[NewFailure] = []
    for cur, ref in joined:
        if not ref.passed_all(metrics) or cur.passed_all(metrics):
            continue
        found.append(
            NewFailure(
                key=cur.key,
                sample_id=cur.sample_id,
                failed_metrics=[m for m in metrics if cur.passes_metric(m) is False],
                errored=sorted(cur.errors),
            )
        )
    return found
