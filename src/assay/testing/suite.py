"""A dataset, its metrics and a system under test, evaluated on the samples a test asks for."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from assay.data.dataset import Dataset, Sample
from assay.data.loading import load_dataset, load_outputs
from assay.data.outputs import Output
from assay.engine.evaluation import RunOptions, run_samples
from assay.engine.sut import PythonTarget, SavedOutputs, SystemUnderTest
from assay.errors import UsageError
from assay.metrics.registry import resolve_scoped, thresholds_of
from assay.report.system_info import SystemUnderTestInfo
from assay.testing.rows import AssayRow


class _Recorder:
    """Wraps a live system under test and keeps each sample's answer for failure messages."""

    synchronous = False

    def __init__(self, inner: SystemUnderTest) -> None:
        self.inner = inner
        self.limiter = getattr(inner, "limiter", None)
        self.answers: dict[str, Output] = {}

    def describe(self) -> SystemUnderTestInfo:
        return self.inner.describe()

    async def answer(self, sample: Sample) -> Output:
        output = await self.inner.answer(sample)
        self.answers[sample.id] = output
        return output


def _system(
    outputs: str | Path | None, sut: str | Callable[..., Any] | None
) -> SavedOutputs | _Recorder:
    if (outputs is None) == (sut is None):
        raise UsageError("give exactly one of outputs=FILE or sut=module:function (or a callable)")
    if outputs is not None:
        return SavedOutputs(load_outputs(outputs), str(outputs))
    assert sut is not None
    return _Recorder(PythonTarget(sut))


class DatasetSuite:
    """Runs a dataset's samples (all, or a selection) once and hands out one row per sample.

    Metrics default to the dataset's own ``metrics:`` block. Results are kept, so asking for a
    sample a second time does not run it again.
    """

    def __init__(
        self,
        dataset: str | Path | Dataset,
        *,
        metrics: Sequence[Any] | None = None,
        outputs: str | Path | None = None,
        sut: str | Callable[..., Any] | None = None,
    ) -> None:
        self.dataset = dataset if isinstance(dataset, Dataset) else load_dataset(dataset)
        specs = list(metrics) if metrics is not None else list(self.dataset.metrics)
        if not specs:
            raise UsageError(
                f"dataset '{self.dataset.name}' declares no metrics: pass metrics=[...]"
            )
        self.metrics, self.scopes = resolve_scoped(specs)
        self.thresholds = thresholds_of(specs, self.metrics)
        self.system = _system(outputs, sut)
        self._done: dict[str, AssayRow] = {}

    @property
    def sample_ids(self) -> list[str]:
        return [sample.id for sample in self.dataset.samples]

    def _answer(self, sample_id: str) -> Output | None:
        if isinstance(self.system, SavedOutputs):
            return self.system.outputs.get(sample_id)
        return self.system.answers.get(sample_id)

    def run(self, sample_ids: Iterable[str]) -> dict[str, AssayRow]:
        """Evaluate the samples not yet run among ``sample_ids``; rows for all of them."""
        wanted = list(dict.fromkeys(sample_ids))
        unknown = [i for i in wanted if i not in set(self.sample_ids)]
        if unknown:
            raise UsageError(f"dataset '{self.dataset.name}' has no sample {unknown[0]!r}")
        todo = set(wanted) - set(self._done)
        if todo:
            subset = [s for s in self.dataset.samples if s.id in todo]
            report = run_samples(
                self.dataset.model_copy(update={"samples": subset}),
                sut=self.system,
                metrics=self.metrics,
                scopes=self.scopes,
                options=RunOptions(thresholds=self.thresholds),
            )
            for sample in subset:
                rows = [row for row in report.rows if row.id == sample.id]
                answer = self._answer(sample.id)
                self._done[sample.id] = AssayRow(sample, answer, rows, dict(self.thresholds))
        return {i: self._done[i] for i in wanted}

    def row(self, sample_id: str) -> AssayRow:
        """One sample's row (runs it if needed)."""
        return self.run([sample_id])[sample_id]
