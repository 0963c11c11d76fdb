"""The judge calibration cache: one measurement per (judge, calibration set, threshold).

A run's judge scores its calibration set once; the next run with the same judge model, prompt
template, options, labels and threshold reads the measurement back instead of judging again.
Entries live in ``<project>/.assay/judge-calibrations/<key>.json``; an unreadable entry is
ignored (measured again), never an error.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from assay.data.fileio import write_atomic
from assay.errors import UsageError
from assay.report.judge_model import JudgeAgreement, PassAgreement
from assay.store.project import project_dir

__all__ = [
    "CACHE_SCHEMA",
    "CachedMeasure",
    "cache_key",
    "latest_for",
    "read_cached",
    "write_cached",
]

CACHE_SCHEMA: Final = "assay.judge-calibration.v1"
_FOLDER: Final = "judge-calibrations"


class CachedMeasure(BaseModel):
    """One stored measurement of a judge on a calibration set."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: Literal["assay.judge-calibration.v1"] = CACHE_SCHEMA
    key: str
    judge_key: str
    labels_hash: str
    n_labelled: int
    n_judged: int
    agreement: list[JudgeAgreement]
    pass_agreement: PassAgreement
    measured_at: str
    metric: str = ""
    calibration: str = ""


def cache_key(judge_key: str, labels_hash: str, threshold: float) -> str:
    """The entry's name: the judge's identity, the labels and the pass threshold."""
    text = f"{judge_key}\n{labels_hash}\n{threshold!r}"
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def _path(key: str, home: Path | None) -> Path:
    return (home if home is not None else project_dir()) / _FOLDER / f"{key}.json"


def read_cached(key: str, home: Path | None = None) -> CachedMeasure | None:
    """The stored measurement under ``key``; None when absent or unreadable."""
    path = _path(key, home)
    try:
        return CachedMeasure.model_validate_json(path.read_bytes())
    except (OSError, ValidationError, ValueError):
        return None


def write_cached(entry: CachedMeasure, home: Path | None = None) -> None:
    """Keep a measurement; a cache that cannot be written is skipped (the run goes on)."""
    path = _path(entry.key, home)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, entry.model_dump_json(indent=2) + "\n")
    except (OSError, UsageError):
        return


def latest_for(metric: str, calibration: str, home: Path | None = None) -> CachedMeasure | None:
    """The newest measurement of ``metric`` on the set at ``calibration``, by any judge."""
    folder = (home if home is not None else project_dir()) / _FOLDER
    try:
        names = sorted(folder.glob("*.json"))
    except OSError:
        return None
    found = [read_cached(name.stem, home) for name in names]
    mine = [
        e for e in found if e is not None and (e.metric, e.calibration) == (metric, calibration)
    ]
    return max(mine, key=lambda e: e.measured_at) if mine else None
