"""Planning one ``assay run``: its flags checked, its dataset loaded and its samples chosen,
its metrics, provider settings and system under test resolved, before any work starts.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assay.cli.console import fail
from assay.cli.run_report import parse_also
from assay.cli.sample_selection import select_samples

if TYPE_CHECKING:
    from assay.engine.config import RunConfig


@dataclass
class Plan:
    """What a run needs once its flags are checked and its dataset is loaded."""

    config: Any
    lane: Any
    loaded: Any
    systems: list[Any]
    chosen: Any
    metrics: list[Any]
    scopes: Any
    thresholds: dict[str, float]
    providers: Any
    info: dict[str, str | None]
    selected: Any = None
    system: Any = None
    rules: Any = None  # the gate's, read before any work (run_execution._preflight)
    extra_reports: list[tuple[str, Path]] = field(default_factory=list)
    calibrations: dict[str, Path] = field(default_factory=dict)  # judge metric -> labelled set


def checked_config(flags: dict[str, Any]) -> RunConfig:
    """The run configuration from ``assay run``'s parameters; the first bad flag exits 2."""
    from assay.engine.config import RunConfig

    config = RunConfig.from_flags(flags)
    for problem in _flag_problems(config):
        fail(problem)
    return config


def _flag_problems(config: Any) -> list[str]:
    """Flag errors found before any file is read (each one exits 2)."""
    from assay.cli.systems import parse_systems

    problems: list[str] = config.problems()
    given = parse_systems(config.outputs, config.sut)
    if len(given) > 1 and config.sut_url is not None:
        problems.append(
            "--sut-url works with one system; it cannot be combined with several systems"
        )
    if len(given) + (config.sut_url is not None) != 1 and len(given) <= 1:
        problems.append(
            "give exactly one of --outputs FILE, --sut module:function or --sut-url URL"
        )
    return problems


def build_plan(config: Any, lane: Any) -> Plan:
    """Load the dataset, resolve its metrics and provider settings, build the system."""
    from assay.api import metric_plan
    from assay.cli.systems import parse_systems
    from assay.data.dataset_errors import declared_metrics
    from assay.data.loading import load_dataset
    from assay.metrics.base import provider_use
    from assay.providers.settings import build as build_providers

    extra_reports = parse_also(config.also)
    loaded = lane.dataset if lane is not None else load_dataset(config.dataset)
    if lane is None and not config.metric and not loaded.metrics:
        fail(
            f"{config.dataset}: no metrics: declare 'metrics:' in the dataset or pass --metric NAME"
        )
    providers = build_providers(cli=config.provider_flags(), dataset=loaded.providers)
    named = lane.metric_specs if lane is not None else config.metric or None
    with declared_metrics(config.dataset) if named is None else contextlib.nullcontext():
        chosen = metric_plan(loaded, named)  # the dataset's own metrics when none are named
    metrics, scopes = chosen.metrics, chosen.scopes
    plan = Plan(
        config=config,
        lane=lane,
        loaded=loaded,
        systems=parse_systems(config.outputs, config.sut),
        chosen=chosen,
        metrics=metrics,
        scopes=scopes,
        thresholds=chosen.thresholds,
        providers=providers,
        info=provider_use(metrics, providers),
        extra_reports=extra_reports,
    )
    plan.system = _system(plan)
    plan.selected = select_samples(
        loaded,
        limit=config.limit,
        sample_n=config.sample_n,
        seed=config.seed,
        tags=config.tag,
        ids=config.sample_id,
    )
    return plan


def _system(plan: Plan) -> Any:
    """The one system under test (None when several systems run; each is built later)."""
    from assay.data.loading import load_outputs
    from assay.data.outputs import check_outputs_cover
    from assay.engine.sut import PythonTarget, SavedOutputs

    config = plan.config
    if len(plan.systems) > 1:
        return None
    only = plan.systems[0] if plan.systems else None
    if only is not None and only.kind == "outputs":
        from assay.data.outputs_stream import same_ids

        saved = load_outputs(Path(only.value))
        if not same_ids(saved, plan.loaded.samples):
            ids = [s.id for s in plan.loaded.samples]
            check_outputs_cover(saved, ids, path=str(only.value))
        return SavedOutputs(saved, str(only.value))
    limiter = system_limiter(config.concurrency, config.rpm)
    if only is not None:
        system = PythonTarget(only.value)
        system.limiter = limiter
        system.timeout_s = config.sut_timeout
        return system
    from assay.engine.http_sut import HttpTarget

    return HttpTarget.from_environment(
        str(config.sut_url),
        output_path=config.sut_output_path,
        retrieved_path=config.sut_retrieved_path,
        trajectory_path=config.sut_trajectory_path,
        timeout_s=config.sut_timeout,
        limiter=limiter,
    )


def system_limiter(concurrency: int, rpm: float | None) -> Any:
    from assay.providers.limiter import Limiter

    return Limiter(concurrency, rpm=rpm)
