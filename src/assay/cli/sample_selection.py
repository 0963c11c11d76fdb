"""The samples a run scores, for fast loops: ``--id``, ``--tag``, ``--sample N --seed S``,
``--limit N``, applied in that order."""

from __future__ import annotations

from assay.cli.console import fail
from assay.data.dataset import Dataset, Sample


def select_samples(
    dataset: Dataset,
    *,
    limit: int | None,
    sample_n: int | None,
    seed: int,
    tags: list[str],
    ids: list[str],
) -> Dataset:
    """The dataset narrowed to the selected samples (itself when nothing is selected)."""
    if not (ids or tags or limit is not None or sample_n is not None):
        return dataset  # nothing selected: a streamed dataset stays streamed
    samples = list(dataset.samples)
    if ids:
        samples = _with_ids(samples, ids, dataset.name)
    if tags:
        samples = _with_tags(samples, tags)
    if sample_n is not None:
        samples = _random(samples, sample_n, seed)
    if limit is not None:
        samples = _first(samples, limit)
    if not samples:
        fail("the selection (--id/--tag/--sample/--limit) leaves no sample to run")
    return dataset.model_copy(update={"samples": samples})


def _with_ids(samples: list[Sample], ids: list[str], dataset_name: str) -> list[Sample]:
    """The samples with these ids; an id the dataset does not have is an error."""
    known = {s.id for s in samples}
    unknown = [i for i in ids if i not in known]
    if unknown:
        fail(
            f"--id: no sample with id {', '.join(repr(i) for i in unknown)} in dataset "
            f"'{dataset_name}'"
        )
    wanted = set(ids)
    return [s for s in samples if s.id in wanted]


def _with_tags(samples: list[Sample], tags: list[str]) -> list[Sample]:
    """The samples with at least one of these tags."""
    wanted = set(tags)
    return [s for s in samples if wanted.intersection(s.tags)]


def _random(samples: list[Sample], count: int, seed: int) -> list[Sample]:
    """``count`` samples drawn without replacement by ``seed``, kept in dataset order."""
    import random

    if count < 1:
        fail("--sample must be at least 1")
    rng = random.Random(seed)
    picked = set(rng.sample(range(len(samples)), min(count, len(samples))))
    return [s for i, s in enumerate(samples) if i in picked]


def _first(samples: list[Sample], count: int) -> list[Sample]:
    """The first ``count`` samples."""
    if count < 1:
        fail("--limit must be at least 1")
    return samples[:count]
