"""The metric contract, the score type, and the registry that resolves metric names.

A metric is any object with a stable kebab-case ``name`` and a ``score(sample, output)``
method returning a :class:`MetricScore`. ``score`` may be a coroutine function (provider-backed
metrics); the runner awaits it. A metric that cannot score a sample raises
:class:`~assay.errors.MetricError`, which becomes a recorded failure, never a 0.0.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from assay.errors import MetricConfigError, MetricError
from assay.results import DEFAULT_THRESHOLD, parse_threshold, passes

if TYPE_CHECKING:
    from assay.dataset import MetricSpec, Sample
    from assay.outputs import Output

PASS_THRESHOLD = DEFAULT_THRESHOLD  # the default; a metric's 'threshold:' option overrides it
_NAME = re.compile(r"^[a-z0-9]+(?:[-_.@][a-z0-9]+)*$")


@dataclass(frozen=True, slots=True)
class MetricScore:
    """A score in [0, 1] with JSON-safe details; ``usage`` holds one record per provider call."""

    value: float
    details: Mapping[str, Any] = field(default_factory=dict)
    usage: Sequence[Mapping[str, Any]] | None = None

    def __post_init__(self) -> None:
        value = self.value
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise MetricError(f"metric score must be a number; got {type(value).__name__}")
        if math.isnan(value) or value < 0.0 or value > 1.0:
            raise MetricError(f"metric score must be in [0.0, 1.0]; got {value!r}")
        object.__setattr__(self, "value", float(value))

    @property
    def passed(self) -> bool:
        return passes(self.value)


@runtime_checkable
class Metric(Protocol):
    """What every metric provides. ``score`` may also be ``async def``."""

    name: str

    def score(self, sample: Sample, output: Output) -> MetricScore: ...


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


# --------------------------------------------------------------------------- registry

MetricFactory = Callable[..., Metric]
_BUILTINS: dict[str, MetricFactory] = {}
_DESCRIPTIONS: dict[str, str] = {}


def register(name: str, description: str) -> Callable[[MetricFactory], MetricFactory]:
    """Class decorator: make a built-in metric resolvable by its alias."""

    def wrap(factory: MetricFactory) -> MetricFactory:
        _BUILTINS[name] = factory
        _DESCRIPTIONS[name] = description
        return factory

    return wrap


def _load_builtins(wanted: str | None = None) -> None:
    """Import the metric families (their @register decorators fill the registry).

    With ``wanted`` already registered by the offline families, the model-backed ones
    (semantic: numpy; judge, rubric) are not imported: a lexical run or ``validate`` stays light.
    """
    from assay.metrics import (  # noqa: F401
        citation,
        lexical,
        ordinal,
        rag,
        retrieval,
        safety,
        trajectory,
    )

    if wanted is not None and wanted in _BUILTINS:
        return
    for optional in ("assay.metrics.semantic", "assay.metrics.judge", "assay.metrics.rubric"):
        try:
            importlib.import_module(optional)
        except ModuleNotFoundError as exc:
            if exc.name != optional:
                raise


def _entry_point_metrics() -> dict[str, Any]:
    return {ep.name: ep for ep in entry_points(group="assay.metrics")}


def catalogue() -> list[tuple[str, str]]:
    """``(alias, one-line description)`` for every built-in and installed metric."""
    _load_builtins()
    rows = [(name, _DESCRIPTIONS[name]) for name in sorted(_BUILTINS)]
    rows += [
        (name, f"third-party ({ep.value})") for name, ep in sorted(_entry_point_metrics().items())
    ]
    return rows


def _import_path(path: str) -> Any:
    module_name, _, attr = path.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise MetricConfigError(
            f"metric '{path}': cannot import module '{module_name}' ({exc})"
        ) from None
    target: Any = module
    for part in attr.split("."):
        if not hasattr(target, part):
            raise MetricConfigError(
                f"metric '{path}': module '{module_name}' has no attribute '{attr}'"
            )
        target = getattr(target, part)
    return target


def _build(factory: Any, options: Mapping[str, Any], label: str) -> Metric:
    try:
        metric = factory(**options) if callable(factory) and not _is_metric(factory) else factory
    except MetricConfigError:
        raise
    except (TypeError, ValueError, MetricError) as exc:
        raise MetricConfigError(f"metric '{label}': invalid options ({exc})") from None
    except Exception as exc:  # a third-party factory's own bug must not end in a traceback
        raise MetricConfigError(
            f"metric '{label}': building it failed ({type(exc).__name__}: {exc})"
        ) from None
    if not _is_metric(metric):
        raise MetricConfigError(
            f"metric '{label}' resolves to {type(metric).__name__}, which has no 'name' and 'score(sample, output)'"
        )
    return metric


def _is_metric(obj: Any) -> bool:
    return (
        not isinstance(obj, type)
        and isinstance(getattr(obj, "name", None), str)
        and callable(getattr(obj, "score", None))
    )


def resolve(spec: str | MetricSpec | Metric | Mapping[str, Any]) -> Metric:
    """One metric from an alias, ``module:Class`` path, entry point, spec or instance."""
    from assay.dataset import MetricSpec

    if _is_metric(spec):
        return spec  # type: ignore[return-value]
    if isinstance(spec, Mapping):
        if not isinstance(spec.get("name"), str) or not spec.get("name"):
            raise MetricConfigError(
                f"a metric given as a mapping needs a non-empty 'name'; got keys {sorted(map(str, spec))}"
            )
        spec = MetricSpec.model_validate(dict(spec))
    if isinstance(spec, str):
        name, options = spec, {}
    elif isinstance(spec, MetricSpec):
        name, options = spec.name, spec.options
    else:
        raise MetricConfigError(
            f"a metric must be an alias, a 'module:Class' path or a Metric; got {type(spec).__name__}"
        )
    options = dict(options)
    options.pop("tags", None)  # scoping is the runner's business; see resolve_scoped
    options.pop("threshold", None)  # the pass rule's business; see thresholds_of
    label = options.pop("as", None)
    if label is not None and (not isinstance(label, str) or not _NAME.match(label)):
        raise MetricConfigError(f"metric '{name}': 'as' must be a kebab-case name; got {label!r}")
    metric = _resolve_named(name, options)
    if label is not None:
        metric = _renamed(metric, label)
    return metric


def _resolve_named(name: str, options: Mapping[str, Any]) -> Metric:
    _load_builtins(name)
    if name in _BUILTINS:
        return _build(_BUILTINS[name], options, name)
    plugins = _entry_point_metrics()
    if name in plugins:
        try:
            target = plugins[name].load()
        except Exception as exc:  # a broken plugin must not crash the CLI
            raise MetricConfigError(
                f"metric '{name}': entry point failed to load ({type(exc).__name__}: {exc})"
            ) from None
        return _build(target, options, name)
    if ":" in name:
        return _build(_import_path(name), options, name)
    known = ", ".join(sorted(_BUILTINS) + sorted(plugins))
    raise MetricConfigError(f"unknown metric '{name}'. Known metrics: {known}")


def _renamed(metric: Metric, label: str) -> Metric:
    """The same metric reported under another name (two variants of one metric in a run)."""
    if dataclasses.is_dataclass(metric):
        return dataclasses.replace(metric, name=label)  # type: ignore[type-var]
    try:
        metric.name = label
    except AttributeError:
        raise MetricConfigError(f"metric '{metric.name}' cannot be renamed with 'as'") from None
    return metric


Scopes = dict[str, frozenset[str]]


def _scope(spec: Any) -> frozenset[str] | None:
    """The ``tags`` a metric spec is limited to (None: every sample)."""
    from assay.dataset import MetricSpec, normalise_tags

    options = (
        spec.options if isinstance(spec, MetricSpec) else spec if isinstance(spec, Mapping) else {}
    )
    if "tags" not in options:
        return None
    tags = normalise_tags(options["tags"])
    if not tags:
        raise MetricConfigError("a metric's 'tags' must be a tag or a non-empty list of tags")
    return frozenset(tags)


def resolve_scoped(
    specs: Iterable[str | MetricSpec | Metric | Mapping[str, Any]],
) -> tuple[list[Metric], Scopes]:
    """Resolve metrics plus their tag scopes: a scoped metric scores only samples with one of its tags."""
    specs = list(specs)
    metrics = resolve_all(specs)
    scopes: Scopes = {}
    for spec, metric in zip(specs, metrics):
        scope = _scope(spec)
        if scope is not None:
            scopes[metric.name] = scope
    return metrics, scopes


def thresholds_of(
    specs: Iterable[str | MetricSpec | Metric | Mapping[str, Any]], metrics: Sequence[Metric]
) -> dict[str, float]:
    """Each metric's ``threshold:`` option by metric name (metrics without one are left out).

    A metric object may also carry a ``threshold`` attribute (a custom metric deciding its own
    pass rule); the spec's option wins.
    """
    from assay.dataset import MetricSpec

    found: dict[str, float] = {}
    for spec, metric in zip(specs, metrics):
        options = (
            spec.options
            if isinstance(spec, MetricSpec)
            else spec
            if isinstance(spec, Mapping)
            else {}
        )
        raw = options.get("threshold", getattr(metric, "threshold", None))
        if raw is not None:
            found[metric.name] = parse_threshold(raw, metric.name)
    return found


def provider_use(metrics: Iterable[Metric], settings: Any) -> dict[str, str | None]:
    """What the report header names, read from the metrics themselves: the judge model(s) and
    the embedding provider(s) that the run's metrics call (a metric's own ``model`` option
    included). A metric that calls no provider has no ``used`` method and adds nothing."""
    judges: list[str] = []
    embedders: list[str] = []
    for metric in metrics:
        used = getattr(metric, "used", None)
        if used is None:
            continue
        use = used(settings)
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


def embedding_label(settings: Any) -> str:
    """How the report header names an embedding provider (hashing says it is not semantic)."""
    provider = str(settings.embedding_provider)
    return "hashing (test only, not semantic)" if provider == "hashing" else provider


def applies(scopes: Mapping[str, frozenset[str]], metric: str, tags: Iterable[str]) -> bool:
    scope = scopes.get(metric)
    return scope is None or not scope.isdisjoint(tags)


def resolve_all(specs: Iterable[str | MetricSpec | Metric | Mapping[str, Any]]) -> list[Metric]:
    """Resolve several metrics; names must be unique within a run."""
    metrics = [resolve(spec) for spec in specs]
    seen: set[str] = set()
    for metric in metrics:
        if not _NAME.match(metric.name):
            raise MetricConfigError(
                f"metric name '{metric.name}' must be kebab-case (a-z, 0-9, '-')"
            )
        if metric.name in seen:
            raise MetricConfigError(
                f"metric name '{metric.name}' is used twice in this run; give one of them a different 'name'"
            )
        seen.add(metric.name)
    return metrics


# --------------------------------------------------------------------------- helpers for metrics


def type_name(value: Any) -> str:
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


def positive_int_option(value: Any, label: str) -> int:
    """An integer >= 1 from an int or a string of digits (YAML often quotes numbers)."""
    if isinstance(value, bool):
        raise MetricError(f"{label} must be a positive integer; got boolean")
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if not isinstance(value, int) or value < 1:
        raise MetricError(f"{label} must be a positive integer; got {value!r}")
    return value


def clamp01(value: float) -> float:
    return 0.0 if value < 0.0 else 1.0 if value > 1.0 else value


def unique(items: Sequence[Any]) -> list[Any]:
    return list(dict.fromkeys(items))
