"""The judge step of ``assay run``: where the calibration sets are, and the blocks added.

A metric's ``calibration:`` path is read relative to the dataset's folder (as a rubric file
is), else as given; a set that is not there stops the run before any work, in one line.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from assay.data.fileio import is_file
from assay.errors import UsageError
from assay.judges.identity import is_judge
from assay.judges.run_blocks import judge_blocks_sync
from assay.metrics.base import Metric
from assay.providers.settings import ProviderSettings
from assay.report.judge_model import JudgeCalibration
from assay.report.model import Report
from assay.store.runs import RunStore

__all__ = ["calibration_paths", "judge_lines", "with_judges"]


def calibration_paths(calibrations: Mapping[str, str], dataset: Path) -> dict[str, Path]:
    """Each metric's calibration set as a path; UsageError naming the first one missing."""
    base = dataset.parent
    found: dict[str, Path] = {}
    for name, raw in calibrations.items():
        for candidate in (base / raw, Path(raw)):
            if is_file(candidate):
                found[name] = candidate
                break
        else:
            raise UsageError(
                f"{dataset}: metric '{name}' option 'calibration': no such file {raw!r} "
                f"(looked in {base} and the working directory)"
            )
    return found


def with_judges(
    report: Report,
    metrics: Sequence[Metric],
    calibrations: Mapping[str, Path],
    thresholds: Mapping[str, float],
    settings: ProviderSettings,
    *,
    store: RunStore | None,
    concurrency: int = 8,
) -> Report:
    """The report with its judge blocks (none when no metric calls a judge), kept in
    ``store`` too so that ``assay report`` and the viewer show them."""
    if not any(is_judge(metric, settings) for metric in metrics):
        return report
    blocks = judge_blocks_sync(
        report, metrics, calibrations, thresholds, settings, concurrency=concurrency
    )
    if not blocks:
        return report
    if store is not None:
        store.record_judges(report.run.run_id, [b.model_dump(mode="json") for b in blocks])
    return report.model_copy(update={"judges": blocks})


def judge_lines(blocks: Sequence[JudgeCalibration] | None) -> list[str]:
    """One stderr line per judge metric: its agreement, or why there is none."""
    return [f"judge {b.metric}: {b.status}: {b.note}" for b in blocks or []]
