"""The label queue: which rows of a run people label, what the export holds, and how far two
people agree with each other.

Rows are sampled by rule: ``failing`` (the metric scored them below its threshold),
``disagreements`` (someone's label differs from the judge's verdict), or ``random`` (a seeded
slice of the scored rows). The export is the long labels CSV that ``assay agreement`` reads:
``item_id,criterion,rater,label`` with the chosen annotator as ``human``, every other
annotator under their own name, and the run's judge as ``judge``; verdicts are MET (pass) and
UNMET (fail) on the criterion named after the metric.
"""

from __future__ import annotations

import csv
import io
import itertools
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from assay.errors import UsageError
from assay.report.model import Report, Row
from assay.store.labels import HumanLabel

__all__ = ["RULES", "PairAgreement", "annotator_agreement", "labels_csv", "queue_rows"]

Rule = Literal["failing", "disagreements", "random"]
RULES: tuple[Rule, ...] = ("failing", "disagreements", "random")
_VERDICT = {"pass": "MET", "fail": "UNMET"}


def _key(sample_id: str, repetition: int) -> tuple[str, int]:
    return (sample_id, repetition)


def _judge_pass(row: Row, metric: str) -> bool | None:
    score = row.scores.get(metric)
    return None if score is None else score.passed


def queue_rows(
    report: Report,
    metric: str,
    rule: str,
    n: int,
    *,
    seed: int = 0,
    labels: Sequence[HumanLabel] = (),
) -> list[Row]:
    """Up to ``n`` rows of ``metric`` chosen by ``rule``; UsageError on an unknown rule."""
    if rule not in RULES:
        raise UsageError(f"label rule must be one of {', '.join(RULES)}; got {rule!r}")
    scored = [row for row in report.rows if _judge_pass(row, metric) is not None]
    if rule == "failing":
        return [row for row in scored if not _judge_pass(row, metric)][:n]
    if rule == "random":
        return random.Random(seed).sample(scored, min(n, len(scored)))
    said = {(lab.sample_id, lab.repetition): lab.label == "pass" for lab in labels}
    return [
        row
        for row in scored
        if _key(row.id, row.repetition) in said
        and said[_key(row.id, row.repetition)] != _judge_pass(row, metric)
    ][:n]


def _item(sample_id: str, repetition: int) -> str:
    return sample_id if repetition == 0 else f"{sample_id}#{repetition}"


def labels_csv(
    report: Report, metric: str, labels: Sequence[HumanLabel], human: str | None = None
) -> str:
    """The labels as a long labels CSV; ``human`` names the annotator taken as ground truth
    (default: the one who labelled most rows). UsageError when there is no label."""
    if not labels:
        raise UsageError(f"no labels for metric '{metric}' in run {report.run.run_id}")
    counts: dict[str, int] = {}
    for label in labels:
        counts[label.annotator] = counts.get(label.annotator, 0) + 1
    chosen = human or max(sorted(counts), key=lambda name: counts[name])
    if chosen not in counts:
        raise UsageError(f"annotator {chosen!r} labelled nothing (annotators: {sorted(counts)})")
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["item_id", "criterion", "rater", "label"])
    items = set()
    for label in labels:
        rater = "human" if label.annotator == chosen else f"annotator:{label.annotator}"
        item = _item(label.sample_id, label.repetition)
        items.add((label.sample_id, label.repetition))
        writer.writerow([item, metric, rater, _VERDICT[label.label]])
    for row in report.rows:
        passed = _judge_pass(row, metric)
        if (row.id, row.repetition) in items and passed is not None:
            writer.writerow(
                [
                    _item(row.id, row.repetition),
                    metric,
                    "judge",
                    _VERDICT["pass" if passed else "fail"],
                ]
            )
    return out.getvalue()


@dataclass(frozen=True)
class PairAgreement:
    """Cohen's kappa between two annotators on the rows both labelled."""

    first: str
    second: str
    n: int
    kappa: float | None
    agreement: float | None


def annotator_agreement(labels: Sequence[HumanLabel]) -> list[PairAgreement]:
    """Every pair of annotators who labelled at least one row in common."""
    by_person: dict[str, dict[tuple[str, int, str], str]] = {}
    for label in labels:
        key = (label.sample_id, label.repetition, label.metric)
        by_person.setdefault(label.annotator, {})[key] = label.label
    pairs = []
    for a, b in itertools.combinations(sorted(by_person), 2):
        shared = sorted(set(by_person[a]) & set(by_person[b]))
        if not shared:
            continue
        first = [by_person[a][k] for k in shared]
        second = [by_person[b][k] for k in shared]
        same = sum(x == y for x, y in zip(first, second)) / len(shared)
        kappa = None
        if len(set(first) | set(second)) > 1:
            from sklearn.metrics import cohen_kappa_score  # heavy: only when two people overlap

            value = float(cohen_kappa_score(first, second, labels=["pass", "fail"]))
            kappa = value if value == value else None  # NaN: undefined
        pairs.append(PairAgreement(a, b, len(shared), kappa, same))
    return pairs
