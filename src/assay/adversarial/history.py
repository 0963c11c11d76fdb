"""The lane's history: a manifest of adversarial runs in ``.assay/`` and the drift gate.

Every lane run is recorded (``assay.adversarial-runs.v1``) with the numbers the drift gate
reads. The baseline of a run is the newest *compatible* entry (same dataset, metric names,
categories and their sample counts, report schema) that is *clean*: no errored execution, not
halted, its gate passed and its drift gate did not fail. Failed attacks do not disqualify a
baseline (the gate measures drift from it); errors do, because their aggregates are partial.
With no baseline the gate warns and never fails, except when a ``--max-drop`` target does not
exist in this run at all (a configuration mistake). Writes are atomic (temp file + rename)
under an exclusive lock file; retention keeps the newest N runs plus each slice's baseline.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from assay.adversarial.drift import Check, DropRule, check, parse_rules, report_values
from assay.data.bounded import loads_json
from assay.data.dataset import read_text
from assay.data.fileio import exists, write_atomic
from assay.errors import InputError, UsageError
from assay.report.model import Report

MANIFEST_SCHEMA: Final = "assay.adversarial-runs.v1"
MANIFEST_NAME: Final = "adversarial-runs.json"


class LaneRun(BaseModel):
    """One recorded lane run: its identity, compatibility slice, cleanliness and numbers."""

    model_config = ConfigDict(extra="forbid")

    run_id: str
    recorded_at: str
    slice: dict[str, Any]
    clean: bool
    errored_executions: int
    failed_categories: list[str]
    values: dict[str, float | None]


class Manifest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_version: Literal["assay.adversarial-runs.v1"] = MANIFEST_SCHEMA
    updated_at: str | None = None
    runs: list[LaneRun] = Field(default_factory=list)


class DriftResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    status: Literal["pass", "fail", "missing-baseline"]
    current_run_id: str
    baseline_run_id: str | None
    checks: list[Check]
    message: str | None = None


def slice_of(report: Report) -> dict[str, Any]:
    """What two runs must share to be compared."""
    summary = report.adversarial
    categories = summary.categories if summary is not None else []
    return {
        "dataset": report.dataset.name,
        "metrics": sorted(m.name for m in report.metrics),
        "categories": [{"category": c.category, "samples": c.samples} for c in categories],
        "report_schema": report.schema_version,
    }


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


class History:
    """The manifest at ``path`` plus the drift rules of this run."""

    def __init__(self, path: Path, *, retain: int, rules: list[DropRule]) -> None:
        if retain < 1:
            raise UsageError(f"--history-retain must be at least 1; got {retain}")
        self.path = path
        self.retain = retain
        self.rules = rules

    def load(self) -> Manifest:
        if not exists(self.path):
            return Manifest()
        text = read_text(self.path, InputError)
        data = loads_json(text, self._invalid)
        try:
            return Manifest.model_validate(data)
        except ValidationError as exc:
            raise self._invalid(exc.errors()[0]["msg"]) from None

    def _invalid(self, problem: str) -> InputError:
        return InputError(
            f"not a valid {MANIFEST_SCHEMA} manifest ({problem})", file=str(self.path)
        )

    def baseline(self, report: Report) -> LaneRun | None:
        wanted = slice_of(report)
        for entry in reversed(self.load().runs):
            if entry.clean and entry.slice == wanted and entry.run_id != report.run.run_id:
                return entry
        return None

    def check(self, report: Report) -> DriftResult:
        """The drift gate of ``report`` against its baseline."""
        current = report_values(report)
        absent = [r.target for r in self.rules if r.target not in current]
        base = self.baseline(report)
        if base is None:
            status: Literal["fail", "missing-baseline"] = "fail" if absent else "missing-baseline"
            message = (
                f"--max-drop target {absent[0]!r} is not in this run"
                if absent
                else "no compatible clean lane run yet: nothing to compare (the gate passes)"
            )
            return DriftResult(
                status=status,
                current_run_id=report.run.run_id,
                baseline_run_id=None,
                checks=[],
                message=message,
            )
        checks = [check(rule, base.values, current) for rule in self.rules]
        failed = any(c.status != "pass" for c in checks)
        return DriftResult(
            status="fail" if failed else "pass",
            current_run_id=report.run.run_id,
            baseline_run_id=base.run_id,
            checks=checks,
        )

    def record(self, report: Report, gate_passed: bool) -> LaneRun:
        """Append this run to the manifest (atomically, under the lock) and apply retention."""
        entry = _entry(report, gate_passed)
        with _locked(self.path):
            manifest = self.load()
            runs = [r for r in manifest.runs if r.run_id != entry.run_id] + [entry]
            kept = _retained(runs, self.retain)
            updated = Manifest(updated_at=_now(), runs=kept)
            write_atomic(self.path, updated.model_dump_json(indent=2) + "\n")
        return entry


def _entry(report: Report, gate_passed: bool) -> LaneRun:
    summary = report.adversarial
    drift = summary.drift if summary is not None else None
    drift_failed = drift is not None and drift.get("status") == "fail"
    errored = report.summary.errored_rows
    return LaneRun(
        run_id=report.run.run_id,
        recorded_at=_now(),
        slice=slice_of(report),
        clean=errored == 0 and gate_passed and not drift_failed and not report.run.halted,
        errored_executions=errored,
        failed_categories=[c.category for c in summary.categories if c.failed] if summary else [],
        values=report_values(report),
    )


def _retained(runs: list[LaneRun], retain: int) -> list[LaneRun]:
    """The newest ``retain`` runs plus the newest clean run of every slice (its baseline)."""
    keep = {id(r) for r in runs[-retain:]}
    seen: list[dict[str, Any]] = []
    for entry in reversed(runs):
        if entry.clean and entry.slice not in seen:
            seen.append(entry.slice)
            keep.add(id(entry))
    return [r for r in runs if id(r) in keep]


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive lock on ``<manifest>.lock`` (POSIX ``flock``; no lock elsewhere)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    lock = path.with_name(path.name + ".lock")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle = open(lock, "a")  # noqa: SIM115 - held across the yield
    except OSError as exc:
        raise UsageError(f"cannot lock the lane history {lock}: {exc.strerror or exc}") from None
    with handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def history_for(path: Path | None, *, retain: int, max_drop: list[str]) -> History:
    """The lane history at ``path`` (default ``adversarial-runs.json`` in the project's
    ``.assay/``) with its rules."""
    from assay.store.project import project_dir

    manifest = path or project_dir() / MANIFEST_NAME
    return History(manifest, retain=retain, rules=parse_rules(max_drop))
