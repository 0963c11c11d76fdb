"""A run's judge blocks: every judge metric's judge, its calibration and corrected pass rate.

Once per run (after the samples are scored, inside the run's provider settings) each judge
metric that names a calibration set is measured on it, or read back from the cache when the
same judge already scored the same labels. Each block ends in one line, ``note``, that says
what a reader must know first: the agreement and its lowest bound, or that the calibration is
missing or could not be measured.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path

from assay.calibration.rogan_gladen import PassCounts, rogan_gladen
from assay.errors import AssayError
from assay.judges.cache import CachedMeasure, cache_key, latest_for, read_cached, write_cached
from assay.judges.identity import identity, is_judge
from assay.judges.measure import labels_hash, measure
from assay.metrics.base import Metric
from assay.providers.settings import ProviderSettings
from assay.report.judge_model import (
    CorrectedPassRate,
    JudgeAgreement,
    JudgeCalibration,
    JudgeIdentity,
)
from assay.report.judge_sections import agreement_text
from assay.report.model import Report

__all__ = ["judge_blocks", "judge_blocks_sync"]


def _measured_note(agreement: Sequence[JudgeAgreement], lowest: float | None) -> str:
    if not agreement:
        return "calibration measured, but no criterion had labelled pairs"
    shown = "; ".join(agreement_text(a) for a in agreement)
    bound = "n/a" if lowest is None else f"{lowest:.2f}"
    return f"agreement with people: {shown}; lowest bound {bound}"


def _lowest(agreement: Sequence[JudgeAgreement]) -> float | None:
    bounds = [a.low for a in agreement if a.low is not None]
    return min(bounds) if bounds else None


def _corrected(report: Report, name: str, counts: PassCounts) -> CorrectedPassRate | None:
    """The metric's raw pass rate and the Rogan-Gladen correction for the judge's errors."""
    try:
        aggregate = report.metric(name)
    except KeyError:
        return None
    raw, n = aggregate.pass_rate, aggregate.scored
    passed = round(raw * n) if raw is not None else 0
    fixed = rogan_gladen(passed, n, counts)
    return CorrectedPassRate(
        raw=raw,
        n=n,
        corrected=fixed.estimate,
        low=fixed.low,
        high=fixed.high,
        confidence=fixed.confidence,
    )


def _missing(name: str, judge: JudgeIdentity) -> JudgeCalibration:
    return JudgeCalibration(
        metric=name,
        judge=judge,
        status="missing",
        note=f"no calibration set: how far judge {judge.model} agrees with people is "
        "unmeasured (metric option calibration: FILE)",
    )


async def _one(
    metric: Metric, judge: JudgeIdentity, path: Path, threshold: float, concurrency: int
) -> tuple[CachedMeasure, bool]:
    """The measurement (cached or new) and whether it came from the cache."""
    labels = labels_hash(path)
    key = cache_key(judge.key, labels, threshold)
    cached = read_cached(key)
    if cached is not None:
        return cached, True
    found = await measure(metric, path, threshold=threshold, concurrency=concurrency)
    entry = CachedMeasure(
        key=key,
        judge_key=judge.key,
        labels_hash=labels,
        n_labelled=found.n_labelled,
        n_judged=found.n_judged,
        agreement=found.agreement,
        pass_agreement=found.passes,
        measured_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        metric=metric.name,
        calibration=str(path.resolve()),
    )
    write_cached(entry)
    return entry, False


def _unmeasured(name: str, judge: JudgeIdentity, path: Path, message: str) -> JudgeCalibration:
    """An errored block; ``stale`` when an earlier measurement of this metric on this set (by
    another judge or on other labels) exists: shown, but with no bound the gate could trust."""
    prior = latest_for(name, str(path.resolve()))
    if prior is None:
        return JudgeCalibration(
            metric=name,
            judge=judge,
            status="errored",
            note=f"calibration could not be measured: {message}",
            calibration=str(path),
        )
    shown = "; ".join(agreement_text(a) for a in prior.agreement)
    return JudgeCalibration(
        metric=name,
        judge=judge,
        status="stale",
        note=f"stale: re-measuring failed ({message}); last measured {prior.measured_at} by "
        f"judge key {prior.judge_key} on labels {prior.labels_hash}: {shown}",
        calibration=str(path),
        labels_hash=prior.labels_hash,
        n_labelled=prior.n_labelled,
        n_judged=prior.n_judged,
        agreement=prior.agreement,
        measured_at=prior.measured_at,
    )


async def _block(
    report: Report,
    metric: Metric,
    judge: JudgeIdentity,
    path: Path,
    threshold: float,
    concurrency: int,
) -> JudgeCalibration:
    """One calibrated judge metric's block; an unmeasurable set is an errored block."""
    try:
        entry, cached = await _one(metric, judge, path, threshold, concurrency)
    except (AssayError, OSError) as exc:
        return _unmeasured(metric.name, judge, path, " ".join(str(exc).split()))
    p = entry.pass_agreement
    counts = PassCounts(p.true_pass, p.false_fail, p.false_pass, p.true_fail)
    lowest = _lowest(entry.agreement)
    return JudgeCalibration(
        metric=metric.name,
        judge=judge,
        status="cached" if cached else "measured",
        note=_measured_note(entry.agreement, lowest),
        calibration=str(path),
        labels_hash=entry.labels_hash,
        n_labelled=entry.n_labelled,
        n_judged=entry.n_judged,
        agreement=entry.agreement,
        lowest_bound=lowest,
        pass_agreement=p,
        pass_rate=_corrected(report, metric.name, counts),
        measured_at=entry.measured_at,
    )


async def judge_blocks(
    report: Report,
    metrics: Sequence[Metric],
    calibrations: Mapping[str, Path],
    thresholds: Mapping[str, float],
    settings: ProviderSettings,
    *,
    concurrency: int = 8,
) -> list[JudgeCalibration]:
    """One block per judge metric of the run, in the run's metric order."""
    blocks: list[JudgeCalibration] = []
    for metric in metrics:
        if not is_judge(metric, settings):
            continue
        judge = identity(metric, settings)
        path = calibrations.get(metric.name)
        if path is None:
            blocks.append(_missing(metric.name, judge))
            continue
        threshold = thresholds.get(metric.name, 0.5)
        blocks.append(await _block(report, metric, judge, path, threshold, concurrency))
    return blocks


def judge_blocks_sync(
    report: Report,
    metrics: Sequence[Metric],
    calibrations: Mapping[str, Path],
    thresholds: Mapping[str, float],
    settings: ProviderSettings,
    *,
    concurrency: int = 8,
) -> list[JudgeCalibration]:
    """:func:`judge_blocks` in its own event loop, closing the provider clients after."""
    from assay.providers import registry

    async def run() -> list[JudgeCalibration]:
        try:
            return await judge_blocks(
                report, metrics, calibrations, thresholds, settings, concurrency=concurrency
            )
        finally:
            await registry.aclose()

    return asyncio.run(run())
