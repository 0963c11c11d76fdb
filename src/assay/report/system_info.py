"""What a report says about the system under test.

Apart from :mod:`assay.report.model` because a run needs it before its first answer (the store
records it when the run starts), while the report's other models are needed from its first
result on: a judge run's first request no longer waits for them to load.
"""

from __future__ import annotations

from typing import Literal

from assay.report.strict import StrictModel


class SystemUnderTestInfo(StrictModel):
    kind: Literal["saved-outputs", "python", "http", "none"]
    target: str | None = None
