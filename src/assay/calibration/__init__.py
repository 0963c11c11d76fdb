"""Judge calibration: agreement between LLM judges and human labels.

``load_labels(path)`` reads a labels file into a :class:`LabelSet`; ``compute_agreement``
turns it into a :class:`CalibrationResult` (``schema_version: assay.calibration.v1``) with
``summary()``, ``to_json()``, ``to_file()`` and ``to_dataframe()``. See docs/calibration.md.

Names are imported lazily so that ``assay --help`` (which mounts ``assay agreement``) does not
pay for numpy and the statistics stack.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "Aggregation": "assay.calibration.aggregate",
    "consensus": "assay.calibration.aggregate",
    "compute_agreement": "assay.calibration.compute",
    "labels_from_data": "assay.calibration.documents",
    "load_criteria": "assay.calibration.loaders",
    "load_labels": "assay.calibration.loaders",
    "Criterion": "assay.calibration.model",
    "LabelsDocument": "assay.calibration.model",
    "LabelSet": "assay.calibration.model",
    "Option": "assay.calibration.model",
    "Verdict": "assay.calibration.model",
    "CALIBRATION_SCHEMA": "assay.calibration.result",
    "CalibrationResult": "assay.calibration.result",
    "weighted_scores": "assay.calibration.aggregate",
}

__all__ = [
    "CALIBRATION_SCHEMA",
    "Aggregation",
    "CalibrationResult",
    "Criterion",
    "LabelSet",
    "LabelsDocument",
    "Option",
    "Verdict",
    "compute_agreement",
    "consensus",
    "labels_from_data",
    "load_criteria",
    "load_labels",
    "weighted_scores",
]

if TYPE_CHECKING:
    from assay.calibration.aggregate import Aggregation, consensus, weighted_scores
    from assay.calibration.compute import compute_agreement
    from assay.calibration.documents import labels_from_data
    from assay.calibration.loaders import load_criteria, load_labels
    from assay.calibration.model import Criterion, LabelsDocument, LabelSet, Option, Verdict
    from assay.calibration.result import CALIBRATION_SCHEMA, CalibrationResult


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'assay.calibration' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
