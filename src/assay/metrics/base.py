"""The metric contract, the score type, and small helpers the metric families share.

A metric is any object with a stable kebab-case ``name`` and a ``score(sample, output)``
method returning a :class:`MetricScore`. ``score`` may be a coroutine function (provider-backed
metrics); the runner awaits it. A metric that cannot score a sample raises
:class:`~assay.errors.MetricError`, which becomes a recorded failure, never a 0.0. Names are
resolved to metrics by :mod:`assay.metrics.registry`, which this module does not import.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeGuard, runtime_checkable

from assay.data.results import DEFAULT_THRESHOLD, passes
from assay.errors import MetricConfigError, MetricError
from assay.providers import settings as provider_settings
from assay.providers.settings import ProviderSettings

if TYPE_CHECKING:
    from assay.data.dataset import Sample
    from assay.data.outputs import Output
    from assay.metrics.batch import ScoreColumn

PASS_THRESHOLD = DEFAULT_THRESHOLD  # the default; a metric's 'threshold:' option overrides it


@dataclass(frozen=True, slots=True)
class MetricScore:
    """A score in [0, 1] with JSON-safe details; ``usage`` holds one record per provider call."""

    value: float
    details: Mapping[str, Any] = field(default_factory=dict)
    usage: Sequence[Mapping[str, Any]] | None = None

    def __post_init__(self) -> None:
        value = self.value
        if type(value) is float and 0.0 <= value <= 1.0:
            return  # the common case, already as stored (NaN fails the comparison)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise MetricError(f"metric score must be a number; got {type(value).__name__}")
        if math.isnan(value) or value < 0.0 or value > 1.0:
            raise MetricError(f"metric score must be in [0.0, 1.0]; got {value!r}")
        object.__setattr__(self, "value", float(value))

    @property
    def passed(self) -> bool:
        return passes(self.value)


# MetricScore's slots, set directly by unit_score.
_SET_VALUE, _SET_DETAILS, _SET_USAGE = (vars(MetricScore)[f].__set__ for f in MetricScore.__slots__)


def unit_score(value: float, details: dict[str, Any]) -> MetricScore:
    """``MetricScore(value, details)`` for a float ``value`` the caller knows is in [0, 1].

    It skips the checks and the dataclass ``__init__`` (half the cost of a rouge-l ``score()``
    call's result); anything else must go through ``MetricScore(...)``, which checks it.
    """
    score: MetricScore = object.__new__(MetricScore)
    _SET_VALUE(score, value)
    _SET_DETAILS(score, details)
    _SET_USAGE(score, None)
    return score


@runtime_checkable
class Metric(Protocol):
    """What every metric provides. ``score`` may also be ``async def``."""

    name: str

    def score(self, sample: Sample, output: Output) -> MetricScore: ...


def environment_settings() -> ProviderSettings:
    """The provider settings of a provider-backed metric built without any: the environment's
    and the defaults (the Python API, a test). ``assay run`` hands every such metric the run's
    settings through the registry (:func:`assay.metrics.registry.resolve`)."""
    return provider_settings.from_environment()


# --------------------------------------------------------------------------- optional capabilities
# A metric may offer any of these besides ``name`` and ``score``. The engine asks through the
# type guards below (``batches(metric)`` and so on), which narrow the metric to the protocol for
# mypy; they test for the attribute, because ``isinstance`` on a runtime-checkable protocol costs
# ~100x more and some of these are asked per execution.


class BatchScorer(Metric, Protocol):
    """Scores many rows in one call (offline metrics over saved outputs; see metrics.batch)."""

    def score_batch(self, samples: Sequence[Sample], outputs: Sequence[Output]) -> ScoreColumn: ...


class Preparer(Metric, Protocol):
    """Learns from the whole dataset once per run before scoring (e.g. IDF weights)."""

    async def prepare(self, samples: Sequence[Sample]) -> None: ...


class Prefetcher(Metric, Protocol):
    """Batches its provider calls for a window of answers before scoring them."""

    async def prefetch(self, pairs: Sequence[tuple[Sample, Output]]) -> None: ...


class ConfigChecker(Metric, Protocol):
    """Checks its configuration against the samples before any work (raises on a problem)."""

    def check_config(self, samples: Sequence[Sample]) -> None: ...


class ResourceAsker(Metric, Protocol):
    """Asks the Ray executor for resources per batch (e.g. ``{"GPU": 1}``)."""

    resources: Mapping[str, float]


class ProviderUser(Metric, Protocol):
    """Calls a judge or an embedder: says which, for the report header."""

    def used(self, settings: ProviderSettings) -> dict[str, str]: ...


def _offers(metric: Metric, attribute: str) -> bool:
    return getattr(metric, attribute, None) is not None


def batches(metric: Metric) -> TypeGuard[BatchScorer]:
    return _offers(metric, "score_batch")


def prepares(metric: Metric) -> TypeGuard[Preparer]:
    return _offers(metric, "prepare")


def prefetches(metric: Metric) -> TypeGuard[Prefetcher]:
    return _offers(metric, "prefetch")


def checks_config(metric: Metric) -> TypeGuard[ConfigChecker]:
    return _offers(metric, "check_config")


def asks_resources(metric: Metric) -> TypeGuard[ResourceAsker]:
    return isinstance(getattr(metric, "resources", None), Mapping)


def uses_providers(metric: Metric) -> TypeGuard[ProviderUser]:
    return _offers(metric, "used")


_PLAIN = (str, int, bool, type(None))


def check_details(details: Mapping[str, Any], metric: str) -> None:
    """Reject details that would not serialise to strict JSON (NaN, objects, ...).

    Flat details of plain values (the common case) are checked without serialising them.
    """
    for key, value in details.items():
        if isinstance(key, str) and (
            isinstance(value, _PLAIN) or (isinstance(value, float) and math.isfinite(value))
        ):
            continue
        try:
            json.dumps({key: value}, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise MetricError(
                f"metric '{metric}' returned details that are not JSON-safe: {exc}"
            ) from None


def provider_use(metrics: Iterable[Metric], settings: ProviderSettings) -> dict[str, str | None]:
    """What the report header names, read from the metrics themselves: the judge model(s) and
    the embedding provider(s) that the run's metrics call (a metric's own ``model`` option
    included). A metric that calls no provider has no ``used`` method and adds nothing."""
    judges: list[str] = []
    embedders: list[str] = []
    for metric in metrics:
        if not uses_providers(metric):
            continue
        use = metric.used(settings)
        if use.get("method") == "llm-judge":
            judges.extend(use["model"].split(", "))
        elif use.get("method") == "embedding":
            embedders.append(use["provider"])
    info: dict[str, str | None] = {}
    if embedders:
        info["embedding_provider"] = ", ".join(dict.fromkeys(embedders))
    if judges:
        info["judge_model"] = ", ".join(dict.fromkeys(judges))
    return info


def embedding_label(settings: ProviderSettings) -> str:
    """How the report header names an embedding provider (hashing says it is not semantic)."""
    provider = str(settings.embedding_provider)
    return "hashing (test only, not semantic)" if provider == "hashing" else provider


# --------------------------------------------------------------------------- helpers for metrics


def type_name(value: object) -> str:
    """A user-facing name for a JSON value's type."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, Sequence):
        return "list"
    if isinstance(value, Mapping):
        return "mapping"
    return type(value).__name__


