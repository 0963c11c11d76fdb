"""The Ray executor: the same runner, on Ray workers, results streamed back to the driver.

A run's executions are cut into batches. Each batch is one Ray task that builds an ordinary
:class:`~assay.engine.runner.Runner` over the same metric objects and system under test and returns
every finished result. The driver hands each result to the run's own ``on_result`` (the run
store, the report builder), so resume, ``--retry-errors``, budgets and every report work as
in a local run. A result is delivered only when its whole batch has come back, so a worker
that dies loses just its batch in flight, which Ray runs again (``max_retries``), and nothing
is counted twice.

Concurrency stays global: with ``B`` batches in flight, each batch's runner gets
``ceil(concurrency / B)`` slots for the system under test, so the total never exceeds what a
local run would use. Metrics that learn from the whole dataset (``prepare``) do it once, on
the driver, before they are shipped. Ray is an optional extra (``assay[ray]``) and is imported
only here.
"""

from __future__ import annotations

import asyncio
import copy
import math
import os
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from assay.data.executions import Execution
from assay.data.outputs import Output
from assay.data.results import ExecutionResult
from assay.engine.runner import Runner
from assay.engine.sut import SystemUnderTest
from assay.errors import UsageError
from assay.metrics.base import Metric, asks_resources
from assay.providers.limiter import Limiter

BatchResult = list[tuple[ExecutionResult, Output | None]]


Payload = tuple[list[Metric], SystemUnderTest, dict[str, frozenset[str]], int]
"""What every batch task gets: the metrics, the system, the tag scopes, its concurrency."""


@dataclass(frozen=True)
class RayOptions:
    """Where and how to run on Ray.

    ``address`` joins a running cluster (``RAY_ADDRESS`` is honoured by Ray itself when this is
    None); with neither, a local Ray is started with ``num_cpus`` workers (all cores if None).
    """

    address: str | None = None
    batch_size: int = 256
    max_in_flight: int | None = None
    max_retries: int = 3
    num_cpus: int | None = None


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise UsageError("--executor ray needs Ray: pip install 'assay[ray]'") from None
    return ray


def start(options: RayOptions) -> Any:
    """Connect to the cluster named by ``options`` (or ``RAY_ADDRESS``), else start a local Ray."""
    ray = _ray()
    if not ray.is_initialized():
        kwargs: dict[str, Any] = {
            "ignore_reinit_error": True,
            "include_dashboard": False,
            "log_to_driver": False,
            "configure_logging": False,
        }
        if options.address is not None:
            kwargs["address"] = options.address
        else:
            kwargs["runtime_env"] = {"env_vars": {"PYTHONPATH": _driver_path()}}
            if options.num_cpus is not None:
                kwargs["num_cpus"] = options.num_cpus
        ray.init(**kwargs)
    return ray


def _driver_path() -> str:
    """The driver's own import folders (the project, a ``--sut`` module's folder), so local
    workers import what the driver imported. On a cluster, ship code with Ray's runtime_env."""
    installed = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    folders = [os.getcwd()]
    for entry in sys.path:
        real = os.path.realpath(entry or os.getcwd())
        if os.path.isdir(real) and not any(real.startswith(p) for p in installed):
            folders.append(real)
    extra = os.environ.get("PYTHONPATH")
    return os.pathsep.join(dict.fromkeys([*folders, *([extra] if extra else [])]))


def resources_for(metrics: Sequence[Metric]) -> dict[str, float]:
    """The Ray resources one batch needs: the largest request of any metric (e.g. a GPU)."""
    wanted: dict[str, float] = {}
    for metric in metrics:
        if not asks_resources(metric):
            continue
        asked = metric.resources
        for name, amount in asked.items():
            wanted[str(name)] = max(wanted.get(str(name), 0.0), float(amount))
    return wanted


def _batches(executions: Sequence[Execution], size: int) -> Iterator[list[Execution]]:
    """Batches of about ``size``; a conversation is never split (its turns need each other)."""
    from assay.data.dataset import conversation_of

    batch: list[Execution] = []
    for execution in executions:
        turn = conversation_of(execution.sample)
        last = conversation_of(batch[-1].sample) if batch else None
        inside = turn is not None and last is not None and turn[0] == last[0]
        if len(batch) >= size and not inside:
            yield batch
            batch = []
        batch.append(execution)
    if batch:
        yield batch


def _portable_sut(sut: SystemUnderTest, concurrency: int) -> SystemUnderTest:
    """A copy of the system under test fit to ship: its limiter is replaced by a fresh one
    sized to this worker's share of the global concurrency."""
    shipped = copy.copy(sut)
    if getattr(shipped, "limiter", None) is not None:  # a Python or HTTP system's own limiter
        setattr(shipped, "limiter", Limiter(concurrency))  # noqa: B010 (not in the protocol)
    return shipped


def score_batch(
    payload: Payload,
    batch: list[Execution],
) -> BatchResult:
    """Run one batch with an ordinary runner (the body of the Ray task)."""
    metrics, sut, scopes, concurrency = payload
    finished: BatchResult = []
    runner = Runner(
        metrics,
        sut,
        on_result=lambda result, output: finished.append((result, output)),
        sut_concurrency=concurrency,
        scopes=scopes,
        prepare_with=(),
    )
    runner.run(batch)
    return finished


def run_on_ray(runner: Runner, executions: Sequence[Execution], options: RayOptions) -> None:
    """Run ``executions`` on Ray, delivering every result to ``runner.on_result`` on the driver.

    ``runner.should_stop`` is polled before each batch is sent; a stop lets the batches in
    flight finish and sets ``runner.stopped_early``.
    """
    ray = start(options)
    asyncio.run(runner.prepare())
    in_flight_cap = options.max_in_flight or max(1, int(ray.available_resources().get("CPU", 1)))
    concurrency = max(1, math.ceil(runner.sut_concurrency / in_flight_cap))
    payload = ray.put(
        (
            runner.metrics,
            _portable_sut(runner.sut, concurrency),
            runner.scopes,
            concurrency,
        )
    )
    task = ray.remote(score_batch).options(
        max_retries=options.max_retries,
        retry_exceptions=False,
        **_task_resources(resources_for(runner.metrics)),
    )
    _drive(ray, runner, task, payload, _batches(executions, options.batch_size), in_flight_cap)


def _task_resources(wanted: dict[str, float]) -> dict[str, Any]:
    options: dict[str, Any] = {"num_cpus": wanted.pop("CPU", 1.0)}
    if "GPU" in wanted:
        options["num_gpus"] = wanted.pop("GPU")
    if wanted:
        options["resources"] = wanted
    return options


def _drive(
    ray: ModuleType,
    runner: Runner,
    task: Any,
    payload: Payload,
    batches: Iterator[list[Execution]],
    cap: int,
) -> None:
    """Keep ``cap`` batches in flight; deliver each finished batch's results in its order."""
    pending: list[Any] = []
    exhausted = False
    while True:
        while not exhausted and len(pending) < cap:
            if runner.should_stop():
                runner.stopped_early = True
                exhausted = True
                break
            batch = next(batches, None)
            if batch is None:
                exhausted = True
                break
            pending.append(task.remote(payload, batch))
        if not pending:
            return
        done, pending = ray.wait(pending, num_returns=1)
        for result, output in ray.get(done[0]):
            runner.on_result(result, output)
