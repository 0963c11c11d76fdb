"""Other evaluation tools' files as assay documents: ``assay import SOURCE FILE``.

* ``autorubric``: a ``RubricDataset`` JSON -> a rubric dataset (``assay calibrate``); its
  evaluation results (``items.jsonl``) with the dataset -> a labels file (``assay agreement``).
* ``padosoft-calibration``: ``eval-harness.calibration.v1`` cases -> a dataset for
  ``assay calibrate --metric llm-as-judge``.
* ``promptfoo``: ``tests`` with the assertions assay has metrics for -> a dataset.
* ``deepeval``: goldens JSON -> a dataset (and the answers they carry -> saved outputs).

Each importer returns an :class:`Imported` naming what it could not carry over.
"""

from __future__ import annotations

from assay.importers.common import Imported
from assay.importers.convert import SOURCES, convert

__all__ = ["SOURCES", "Imported", "convert"]
