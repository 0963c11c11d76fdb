"""assay inside ordinary tests: single checks and the pytest plugin's dataset rows.

``assert_metric`` scores one answer with one metric and raises ``AssertionError`` (expected vs
actual in the message) when it fails or cannot be scored. The pytest plugin
(:mod:`assay.testing.plugin`) turns every sample of a dataset into its own test.
"""

from __future__ import annotations

from assay.testing.checks import assert_metric, assert_metric_async
from assay.testing.rows import AssayRow
from assay.testing.suite import DatasetSuite

__all__ = ["AssayRow", "DatasetSuite", "assert_metric", "assert_metric_async"]
