"""ordinal-distance: graded credit for ordered labels (exact 1.0, off by one 0.5, else 0.0)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from types import MappingProxyType
from typing import TYPE_CHECKING

from assay.errors import MetricConfigError, MetricError
from assay.metrics.base import MetricScore, expected_string
from assay.metrics.batch import ColumnBuilder, ScoreColumn

if TYPE_CHECKING:
    from assay.data.dataset import Sample
    from assay.data.outputs import Output


def valid_scale(scale: object) -> bool:
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

    def _lookup(self, sample: Sample, default: Mapping[str, int] | None) -> Mapping[str, int]:
        """Label -> position on the sample's scale (``default``: the option's, built once)."""
        override = sample.metadata.get("ordinal_scale")
        if override is not None:
            if type(override) is list and all(type(label) is str for label in override):
                return _valid_positions(tuple(override))  # checked once per distinct scale
            if not valid_scale(override):
                raise MetricError(_BAD_OVERRIDE)
            return _positions(tuple(override))
        if default is None:
            raise MetricError(
                "no ordinal scale: give the metric a scale ({name: ordinal-distance, scale: "
                "[...]}) "
                "or set metadata.ordinal_scale"
            )
        return default

    def _indices(
        self, sample: Sample, output: Output, default: Mapping[str, int] | None
    ) -> tuple[int, int | None]:
        """(expected, actual) positions on the sample's scale; the actual one None when the
        answer is not a label of it."""
        positions = self._lookup(sample, default)
        expected = expected_string(sample, self.name)
        if expected not in positions:
            raise MetricError(
                f"expected_output is not one of the {len(positions)} labels of the ordinal scale"
            )
        return positions[expected], positions.get(output.text)

    def _default(self) -> Mapping[str, int] | None:
        return None if self.scale is None else _positions(self.scale)

    def score(self, sample: Sample, output: Output) -> MetricScore:
        expected_index, actual_index = self._indices(sample, output, self._default())
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

    def score_batch(self, samples: Sequence[Sample], outputs: Sequence[Output]) -> ScoreColumn:
        """As ``score`` row by row: positions read per row (the option's scale mapped once, each
        distinct ``metadata.ordinal_scale`` once), distances and credit computed by numpy."""
        import numpy as np

        size = len(samples)
        builder = ColumnBuilder(size)
        default = self._default()
        expected, actual = [-1] * size, [-1] * size  # -1: an errored row, or no label
        for index, (sample, output) in enumerate(zip(samples, outputs)):
            try:
                expected[index], found = self._indices(sample, output, default)
            except MetricError as exc:
                builder.fail(index, str(exc))
                continue
            if found is not None:
                actual[index] = found
        scored, labelled = np.array(expected) >= 0, np.array(actual) >= 0
        distance = np.abs(np.array(expected) - np.array(actual))
        credit = np.where(distance == 0, 1.0, np.where(distance == 1, 0.5, 0.0))
        builder.values[:] = np.where(labelled, credit, np.where(scored, 0.0, np.nan))
        builder.put_column("expected_index", [e if e >= 0 else None for e in expected])
        builder.put_column("actual_index", [a if a >= 0 else None for a in actual])
        gaps = zip(distance.tolist(), labelled.tolist())
        builder.put_column("distance", [d if ok else None for d, ok in gaps])
        return builder.build()


_BAD_OVERRIDE = "metadata.ordinal_scale must be a non-empty list of unique, non-empty strings"


@lru_cache(maxsize=256)  # a memo of a pure function: a dataset's scales repeat row after row
def _valid_positions(scale: tuple[str, ...]) -> Mapping[str, int]:
    if not valid_scale(scale):
        raise MetricError(_BAD_OVERRIDE)
    return _positions(scale)


@lru_cache(maxsize=256)
def _positions(scale: tuple[str, ...]) -> Mapping[str, int]:
    """Label -> index on a valid scale (its labels are unique)."""
    return MappingProxyType({label: index for index, label in enumerate(scale)})
