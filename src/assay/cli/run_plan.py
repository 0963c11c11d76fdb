"""Planning one ``assay run``: its flags checked, its dataset loaded and its samples chosen,
its metrics, provider settings and system under test resolved, before any work starts.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path

from assay.adversarial.lane import LaneHooks
from assay.api import MetricPlan, metric_plan
from assay.cli.console import fail
from assay.cli.run_report import parse_also
from assay.cli.sample_selection import select_samples
from assay.cli.systems import SystemSpec, parse_systems
from assay.data.dataset import Dataset
from assay.data.dataset_errors import declared_metrics
from assay.data.loading import load_dataset, load_outputs
from assay.data.outputs import check_outputs_cover
from assay.data.outputs_stream import same_ids
from assay.engine.config import RunConfig
from assay.engine.sut import PythonTarget, SavedOutputs, SystemUnderTest
from assay.metrics.base import Metric, provider_use
from assay.providers.limiter import Limiter
from assay.providers.settings import ProviderSettings
from assay.providers.settings import build as build_providers


@dataclass
class Plan:
    """What a run needs once its flags are checked and its dataset is loaded: ``selected`` is
    the dataset narrowed to the chosen samples; ``system`` the one system under test (None
    when several run: each is built later)."""

    config: RunConfig
    lane: LaneHooks | None
    selected: Dataset
    system: SystemUnderTest | None
    systems: list[SystemSpec]
    chosen: MetricPlan
    metrics: list[Metric]
    scopes: dict[str, frozenset[str]]
    thresholds: dict[str, float]
    providers: ProviderSettings
    info: dict[str, str | None]
    extra_reports: list[tuple[str, Path]] = field(default_factory=list)
    calibrations: dict[str, Path] = field(default_factory=dict)  # judge metric -> labelled set

    def let_go(self) -> None:
        """Drop the samples and the system (saved outputs included) once the run has its
        report: what follows needs only the report, and a large dataset goes first."""
        self.selected = self.selected.model_copy(update={"samples": []})
        self.system = None


def checked_config(config: RunConfig) -> RunConfig:
    """``config`` once its flags are checked; the first bad flag exits 2."""
    for problem in _flag_problems(config):
        fail(problem)
    return config


def _flag_problems(config: RunConfig) -> list[str]:
    """Flag errors found before any file is read (each one exits 2)."""
    problems: list[str] = config.problems()
    given = parse_systems(config.outputs, config.sut)
    if len(given) > 1 and config.sut_url is not None:
        problems.append(
            "--sut-url works with one system; it cannot be combined with several systems"
        )
    names = [spec.name for spec in given]
    if config.reference is not None and config.reference not in names:
        known = ", ".join(str(n) for n in names) if len(given) > 1 else "it needs several systems"
        problems.append(f"--reference {config.reference!r} names no system given ({known})")
    if len(given) + (config.sut_url is not None) != 1 and len(given) <= 1:
        problems.append(
            "give exactly one of --outputs FILE, --sut module:function or --sut-url URL"
        )
    return problems


def build_plan(config: RunConfig, lane: LaneHooks | None) -> Plan:
    """Load the dataset, resolve its metrics and provider settings, build the system."""
    extra_reports = parse_also(config.also)
    loaded = lane.dataset if lane is not None else load_dataset(config.dataset)
    if lane is None and not config.metric and not loaded.metrics:
        fail(
            f"{config.dataset}: no metrics: declare 'metrics:' in the dataset or pass --metric NAME"
        )
    providers = build_providers(cli=config.provider_flags(), dataset=loaded.providers)
    named = lane.metric_specs if lane is not None else config.metric or None
    with declared_metrics(config.dataset) if named is None else contextlib.nullcontext():
        # The dataset's own metrics when none are named; each that calls a provider gets these.
        chosen = metric_plan(loaded, named, providers)
    systems = parse_systems(config.outputs, config.sut)
    system = _system(config, systems, loaded)  # before the selection, whose errors come second
    return Plan(
        config=config,
        lane=lane,
        selected=select_samples(
            loaded,
            limit=config.limit,
            sample_n=config.sample_n,
            seed=config.seed,
            tags=config.tag,
            ids=config.sample_id,
        ),
        system=system,
        systems=systems,
        chosen=chosen,
        metrics=chosen.metrics,
        scopes=chosen.scopes,
        thresholds=chosen.thresholds,
        providers=providers,
        info=provider_use(chosen.metrics, providers),
        extra_reports=extra_reports,
    )


def _system(
    config: RunConfig, systems: list[SystemSpec], loaded: Dataset
) -> SystemUnderTest | None:
    """The one system under test (None when several systems run; each is built later)."""
    if len(systems) > 1:
        return None
    only = systems[0] if systems else None
    if only is not None and only.kind == "outputs":
        saved = load_outputs(Path(only.value))
        if not same_ids(saved, loaded.samples):
            ids = [s.id for s in loaded.samples]
            check_outputs_cover(saved, ids, path=str(only.value))
        return SavedOutputs(saved, str(only.value))
    limiter = system_limiter(config.concurrency, config.rpm)
    if only is not None:
        system = PythonTarget(only.value)
        system.limiter = limiter
        system.timeout_s = config.sut_timeout
        return system
    # asyncio (~55 ms) for the HTTP system only: saved outputs are scored without an event loop
    from assay.engine.http_sut import HttpTarget

    return HttpTarget.from_environment(
        str(config.sut_url),
        output_path=config.sut_output_path,
        retrieved_path=config.sut_retrieved_path,
        trajectory_path=config.sut_trajectory_path,
        timeout_s=config.sut_timeout,
        limiter=limiter,
    )


def system_limiter(concurrency: int, rpm: float | None) -> Limiter:
    """The limiter every call to the system under test goes through (--concurrency, --rpm)."""
    return Limiter(concurrency, rpm=rpm)
