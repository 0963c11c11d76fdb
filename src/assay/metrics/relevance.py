"""Relevance judgements of the retrieval metrics: ``{id: gain}`` and the cut-off k.

Relevance comes from ``metadata.relevant`` when a sample has it (so ``expected_output`` can
hold the reference answer), else from ``expected_output``: a list of ids (gain 1 each), a
mapping of id to numeric gain, or a JSON string of either. An id is relevant when its gain is
above zero.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from assay.data.bounded import loads_json
from assay.errors import MetricConfigError, MetricError
from assay.metrics.base import positive_int_option, type_name
from assay.metrics.memo import LastParsed

if TYPE_CHECKING:
    from assay.data.dataset import Sample

DEFAULT_K = 5
RELEVANT_KEY = "relevant"
_LAST_GAINS: LastParsed[Mapping[str, float]] = LastParsed()
_INT, _STR = frozenset({int}), frozenset({str})
_METADATA_WHERE = f"metadata.{RELEVANT_KEY}"
_POSITIVE = (0.0).__lt__
FINITE_LEVEL = 2**1023  # an integer level smaller than this in magnitude is a finite float


def gains(sample: Sample) -> Mapping[str, float]:
    """Relevance ``{id: gain}`` from ``metadata.relevant``, else from ``expected_output``.

    ``metadata.relevant`` lets one sample hold a reference answer in ``expected_output`` and
    the relevant document ids beside it (callers must not mutate the result).
    """
    memo = _LAST_GAINS
    raw, where = relevance_source(sample)
    if memo.source is raw and raw is not None and memo.value is not None:
        return memo.value
    return memo.remember(raw, parse_gains(raw, where))


def relevance_source(sample: Sample) -> tuple[Any, str]:
    """The raw judgements (``metadata.relevant``, else ``expected_output``) and where from."""
    raw = sample.metadata.get(RELEVANT_KEY)
    if raw is None:
        return sample.expected_output, "expected_output"
    return raw, _METADATA_WHERE


def parse_gains(raw: object, where: str = "expected_output") -> Mapping[str, float]:
    """``{id: gain}`` from a list of ids, an id -> gain map, or a JSON string of either.

    The common shape, ``{id: integer level}``, comes back as given (see :func:`ordered_gains`).
    """
    result: Mapping[str, float]
    if type(raw) is dict and {*map(type, raw.values())} == _INT and {*map(type, raw)} == _STR:
        result = _integer_levels(raw, where)
    else:
        if isinstance(raw, str):
            raw = loads_json(
                raw,
                lambda _: MetricError(
                    f"{where} string is not JSON; give a list of relevant ids or an id -> gain map"
                ),
            )
        if isinstance(raw, list):
            result = _listed_ids(raw, where)
        elif isinstance(raw, Mapping):
            result = _gain_map(raw, where)
        else:
            raise MetricError(
                f"{where} must list relevant ids or map id -> gain; got {type_name(raw)}"
            )
    if not any(map(_POSITIVE, result.values())):
        raise MetricError(f"{where} must name at least one relevant id (gain > 0)")
    return result


def ordered_gains(raw: object, where: str) -> tuple[Mapping[str, float], list[float]]:
    """As :func:`parse_gains`, plus every gain from high to low (for the batch kernels).

    The common shape, ``{id: integer level}``, comes back as given rather than copied: a batch
    reads thousands, and the kernels convert levels to float64 as ``float()`` does. Levels too
    large for a float take :func:`parse_gains`, which says so.
    """
    if type(raw) is dict and {*map(type, raw.values())} == _INT and {*map(type, raw)} == _STR:
        ordered: list[Any] = sorted(raw.values(), reverse=True)
        if 0 < ordered[0] < FINITE_LEVEL and ordered[-1] > -FINITE_LEVEL:
            return raw, ordered
    gain = parse_gains(raw, where)
    return gain, sorted(gain.values(), reverse=True)


def _integer_levels(raw: dict[str, int], where: str) -> Mapping[str, float]:
    # the common shape ({id: integer level}, from YAML or JSON), read without the checks of
    # _gain_map. Levels a float holds are returned as given, not copied: every use of a gain
    # (comparisons, division, the kernels' float64) reads an int as float() would
    if max(raw.values()) < FINITE_LEVEL and min(raw.values()) > -FINITE_LEVEL:
        return raw
    try:
        return dict(zip(raw, map(float, raw.values())))
    except OverflowError:
        raise MetricError(f"{where} gains must be finite numbers") from None


def _listed_ids(raw: list[Any], where: str) -> dict[str, float]:
    result: dict[str, float] = {}
    for position, item in enumerate(raw):
        if isinstance(item, int) and not isinstance(item, bool):
            item = str(item) if abs(item) < 10**40 else ""
        if not isinstance(item, str) or not item:
            raise MetricError(f"{where}[{position}] must be a non-empty id string")
        result.setdefault(item, 1.0)
    return result


def _gain_map(raw: Mapping[Any, Any], where: str) -> dict[str, float]:
    result: dict[str, float] = {}
    for key, value in raw.items():
        if isinstance(value, str):
            try:
                value = float(value)
            except ValueError:
                value = None
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or abs(value) > 1e300  # compared, never converted: 2**1100 stays total
            or not math.isfinite(value)
        ):
            raise MetricError(f"{where} gain for {key!r} must be a finite number")
        result[str(key)] = float(value)
    return result


def resolve_k(sample: Sample, option: int | None) -> int:
    """``metadata.k`` (int or digit string), else the metric option, else 5."""
    if "k" in sample.metadata and sample.metadata["k"] is not None:
        return positive_int_option(sample.metadata["k"], "metadata.k")
    return option if option is not None else DEFAULT_K


def check_k(k: int | None) -> None:
    """A configuration error unless ``k`` is None or a positive integer."""
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
        raise MetricConfigError("retrieval metric k must be a positive integer")
