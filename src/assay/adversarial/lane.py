"""What ``assay adversarial`` adds to a run: its dataset, default metrics, compliance, drift.

The command runs through the same path as ``assay run`` (one evaluate, one store, the same
reports); this module holds what differs. The default metrics are the offline detectors that
apply to the selected samples, plus ``refusal-quality`` when a judge model is configured.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assay.data.dataset import Dataset, MetricSpec, Sample
from assay.errors import UsageError
from assay.report.model import Report, Row

if TYPE_CHECKING:
    from assay.adversarial.history import DriftResult

JUDGE_METRIC = "refusal-quality"
PII_CATEGORIES = frozenset({"pii-leak"})


def _category(sample: Sample) -> str:
    return str(sample.metadata["adversarial"]["category"])


def _declares_forbidden_tools(sample: Sample) -> bool:
    trajectory = sample.metadata.get("trajectory")
    return isinstance(trajectory, dict) and bool(trajectory.get("forbidden_tools"))


def _scope(samples: Sequence[Sample], test: Callable[[Sample], bool]) -> list[str]:
    return sorted({_category(s) for s in samples if test(s)})


def detector_scopes(dataset: Dataset) -> dict[str, list[str] | None]:
    """Each detector and the categories it applies to (None: every sample); empty: none."""
    samples = dataset.samples
    return {
        "canary-leak": _scope(samples, lambda s: "canary" in s.metadata),
        "pii-leak": _scope(samples, lambda s: _category(s) in PII_CATEGORIES),
        "forbidden-tool-call": _scope(samples, _declares_forbidden_tools),
        "invisible-characters": None,
    }


def lane_metrics(
    dataset: Dataset, *, add: Iterable[str], skip: Iterable[str], judge: bool
) -> list[Any]:
    """The lane's metric specs: applicable detectors (+ the judge), plus ``--metric``, minus
    ``--skip-metric``. A detector is scoped to the category tags it applies to."""
    specs: list[Any] = [JUDGE_METRIC] if judge else []
    for name, categories in detector_scopes(dataset).items():
        if categories is None:
            specs.append(name)
        elif categories:
            specs.append(MetricSpec.model_validate({"name": name, "tags": categories}))
    names = [_name(spec) for spec in specs]
    for extra in add:
        if extra not in names:
            specs.append(extra)
            names.append(extra)
    skipped = list(skip)
    unknown = [name for name in skipped if name not in names]
    if unknown:
        raise UsageError(
            f"--skip-metric {unknown[0]!r} is not one of the lane's metrics: {', '.join(names)}"
        )
    return [spec for spec in specs if _name(spec) not in skipped]


def _name(spec: str | MetricSpec) -> str:
    return spec if isinstance(spec, str) else str(spec.name)


RowSource = Callable[[], Iterable[Row]]


@dataclass
class LaneHooks:
    """Handed to the shared run path by ``assay adversarial`` (see run_cli.run).

    ``fail_on``: the lowest severity whose failed attack fails the lane (None: never).
    """

    dataset: Dataset
    metric_specs: list[Any]
    history: Any = None
    fail_on: str | None = "critical"

    def gate(self, report: Report) -> tuple[Report, list[str]]:
        """The report with the drift-gate outcome, and why the lane failed (empty: it passed)."""
        summary = report.adversarial
        if summary is None:
            return report, []
        problems = _severity_failures(summary.categories, self.fail_on)
        if self.history is not None:
            result = self.history.check(report)
            summary = summary.model_copy(update={"drift": result.model_dump(mode="json")})
            report = report.model_copy(update={"adversarial": summary})
            problems += _drift_failures(result)
        return report, problems

    def finished(self, report: Report, gate_passed: bool) -> list[str]:
        """Record the run in the lane history; lines to show the user."""
        if self.history is None or report.adversarial is None:
            return []
        drift = report.adversarial.drift or {}
        lines = [f"drift gate {drift.get('status')}" + _baseline_note(drift)]
        entry = self.history.record(report, gate_passed)
        state = "a baseline candidate" if entry.clean else "not a baseline (errors or gate)"
        lines.append(f"recorded run {entry.run_id} in {self.history.path} ({state})")
        return lines


def _severity_failures(categories: Sequence[Any], fail_on: str | None) -> list[str]:
    from assay.adversarial.categories import severity_rank

    if fail_on is None:
        return []
    return [
        f"{c.category}: {c.failed} failed execution(s), worst severity {c.worst_severity_failed} "
        f"(--fail-on {fail_on})"
        for c in categories
        if c.worst_severity_failed is not None
        and severity_rank(c.worst_severity_failed) >= severity_rank(fail_on)
    ]


def _drift_failures(result: DriftResult) -> list[str]:
    if result.status != "fail":
        return []
    if result.message:
        return [f"drift gate: {result.message}"]
    return [
        f"drift gate: {c.target} {c.status} (baseline {c.baseline_score}, now {c.current_score}, "
        f"max drop {c.max_drop})"
        for c in result.checks
        if c.status != "pass"
    ]


def _baseline_note(drift: dict[str, Any]) -> str:
    base = drift.get("baseline_run_id")
    return f" against run {base}" if base else f": {drift.get('message')}"


def with_compliance(
    report: Report, dataset: Dataset, rows: RowSource, *, promote_to: Path | None, source: str
) -> Report:
    """Add the compliance summary (adversarial samples) and write promoted failures."""
    from assay.adversarial.compliance import blocks_of, summarise

    blocks = blocks_of(dataset)
    if blocks:
        report = report.model_copy(update={"adversarial": summarise(rows(), blocks)})
    if promote_to is not None:
        from assay.adversarial.promote import promote_failures

        promote_failures(dataset, rows(), promote_to, source=source, run_id=report.run.run_id)
    return report
