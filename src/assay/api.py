"""``assay.evaluate``: the Python entry point, on the same code path as ``assay run``.

Both resolve metrics with :func:`metric_plan` (the dataset's options kept for a metric named
again, the dataset's rubric for a bare ``rubric``), run the same pre-flight checks, and score
with :func:`assay.engine.evaluation.run_samples`, so the CLI and the API give equal numbers by
construction::

    import assay
    report = assay.evaluate("examples/quickstart/dataset.yml",
                            outputs="examples/quickstart/outputs.json")
    report.summary.macro_f1
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeGuard, cast

from assay.compare.gate import check_gate
from assay.compare.gate_rules import load_rules
from assay.data.dataset import Dataset, MetricSpec
from assay.data.loading import load_dataset, load_outputs
from assay.data.outputs import Output, check_outputs_cover, coerce_output
from assay.data.outputs_stream import same_ids
from assay.engine.evaluation import RunOptions
from assay.engine.evaluation import run_samples as run_evaluation
from assay.engine.preflight import check_metrics, check_providers, price_warnings
from assay.engine.sut import PythonTarget, SavedOutputs, SystemUnderTest
from assay.errors import UsageError
from assay.metrics.base import Metric
from assay.metrics.registry import calibrations_of, resolve_scoped, thresholds_of
from assay.providers import settings as provider_settings
from assay.providers.settings import ProviderSettings
from assay.store.project import find_config
from assay.store.runs import RunStore

if TYPE_CHECKING:
    from assay.report.model import Report


@dataclass(frozen=True)
class MetricPlan:
    """The metrics of a run with their tag scopes and pass thresholds."""

    metrics: list[Metric]
    scopes: dict[str, frozenset[str]]
    thresholds: dict[str, float]
    calibrations: dict[str, str] = field(default_factory=dict)  # metric -> labelled set


def _with_dataset_rubric(specs: list[Any], rubric: object) -> list[Any]:
    """A ``rubric`` metric with no rubric of its own uses the dataset's top-level ``rubric:``."""
    if rubric is None:
        return specs
    result = []
    for spec in specs:
        if spec == "rubric":
            spec = MetricSpec(name="rubric", rubric=rubric)
        elif (
            isinstance(spec, MetricSpec) and spec.name == "rubric" and "rubric" not in spec.options
        ):
            spec = MetricSpec(name="rubric", rubric=rubric, **spec.options)
        result.append(spec)
    return result


def _named_specs(names: Sequence[Any], declared: Sequence[Any]) -> list[Any]:
    """Given metrics replace the dataset's; a name the dataset declares keeps its options
    (tag scope, threshold, scale)."""
    by_name = {getattr(spec, "name", spec): spec for spec in declared}
    return [by_name.get(name, name) if isinstance(name, str) else name for name in names]


def metric_plan(
    dataset: Dataset, metrics: Sequence[Any] | None, settings: ProviderSettings
) -> MetricPlan:
    """Resolve ``metrics`` (default: the dataset's own) as ``assay run`` does; the metrics that
    call a provider are built with ``settings``."""
    chosen = _named_specs(metrics, dataset.metrics) if metrics else list(dataset.metrics)
    specs = _with_dataset_rubric(chosen, dataset.rubric)
    if not specs:
        raise UsageError(
            f"dataset '{dataset.name}' declares no metrics: declare 'metrics:' or pass some"
        )
    resolved, scopes = resolve_scoped(specs, settings)
    return MetricPlan(
        resolved,
        dict(scopes),
        thresholds_of(specs, resolved),
        calibrations_of(specs, resolved),
    )


def preflight(plan: MetricPlan, dataset: Dataset, settings: ProviderSettings) -> list[str]:
    """Configuration errors before any work (raises); returns warnings."""
    if not settings.dry_run:  # a dry run sends nothing, so it needs no key or endpoint
        check_providers(plan.metrics, settings)
    warnings = check_metrics(plan.metrics, plan.scopes, dataset.samples)
    return [*warnings, *price_warnings(plan.metrics, settings, datetime.date.today())]