def expected_string(sample: Sample, metric: str, *, non_empty: bool = False) -> str:
    """The sample's ``expected_output`` as a string, or a MetricError that says why not."""
    value = sample.expected_output
    if not isinstance(value, str):
        raise MetricError(f"expected_output must be a string for {metric}; got {type_name(value)}")
    if non_empty and not value.strip():
        raise MetricError(f"expected_output must not be empty for {metric}")
    return value


def positive_int_option(value: object, label: str) -> int:
    """An integer >= 1 from an int or a string of digits (YAML often quotes numbers)."""
    if isinstance(value, bool):
        raise MetricError(f"{label} must be a positive integer; got boolean")
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if not isinstance(value, int) or value < 1:
        raise MetricError(f"{label} must be a positive integer; got {value!r}")
    return value


def check_bool_option(value: object, metric: str, option: str) -> None:
    """A true/false option must be a boolean: the string "false" (quoted YAML, JSON) is truthy
    and would silently turn the option on."""
    if not isinstance(value, bool):
        raise MetricConfigError(f"{metric} option '{option}' must be true or false; got {value!r}")


def clamp01(value: float) -> float:
    return 0.0 if value < 0.0 else 1.0 if value > 1.0 else value


def unique(items: Sequence[Any]) -> list[Any]:
    return list(dict.fromkeys(items))
