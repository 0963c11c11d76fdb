"""Score a calibration set with a run's own judge metric and measure its agreement with people.

The calibration set is a labelled dataset, as ``assay calibrate`` reads it: per sample the
answer to judge (``metadata.answer``) and the people's verdict (``metadata.labels`` per rubric
criterion for ``rubric``; ``metadata.human_score`` / ``metadata.human_pass`` for any other
judge metric). The metric object of the run judges it, so the model, prompt and options are
exactly the run's. Agreement per criterion is Cohen's kappa (quadratic-weighted for an ordinal
criterion) with an item bootstrap's percentile interval; the pass decision at the metric's
threshold gives the judge's sensitivity and specificity.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from assay.calibration.aggregate import AbstainPolicy, weighted_scores
from assay.calibration.compute import compute_agreement
from assay.calibration.model import Criterion, LabelSet
from assay.calibration.result import CalibrationResult
from assay.calibration.rogan_gladen import PassCounts
from assay.data.dataset import Dataset
from assay.data.loading import load_dataset
from assay.engine.calibration_items import PASS_CRITERION, Labelled, MetricName, read_labelled
from assay.engine.calibration_run import Judged, judge_all, label_set
from assay.errors import CalibrationError, MetricError
from assay.judges.swap import judge_agreements
from assay.metrics.base import Metric
from assay.metrics.rubric import RubricJudge
from assay.report.judge_model import JudgeAgreement, PassAgreement

__all__ = ["Measured", "labels_hash", "measure"]

BOOTSTRAP_RESAMPLES = 1000
BOOTSTRAP_SEED = 0


@dataclass(frozen=True)
class Measured:
    """What one judge showed on one calibration set."""

    n_labelled: int
    n_judged: int
    agreement: list[JudgeAgreement]
    passes: PassAgreement
    judge_scores: list[float | None]
    human_pass: list[bool | None]


def labels_hash(path: Path) -> str:
    """A hash of the calibration set's bytes (its answers and labels)."""
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def _criteria(metric: Metric, dataset: Dataset) -> tuple[Criterion, ...]:
    """The rubric's criteria (the metric's own rubric, else the set's), or the pass criterion."""
    if not isinstance(metric, RubricJudge):
        return (PASS_CRITERION,)
    from assay.engine.calibration_items import rubric_criteria

    try:
        return metric.criteria_for(dataset.samples[0])
    except MetricError:
        return rubric_criteria(dataset, None)


def _agreement(result: CalibrationResult) -> list[JudgeAgreement]:
    """Kappa (or QWK for ordinal) per criterion with its bootstrap percentile interval."""
    if result.overall is None:
        return []
    confidence = result.bootstrap.confidence_level if result.bootstrap else 0.95
    return judge_agreements(result.overall, confidence, result.bootstrap)


def _judge_scores(
    metric: Metric, criteria: Sequence[Criterion], judged: Sequence[Judged]
) -> list[float | None]:
    """The judge's score per item (a rubric's from its verdicts); None where it failed."""
    out: list[float | None] = []
    for item in judged:
        if item.error is not None:
            out.append(None)
        elif item.codes is not None and isinstance(metric, RubricJudge):
            codes = np.array(item.codes, dtype=np.int16)[:, None]
            value = float(weighted_scores(criteria, codes, metric.abstain)[0])
            out.append(None if math.isnan(value) else value)
        else:
            out.append(item.value)
    return out


def _human_pass(labels: LabelSet, labelled: Labelled, threshold: float) -> list[bool | None]:
    """People's pass decision per item: ``human_pass`` when given, else score >= threshold."""
    assert labels.human_scores is not None
    out: list[bool | None] = []
    for sample, score in zip(labelled.samples, labels.human_scores):
        given = sample.metadata.get("human_pass")
        if isinstance(given, bool):
            out.append(given)
        else:
            out.append(None if math.isnan(float(score)) else bool(score >= threshold))
    return out


def pass_counts(
    judge: Sequence[float | None], human: Sequence[bool | None], threshold: float
) -> PassCounts:
    """The 2x2 table of the pass decision over the items both sides decided."""
    cells = [0, 0, 0, 0]
    for score, person in zip(judge, human):
        if score is None or person is None:
            continue
        judge_pass = score >= threshold
        cells[(0 if person else 2) + (0 if judge_pass else 1)] += 1
    return PassCounts(
        true_pass=cells[0], false_fail=cells[1], false_pass=cells[2], true_fail=cells[3]
    )


def pass_agreement(counts: PassCounts) -> PassAgreement:
    return PassAgreement(
        true_pass=counts.true_pass,
        false_fail=counts.false_fail,
        false_pass=counts.false_pass,
        true_fail=counts.true_fail,
        sensitivity=counts.sensitivity,
        specificity=counts.specificity,
    )


async def measure(
    metric: Metric, path: Path, *, threshold: float, concurrency: int = 8
) -> Measured:
    """Judge the calibration set at ``path`` with ``metric``; CalibrationError when the set is
    unreadable, has no labels, or the judge failed on every item."""
    dataset = load_dataset(path)
    kind: MetricName = "rubric" if isinstance(metric, RubricJudge) else "llm-as-judge"
    criteria = _criteria(metric, dataset)
    labelled = read_labelled(dataset, criteria, metric=kind, outputs=None, source=str(path))
    judged = await judge_all(metric, labelled.samples, labelled.answers, concurrency)
    failed = [j.error for j in judged if j.error is not None]
    if len(failed) == len(judged):
        raise CalibrationError(f"the judge failed on every item ({failed[0]})", file=str(path))
    abstain: AbstainPolicy = metric.abstain if isinstance(metric, RubricJudge) else "skip"
    labels = label_set(
        criteria, labelled, {metric.name: judged}, metric=kind, abstain=abstain, source=str(path)
    )
    result = compute_agreement(labels, bootstrap=BOOTSTRAP_RESAMPLES, seed=BOOTSTRAP_SEED)
    scores = _judge_scores(metric, criteria, judged)
    human = _human_pass(labels, labelled, threshold)
    return Measured(
        n_labelled=len(labelled.samples),
        n_judged=len(judged) - len(failed),
        agreement=_agreement(result),
        passes=pass_agreement(pass_counts(scores, human, threshold)),
        judge_scores=scores,
        human_pass=human,
    )
