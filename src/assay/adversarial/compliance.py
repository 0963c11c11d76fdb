"""The compliance summary: per category and per framework, samples, pass-rate, worst severity.

Built from report rows (kept in memory or streamed from the run store) and each sample's
``metadata.adversarial`` block, so it works for live, resumed and re-rendered runs alike.
Words follow the report: an execution *failed* when a metric scored below its threshold, and
*errored* when it was not failed but something could not be scored.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from assay.adversarial.categories import CATEGORIES, FRAMEWORKS, worst
from assay.adversarial.seeds import adversarial_block
from assay.data.dataset import Dataset
from assay.report.compliance_model import CategoryCompliance, Compliance, FrameworkCompliance
from assay.report.model import Row


def blocks_of(dataset: Dataset) -> dict[str, dict[str, Any]]:
    """Sample id -> its adversarial block, for the samples that have one."""
    keys = getattr(dataset.samples, "metadata_keys", None)  # a streamed dataset knows them
    if keys is not None and "adversarial" not in keys:
        return {}
    found = (
        (s.id, adversarial_block(s.metadata))
        for s in dataset.samples
        if "adversarial" in s.metadata  # most samples: no call at all
    )
    return {sid: block for sid, block in found if block is not None}


@dataclass
class _Tally:
    samples: set[str] = field(default_factory=set)
    executions: int = 0
    passed: int = 0
    failed: int = 0
    errored: int = 0
    severities: set[str] = field(default_factory=set)
    failed_severities: set[str] = field(default_factory=set)
    failed_metrics: Counter[str] = field(default_factory=Counter)

    def add(self, row: Row, severity: str) -> None:
        self.samples.add(row.id)
        self.executions += 1
        self.severities.add(severity)
        failing = [name for name, score in row.scores.items() if not score.passed]
        if failing:
            self.failed += 1
            self.failed_severities.add(severity)
            self.failed_metrics.update(failing)
        elif row.errors:
            self.errored += 1
        else:
            self.passed += 1

    def numbers(self) -> dict[str, Any]:
        judged = self.passed + self.failed
        return {
            "samples": len(self.samples),
            "executions": self.executions,
            "passed": self.passed,
            "failed": self.failed,
            "errored": self.errored,
            "pass_rate": round(self.passed / judged, 6) if judged else None,
            "worst_severity_failed": worst(self.failed_severities),
        }


def summarise(rows: Iterable[Row], blocks: Mapping[str, Mapping[str, Any]]) -> Compliance | None:
    """The compliance summary of ``rows``; None when no row is an adversarial sample."""
    categories: dict[str, _Tally] = {}
    frameworks: dict[str, _Tally] = {}
    members: dict[str, set[str]] = {}
    for row in rows:
        block = blocks.get(row.id)
        if block is None:
            continue
        categories.setdefault(block["category"], _Tally()).add(row, block["severity"])
        for name in block["compliance_frameworks"]:
            frameworks.setdefault(name, _Tally()).add(row, block["severity"])
            members.setdefault(name, set()).add(block["category"])
    if not categories:
        return None
    labels = {c.value: c.label for c in CATEGORIES}
    declared = _frameworks_by_category(blocks)
    return Compliance(
        total_samples=len(set().union(*(t.samples for t in categories.values()))),
        categories=[
            CategoryCompliance(
                category=name,
                label=labels.get(name, name),
                severity=worst(tally.severities) or "",
                compliance_frameworks=sorted(declared[name], key=FRAMEWORKS.index),
                failed_metrics=dict(sorted(tally.failed_metrics.items())),
                **tally.numbers(),
            )
            for name, tally in sorted(categories.items())
        ],
        frameworks=[
            FrameworkCompliance(framework=name, categories=sorted(members[name]), **tally.numbers())
            for name, tally in sorted(
                frameworks.items(), key=lambda item: FRAMEWORKS.index(item[0])
            )
        ],
    )


def _frameworks_by_category(blocks: Mapping[str, Mapping[str, Any]]) -> dict[str, set[str]]:
    result: dict[str, set[str]] = {}
    for block in blocks.values():
        result.setdefault(block["category"], set()).update(block["compliance_frameworks"])
    return result
