"""ordinal-distance: graded credit for ordered labels (exact 1.0, off by one 0.5, else 0.0)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from assay.errors import MetricConfigError, MetricError
from assay.metrics.base import MetricScore, expected_string

if TYPE_CHECKING:
    from assay.dataset import Sample
    from assay.outputs import Output


def valid_scale(scale: Any) -> bool:
    return (
        isinstance(scale, Sequence)
        and not isinstance(scale, str)
        and len(scale) > 0
        and all(isinstance(item, str) and item for item in scale)
        and len(set(scale)) == len(scale)
    )


@dataclass(frozen=True)
class OrdinalDistance:
    """The scale comes from the ``scale`` option or the sample's ``metadata.ordinal_scale``."""

    name: str = "ordinal-distance"
    scale: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if self.scale is not None:
            if not valid_scale(self.scale):
                raise MetricConfigError(
                    "ordinal-distance scale must be a non-empty list of unique, non-empty strings"
                )
            object.__setattr__(self, "scale", tuple(self.scale))

    def check_config(self, samples: Sequence[Sample]) -> None:
        """Before any work: every sample needs a scale, from the option or its metadata."""
        if self.scale is not None:
            return
        missing = [s.id for s in samples if s.metadata.get("ordinal_scale") is None]
        if missing:
            raise MetricConfigError(
                f"metric '{self.name}' has no 'scale' option and sample '{missing[0]}' has no "
                "metadata.ordinal_scale (give {name: ordinal-distance, scale: [...]})"
            )

    def _scale(self, sample: Sample) -> tuple[str, ...]:
        override = sample.metadata.get("ordinal_scale")
        if override is not None:
            if not valid_scale(override):
                raise MetricError(
                    "metadata.ordinal_scale must be a non-empty list of unique, non-empty strings"
                )
            return tuple(override)
        if self.scale is None:
            raise MetricError(
                "no ordinal scale: give the metric a scale ({name: ordinal-distance, scale: "
                "[...]}) "
                "or set metadata.ordinal_scale"
            )
        return self.scale

    def score(self, sample: Sample, output: Output) -> MetricScore:
        scale = self._scale(sample)
        expected = expected_string(sample, self.name)
        if expected not in scale:
            raise MetricError(
                f"expected_output is not one of the {len(scale)} labels of the ordinal scale"
            )
        expected_index = scale.index(expected)
        actual_index = scale.index(output.text) if output.text in scale else None
        if actual_index is None:
            return MetricScore(
                0.0, {"expected_index": expected_index, "actual_index": None, "distance": None}
            )
        distance = abs(expected_index - actual_index)
        value = 1.0 if distance == 0 else 0.5 if distance == 1 else 0.0
        return MetricScore(
            value,
            {"expected_index": expected_index, "actual_index": actual_index, "distance": distance},
        )
