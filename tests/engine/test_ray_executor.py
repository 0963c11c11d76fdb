"""The Ray executor gives the same report as a local run, also when a worker dies mid-run.

Ray runs locally with 2 CPUs, as in CI; the tests skip where Ray is not installed
(``pip install 'assay[ray]'``).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from assay.data.dataset import dataset_from_data
from assay.engine.evaluation import RunOptions, run_samples
from assay.engine.sut import PythonTarget
from assay.metrics.registry import resolve_all
from assay.store.runs import RunStore
from engine import ray_sut
from engine.procs import run_assay

ray = pytest.importorskip("ray")

from assay.engine.ray_executor import RayOptions, start  # noqa: E402

QUICKSTART = Path(__file__).resolve().parents[2] / "examples" / "quickstart"


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    start(RayOptions(num_cpus=2))
    yield
    ray.shutdown()


def comparable(report: dict[str, Any]) -> dict[str, Any]:
    """A report without the run block (ids, timestamps, durations differ between runs)."""
    data = copy.deepcopy(report)
    data.pop("run")
    return data


def generated(count: int, marker: Path | None = None) -> Any:
    return dataset_from_data(
        {
            "schema_version": "assay.dataset.v1",
            "name": "generated",
            "samples": [
                {
                    "id": f"s{n:05d}",
                    "input": {"n": n, **({"marker": str(marker)} if n == 137 and marker else {})},
                    "expected_output": str(n),
                    "metadata": {"tags": ["even" if n % 2 == 0 else "odd"]},
                }
                for n in range(count)
            ],
        }
    )


def run_generated(tmp_path: Path, name: str, function: Any, ray_options: RayOptions | None) -> Any:
    dataset = generated(10_000, tmp_path / "died")
    store = RunStore(tmp_path / f"{name}.db")
    try:
        return run_samples(
            dataset,
            sut=PythonTarget(function),
            metrics=resolve_all(["exact-match", "contains"]),
            options=RunOptions(run_id=name, sut_concurrency=8, ray=ray_options),
            store=store,
        )
    finally:
        store.close()


def test_ten_thousand_samples_on_ray_match_the_local_run(local_ray: None, tmp_path: Path) -> None:
    local = run_generated(tmp_path, "local", ray_sut.echo, None)
    on_ray = run_generated(tmp_path, "ray", ray_sut.echo, RayOptions(batch_size=1000))
    assert on_ray.summary.total_executions == 10_000
    assert comparable(on_ray.model_dump(mode="json")) == comparable(local.model_dump(mode="json"))
    exact = next(m for m in local.metrics if m.name == "exact-match")
    assert exact.scored == 10_000 and exact.mean == pytest.approx(0.5)


def test_a_worker_that_dies_loses_only_its_batch(local_ray: None, tmp_path: Path) -> None:
    marker = tmp_path / "died"
    local = run_generated(tmp_path, "local", ray_sut.echo, None)
    on_ray = run_generated(
        tmp_path, "ray", ray_sut.echo_dying_once, RayOptions(batch_size=500, max_retries=2)
    )
    assert marker.exists(), "the worker was meant to die once"
    assert comparable(on_ray.model_dump(mode="json")) == comparable(local.model_dump(mode="json"))
    store = RunStore(tmp_path / "ray.db")
    try:
        ids = [result.sample_id for result, _, _ in store.iter_results("ray")]
    finally:
        store.close()
    assert len(ids) == len(set(ids)) == 10_000  # nothing counted twice, nothing lost


def test_quickstart_through_the_cli_matches_the_local_run(tmp_path: Path) -> None:
    reports = {}
    for executor in ("local", "ray"):
        out = tmp_path / f"{executor}.json"
        args = ["run", "dataset.yml", "--outputs", "outputs.json", "--format", "json"]
        args += ["--out", str(out), "--no-store", "--quiet", "--executor", executor]
        result = run_assay(args, cwd=QUICKSTART, timeout=300)
        assert result.returncode == 0, result.stderr
        reports[executor] = json.loads(out.read_text(encoding="utf-8"))
    assert comparable(reports["ray"]) == comparable(reports["local"])