def _is_system(value: object) -> TypeGuard[SystemUnderTest]:
    """A system object already (it answers samples), not a function to wrap in one."""
    return hasattr(value, "answer")


def _system(
    dataset: Dataset,
    outputs: str | Path | Mapping[str, Any] | None,
    sut: str | Callable[..., Any] | SystemUnderTest | None,
) -> SystemUnderTest:
    if (outputs is None) == (sut is None):
        raise UsageError("give exactly one of outputs= (a file or mapping) or sut=")
    if sut is not None:
        if isinstance(sut, str) and sut.startswith(("http://", "https://")):
            from assay.engine.http_sut import HttpTarget  # asyncio: for an HTTP system only

            return HttpTarget.from_environment(sut)
        if _is_system(sut):
            return sut
        return PythonTarget(cast("str | Callable[..., Any]", sut))  # not a system: a function
    if isinstance(outputs, (str, Path)):
        loaded = load_outputs(Path(outputs))
        if not same_ids(loaded, dataset.samples):
            ids = [s.id for s in dataset.samples]
            check_outputs_cover(loaded, ids, path=str(outputs))
        return SavedOutputs(loaded, str(outputs))
    if isinstance(outputs, Mapping):
        answers = {str(k): _as_output(v, coerce_output) for k, v in outputs.items()}
        # As for a file: every sample answered, every answer a sample's, before any scoring.
        check_outputs_cover(answers, [s.id for s in dataset.samples], path="outputs")
        return SavedOutputs(answers, "")
    raise UsageError(f"outputs must be a path or a mapping; got {type(outputs).__name__}")


def _as_output(value: object, coerce: Callable[[Any], Output]) -> Output:
    return value if isinstance(value, Output) else coerce(value)


def evaluate(
    dataset: str | Path | Dataset,
    *,
    outputs: str | Path | Mapping[str, Any] | None = None,
    sut: str | Callable[..., Any] | Any | None = None,
    metrics: Sequence[Any] | None = None,
    store: RunStore | None = None,
    settings: ProviderSettings | None = None,
    **options: Any,
) -> Report:
    """Score a dataset (path or object) from saved outputs or a system under test.

    ``metrics`` names or specs replace the dataset's metrics (a name the dataset declares keeps
    its options). ``settings``: the provider settings of the metrics that call a judge or an
    embedder (None: the environment's, :func:`assay.providers.settings.from_environment`).
    ``options`` are :class:`~assay.engine.evaluation.RunOptions` fields (repetitions,
    sut_concurrency, redact, text_limit, ...). Raises an :class:`~assay.errors.AssayError` for
    bad input or configuration, before any sample is attempted.
    """
    loaded = dataset if isinstance(dataset, Dataset) else load_dataset(Path(dataset))
    settings = settings or provider_settings.from_environment()
    plan = metric_plan(loaded, metrics, settings)
    warnings = preflight(plan, loaded, settings)
    system = _system(loaded, outputs, sut)
    if isinstance(dataset, (str, Path)):
        options.setdefault("dataset_path", str(dataset))
    run_options = RunOptions(thresholds=plan.thresholds, **options)
    rules = load_rules(cli={}, dataset_gate=loaded.gate, config_path=find_config())
    report = run_evaluation(
        loaded,
        sut=system,
        metrics=plan.metrics,
        options=run_options,
        store=store,
        warnings=warnings,
        scopes=plan.scopes,
    )
    # The gate's verdict, as `assay run` gives it without flags (the dataset's gate: block and
    # assay.toml [gate]): report.gate["passed"] is what the command's exit code would say.
    verdict = check_gate(report, rules).model_dump(mode="json")
    if store is not None:
        store.record_gate(report.run.run_id, verdict)
    return report.model_copy(update={"gate": verdict})
