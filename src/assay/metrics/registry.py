"""Resolving metric names: built-in aliases, ``module:Class`` paths, entry points, instances.

Built-ins come from :data:`assay.metrics.catalogue.BUILTINS`, which names each family module
without importing it; a family is imported only when one of its aliases is resolved. Third-party
metrics are installed ``assay.metrics`` entry points. Nothing here is imported by the family
modules, so the package has no import cycle.
"""

from __future__ import annotations

import dataclasses
import difflib
import importlib
import inspect
import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, TypeGuard

from assay.data.dataset import MetricSpec, normalise_tags
from assay.data.results import parse_threshold
from assay.errors import MetricConfigError, MetricError
from assay.metrics.base import Metric
from assay.metrics.catalogue import BUILTINS
from assay.providers.settings import ProviderSettings

_NAME = re.compile(r"^[a-z0-9]+(?:[-_.@][a-z0-9]+)*$")


def _entry_point_metrics() -> dict[str, Any]:
    return {ep.name: ep for ep in entry_points(group="assay.metrics")}


def catalogue() -> list[tuple[str, str]]:
    """``(alias, one-line description)`` for every built-in and installed metric."""
    rows = [(name, BUILTINS[name].description) for name in sorted(BUILTINS)]
    rows += [
        (name, f"third-party ({ep.value})") for name, ep in sorted(_entry_point_metrics().items())
    ]
    return rows


def working_directory_importable() -> None:
    """Put the working directory on ``sys.path`` (once), as ``python -m`` does, so that
    ``-m mymetrics:Jaccard`` and ``--sut app:answer`` find a module beside the dataset whether
    assay runs as ``python -m assay`` or as the installed ``assay`` script."""
    cwd = str(Path.cwd())
    if cwd not in sys.path:
        sys.path.insert(0, cwd)


def _import_path(path: str) -> Any:
    module_name, _, attr = path.partition(":")
    working_directory_importable()
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise MetricConfigError(
            f"metric '{path}': cannot import module '{module_name}' ({exc})"
        ) from None
    except Exception as exc:  # an empty or relative name, or a module that fails as it loads
        raise MetricConfigError(
            f"metric '{path}': cannot import module '{module_name}' ({type(exc).__name__}: {exc})"
        ) from None
    target: Any = module
    for part in attr.split("."):
        if not hasattr(target, part):
            raise MetricConfigError(
                f"metric '{path}': module '{module_name}' has no attribute '{attr}'"
            )
        target = getattr(target, part)
    return target


def _metric_path(path: str) -> Any:
    """What a ``module:Class`` path names, when it is a metric or a class of them.

    A dataset is data: the path it names is called only when it is a class that defines
    ``score``, so a path to any other callable (``os:system``, ``subprocess:Popen``) is refused
    before it runs, whatever options the dataset gives it.
    """
    target = _import_path(path)
    if _is_metric(target) or (
        isinstance(target, type) and callable(getattr(target, "score", None))
    ):
        return target
    kind = f"the class {target.__name__}" if isinstance(target, type) else type(target).__name__
    raise MetricConfigError(
        f"metric '{path}' resolves to {kind}, which has no 'name' and 'score(sample, output)': "
        "a path must name a metric class (one that defines score) or a metric object"
    )


def _unknown_options(
    factory: Callable[..., object], options: Mapping[str, Any], label: str
) -> None:
    """Name an option the factory does not take, with the ones it does (not a TypeError)."""
    try:
        parameters = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):
        return
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return
    taken = [
        p.name
        for p in parameters
        if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
        and p.name != SETTINGS
    ]
    unknown = sorted(set(options) - set(taken))
    if unknown:
        known = ", ".join(taken) or "none"
        raise MetricConfigError(
            f"metric '{label}': unknown option {', '.join(map(repr, unknown))} (options: {known})"
        )


SETTINGS = "settings"
"""The keyword by which a metric that calls a provider takes the run's provider settings; never
an option a dataset may give (they come from flags, ``providers:`` and the environment)."""


def _takes_settings(factory: Callable[..., object]) -> bool:
    """Whether ``factory`` has a ``settings`` parameter (a metric that calls a provider)."""
    try:
        return SETTINGS in inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return False


def _build(
    factory: object, options: Mapping[str, Any], label: str, settings: ProviderSettings | None
) -> Metric:
    if callable(factory) and not _is_metric(factory):
        if SETTINGS in options:
            raise MetricConfigError(
                f"metric '{label}': 'settings' is not an option; provider settings come from "
                "the dataset's providers: block, the flags and the environment"
            )
        _unknown_options(factory, options, label)
        if settings is not None and _takes_settings(factory):
            options = {**options, SETTINGS: settings}
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
    if _is_metric(metric):
        return metric
    raise MetricConfigError(
        f"metric '{label}' resolves to {type(metric).__name__}, "
        "which has no 'name' and 'score(sample, output)'"
    )


def _is_metric(obj: object) -> TypeGuard[Metric]:
    return (
        not isinstance(obj, type)
        and isinstance(getattr(obj, "name", None), str)
        and callable(getattr(obj, "score", None))
    )


