"""Judge calibration: agreement between LLM judges and human labels.

``load_labels(path)`` reads a labels file into a :class:`LabelSet`; ``compute_agreement``
turns it into a :class:`CalibrationResult` (``schema_version: assay.calibration.v1``) with
``summary()``, ``to_json()``, ``to_file()`` and ``to_dataframe()``. See docs/calibration.md.
"""

from assay.calibration.aggregate import Aggregation, consensus
from assay.calibration.compute import compute_agreement
from assay.calibration.loaders import labels_from_data, load_criteria, load_labels
from assay.calibration.model import (
    Criterion,
    LabelsDocument,
    LabelSet,
    Option,
    Verdict,
)
from assay.calibration.result import CALIBRATION_SCHEMA, CalibrationResult
from assay.calibration.scoring import weighted_scores

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
