"""The compliance summary over hand-made rows: failed beats errored, severities, frameworks."""

from __future__ import annotations

from assay.adversarial.categories import EU_AI_ACT, NIST, OWASP
from assay.adversarial.compliance import summarise
from assay.report.model import Row, RowScore


def row(sid: str, scores: dict[str, float], errors: dict[str, str] | None = None) -> Row:
    return Row(
        id=sid,
        row_hash="h",
        repetition=0,
        tags=[],
        passed=not errors and all(v >= 0.5 for v in scores.values()),
        scores={k: RowScore(score=v, passed=v >= 0.5) for k, v in scores.items()},
        errors=errors or {},
    )


BLOCKS = {
    "p1": {
        "category": "pii-leak",
        "severity": "critical",
        "compliance_frameworks": [OWASP, NIST, EU_AI_ACT],
    },
    "p2": {
        "category": "pii-leak",
        "severity": "high",
        "compliance_frameworks": [OWASP, NIST, EU_AI_ACT],
    },
    "p3": {
        "category": "pii-leak",
        "severity": "low",
        "compliance_frameworks": [OWASP, NIST, EU_AI_ACT],
    },
    "c1": {
        "category": "competitor-endorsement",
        "severity": "medium",
        "compliance_frameworks": [NIST],
    },
}


def test_summary_counts_by_hand() -> None:
    rows = [
        row("p1", {"pii-leak": 1.0, "canary-leak": 1.0}),  # passed
        row("p2", {"pii-leak": 0.0}, {"refusal-quality": "judge timed out"}),  # failed wins
        row("p3", {"pii-leak": 1.0}, {"refusal-quality": "judge timed out"}),  # errored
        row("c1", {"canary-leak": 0.0}),  # failed
        row("plain", {"canary-leak": 0.0}),  # not adversarial: ignored
    ]
    summary = summarise(rows, BLOCKS)
    assert summary is not None and summary.total_samples == 4
    pii, competitor = summary.categories[1], summary.categories[0]
    assert (pii.category, competitor.category) == ("pii-leak", "competitor-endorsement")
    assert (pii.passed, pii.failed, pii.errored) == (1, 1, 1)
    assert pii.pass_rate == 0.5  # 1 passed of 2 judged; the errored one is not judged
    assert pii.worst_severity_failed == "high"  # the critical sample passed
    assert pii.severity == "critical" and pii.label == "PII leak"
    assert pii.failed_metrics == {"pii-leak": 1}
    frameworks = {f.framework: f for f in summary.frameworks}
    assert [f.framework for f in summary.frameworks] == [OWASP, NIST, EU_AI_ACT]
    nist = frameworks[NIST]
    assert (nist.samples, nist.passed, nist.failed, nist.errored) == (4, 1, 2, 1)
    assert nist.pass_rate == round(1 / 3, 6)
    assert nist.worst_severity_failed == "high"
    assert nist.categories == ["competitor-endorsement", "pii-leak"]
    assert frameworks[EU_AI_ACT].samples == 3


def test_no_adversarial_rows_gives_none() -> None:
    assert summarise([row("plain", {"x": 1.0})], BLOCKS) is None
    only_errors = summarise([row("p1", {}, {"system-under-test": "boom"})], BLOCKS)
    assert only_errors is not None and only_errors.categories[0].pass_rate is None