def resolve(
    spec: str | MetricSpec | Metric | Mapping[str, Any], settings: ProviderSettings | None = None
) -> Metric:
    """One metric from an alias, ``module:Class`` path, entry point, spec or instance; a metric
    that calls a provider is built with ``settings`` (None: the environment's)."""
    if _is_metric(spec):
        return spec
    if isinstance(spec, Mapping):
        if not isinstance(spec.get("name"), str) or not spec.get("name"):
            raise MetricConfigError(
                "a metric given as a mapping needs a non-empty 'name'; got keys "
                f"{sorted(map(str, spec))}"
            )
        spec = MetricSpec.model_validate(dict(spec))
    if isinstance(spec, str):
        name, options = spec, {}
    elif isinstance(spec, MetricSpec):
        name, options = spec.name, spec.options
    else:
        raise MetricConfigError(
            "a metric must be an alias, a 'module:Class' path or a Metric; got "
            f"{type(spec).__name__}"
        )
    options = dict(options)
    options.pop("tags", None)  # scoping is the runner's business; see resolve_scoped
    options.pop("threshold", None)  # the pass rule's business; see thresholds_of
    options.pop("calibration", None)  # the run's judge calibration; see calibrations_of
    label = options.pop("as", None)
    if label is not None and (not isinstance(label, str) or not _NAME.match(label)):
        raise MetricConfigError(f"metric '{name}': 'as' must be a kebab-case name; got {label!r}")
    metric = _resolve_named(name, options, settings)
    if label is not None:
        metric = _renamed(metric, label)
    return metric


def _resolve_named(
    name: str, options: Mapping[str, Any], settings: ProviderSettings | None
) -> Metric:
    if name in BUILTINS:
        return _build(_import_path(BUILTINS[name].path), options, name, settings)
    plugins = _entry_point_metrics()
    if name in plugins:
        try:
            target = plugins[name].load()
        except Exception as exc:  # a broken plugin must not crash the CLI
            raise MetricConfigError(
                f"metric '{name}': entry point failed to load ({type(exc).__name__}: {exc})"
            ) from None
        return _build(target, options, name, settings)
    if ":" in name:
        return _build(_metric_path(name), options, name, settings)
    names = sorted(BUILTINS) + sorted(plugins)
    close = difflib.get_close_matches(name, names, n=1)
    hint = f" Did you mean '{close[0]}'?" if close else ""
    raise MetricConfigError(f"unknown metric '{name}'.{hint} Known metrics: {', '.join(names)}")


def _renamed(metric: Metric, label: str) -> Metric:
    """The same metric reported under another name (two variants of one metric in a run)."""
    if dataclasses.is_dataclass(metric):
        return dataclasses.replace(metric, name=label)
    try:
        metric.name = label
    except AttributeError:
        raise MetricConfigError(f"metric '{metric.name}' cannot be renamed with 'as'") from None
    return metric


Scopes = dict[str, frozenset[str]]


def _scope(spec: object) -> frozenset[str] | None:
    """The ``tags`` a metric spec is limited to (None: every sample)."""
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
    settings: ProviderSettings | None = None,
) -> tuple[list[Metric], Scopes]:
    """Resolve metrics (with ``settings``, as :func:`resolve`) plus their tag scopes.

    A scoped metric scores only the samples that carry one of its tags.
    """
    specs = list(specs)
    metrics = resolve_all(specs, settings)
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


def calibrations_of(
    specs: Iterable[str | MetricSpec | Metric | Mapping[str, Any]], metrics: Sequence[Metric]
) -> dict[str, str]:
    """Each metric's ``calibration:`` option (a labelled set's path) by metric name."""
    found: dict[str, str] = {}
    for spec, metric in zip(specs, metrics):
        options = (
            spec.options
            if isinstance(spec, MetricSpec)
            else spec
            if isinstance(spec, Mapping)
            else {}
        )
        raw = options.get("calibration")
        if raw is None:
            continue
        if not isinstance(raw, str) or not raw.strip():
            raise MetricConfigError(
                f"metric '{metric.name}': option 'calibration' must be a file path; got {raw!r}"
            )
        found[metric.name] = raw
    return found


def applies(scopes: Mapping[str, frozenset[str]], metric: str, tags: Iterable[str]) -> bool:
    scope = scopes.get(metric)
    return scope is None or not scope.isdisjoint(tags)


def resolve_all(
    specs: Iterable[str | MetricSpec | Metric | Mapping[str, Any]],
    settings: ProviderSettings | None = None,
) -> list[Metric]:
    """Resolve several metrics (with ``settings``, as :func:`resolve`); names must be unique
    within a run."""
    metrics = [resolve(spec, settings) for spec in specs]
    seen: set[str] = set()
    for metric in metrics:
        if not _NAME.match(metric.name):
            raise MetricConfigError(
                f"metric name '{metric.name}' must be kebab-case (a-z, 0-9, '-')"
            )
        if metric.name in seen:
            raise MetricConfigError(
                f"metric name '{metric.name}' is used twice in this run; give one of them a "
                "different 'name'"
            )
        seen.add(metric.name)
    return metrics
