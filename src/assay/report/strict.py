"""The base of the report's document models: a key the model does not define is refused, so a
misspelt key in a report, comparison or compliance summary is an error, never dropped."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class StrictModel(BaseModel):
    """A document model that refuses unknown keys."""

    model_config = ConfigDict(extra="forbid", defer_build=True)
