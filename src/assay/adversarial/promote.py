"""Turn the samples a run failed into a golden dataset, so a regression found once is tested
forever (``--promote-failures PATH`` on ``assay run`` and ``assay adversarial``).

Each promoted sample keeps its original ``input``, ``expected_output`` and ``metadata`` and
gains ``metadata.assay.promoted_failure`` saying where it came from. The system's actual
answer and any provider or system error text are left out: the file is a test, not a log.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import yaml

from assay.data.dataset import DATASET_SCHEMA, Dataset, Sample
from assay.data.fileio import write_atomic
from assay.errors import UsageError
from assay.report.model import Row

SUT_STAGE = "system-under-test"


def failing_samples(rows: Iterable[Row]) -> dict[str, tuple[set[str], set[str]]]:
    """Sample id -> (metrics it failed, metrics or stages that errored), over all repetitions."""
    found: dict[str, tuple[set[str], set[str]]] = {}
    for row in rows:
        failed = {name for name, score in row.scores.items() if not score.passed}
        errored = set(row.errors)
        if failed or errored:
            entry = found.setdefault(row.id, (set(), set()))
            entry[0].update(failed)
            entry[1].update(errored)
    return found


def _promoted(sample: Sample, provenance: Mapping[str, Any]) -> dict[str, Any]:
    metadata = dict(sample.metadata)
    own = metadata.get("assay")
    metadata["assay"] = {
        **(own if isinstance(own, Mapping) else {}),
        "promoted_failure": provenance,
    }
    return {
        "id": sample.id,
        "input": sample.input,
        "expected_output": sample.expected_output,
        "metadata": metadata,
    }


def promoted_document(
    dataset: Dataset, rows: Iterable[Row], *, source: str, run_id: str | None = None
) -> dict[str, Any] | None:
    """The promoted dataset as a mapping; None when nothing failed or errored."""
    failing = failing_samples(rows)
    if not failing:
        return None
    stamp = datetime.now(timezone.utc).isoformat(timespec="seconds")
    samples = []
    for sample in dataset.samples:
        if sample.id not in failing:
            continue
        failed, errored = failing[sample.id]
        provenance = {
            "source_dataset": dataset.name,
            "source_path": source,
            "run_id": run_id,
            "promoted_at": stamp,
            "failed_metrics": sorted(failed),
            "errored": sorted(errored),
        }
        samples.append(_promoted(sample, provenance))
    document: dict[str, Any] = {
        "schema_version": DATASET_SCHEMA,
        "name": f"{dataset.name}.failures",
        "description": f"Samples that failed or errored in a run of {dataset.name} ({source}).",
    }
    if dataset.metrics:
        document["metrics"] = [spec.model_dump() for spec in dataset.metrics]
    if dataset.rubric is not None:
        document["rubric"] = dataset.rubric
    document["samples"] = samples
    return document


def promote_failures(
    dataset: Dataset, rows: Iterable[Row], path: Path, *, source: str, run_id: str | None = None
) -> int:
    """Write the promoted dataset to ``path`` (YAML); remove a stale one when nothing failed.

    Returns the number of samples written.
    """
    document = promoted_document(dataset, rows, source=source, run_id=run_id)
    if document is None:
        if path.is_symlink() or not path.is_file():
            return 0  # only a regular file is removed: never a device, a link or a directory
        try:
            path.unlink(missing_ok=True)
        except OSError as exc:
            raise UsageError(f"cannot remove stale {path}: {exc.strerror or exc}") from None
        return 0
    text = yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=100)
    write_atomic(path, text)
    return len(document["samples"])
