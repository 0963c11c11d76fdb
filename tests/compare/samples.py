"""A realistic report (and its comparison) with hostile strings, for the renderer tests."""

from __future__ import annotations

import numpy as np

from assay.compare.comparison import compare_reports
from assay.compare.gate import check_gate
from assay.compare.gate_rules import GateRules, MetricFloors
from assay.report.comparison_model import Comparison
from assay.report.model import Report
from compare.factory import make_report

HOSTILE_ID = '<script>alert("id")</script>'
HOSTILE_TAG = '"><img src=x onerror=alert(1)>'
HOSTILE_MESSAGE = "timeout & <b>bold</b> \"quoted\" 'single' \x07bell"
METRICS = ["exact-match", "judge", "rouge-l"]


def _samples(shift: float, seed: int) -> dict[str, dict[str, object]]:
    rng = np.random.default_rng(seed)
    samples: dict[str, dict[str, object]] = {}
    for i in range(60):
        tags = [["policy"], ["geography"], [HOSTILE_TAG], []][i % 4]
        quality = rng.beta(5, 2)
        scores = {
            "exact-match": [1.0 if rng.random() < quality else 0.0],
            "judge": [float(np.clip(quality + shift + rng.normal(0, 0.05), 0, 1))],
            "rouge-l": [float(np.clip(quality * 0.9 + rng.normal(0, 0.05), 0, 1))],
        }
        samples[f"q{i:02d}"] = {"tags": tags, "scores": scores}
    samples[HOSTILE_ID] = {
        "tags": ["policy"],
        "scores": {"exact-match": [None], "judge": [0.2], "rouge-l": [0.4]},
    }
    samples["sut-down"] = {
        "tags": [],
        "scores": {"exact-match": [1.0], "judge": [1.0], "rouge-l": [1.0]},
        "sut_error": [0],
    }
    return samples


def rich_report(*, with_gate: bool = True) -> tuple[Report, Comparison]:
    """A current report (judge dropped 0.15) with its gate outcome, and the comparison."""
    reference = make_report(
        _samples(0.0, 1), dataset="support <faq> & more", run_id="base-1", metrics=METRICS
    )
    current = make_report(
        _samples(-0.15, 1), dataset="support <faq> & more", run_id="cur-2", metrics=METRICS
    )
    failures = [f.model_copy(update={"message": HOSTILE_MESSAGE}) for f in current.failures]
    current = current.model_copy(update={"failures": failures, "warnings": ["a <warning> & note"]})
    comparison = compare_reports(current, reference)
    if with_gate:
        rules = GateRules(min_macro_f1=0.9, metrics={"judge": MetricFloors(min_mean=0.8)})
        outcome = check_gate(current, rules, comparison)
        current = current.model_copy(
            update={
                "gate": outcome.model_dump(mode="json"),
                "comparison": comparison.summary().model_dump(mode="json"),
            }
        )
    return current, comparison
