"""A resumed run scores the dataset it began with: content hashes per sample, checked.

When a run begins, a hash of the metric options is stored; each sample's content hash (its
input, expected output and metadata; the ``tags`` key aside, which only sorts it into cohorts)
is stored in the same transaction as the sample's executions (the recorder notes it), so the
dataset is not read an extra time for it. ``--resume`` compares them with the dataset as it is
now: metric options that differ are refused; a sample whose content differs (or that is gone)
is refused, exit 2 naming the first one, unless ``--resume-changed``, which forgets the stored
executions of exactly those samples so they are scored again against what the dataset now
says. A sample the run has not reached yet has no stored hash: it is scored as it now is.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence

from assay.data.dataset import Dataset, Sample, canonical_bytes, flat_values
from assay.errors import UsageError
from assay.store.runs import RunStore
from assay.store.sample_hashes import forget, save_hashes, stored_hashes

OPTIONS_KEY = "metric_options_hash"  # in the run's stored configuration


_CONTENT_SCHEME = "h2:"
"""Marks a content hash taken from the row hash and the metadata; a value without it was stored
by an assay that hashed the whole sample's JSON (:func:`_whole_sample_hash`), and a resume of
such a run compares hashes taken that way."""


_ENCODER = json.JSONEncoder(sort_keys=True, ensure_ascii=False, default=repr, allow_nan=True)
"""``json.dumps`` with these options, built once (``dumps`` builds an encoder per call)."""


def _digest(value: object) -> str:
    text = _ENCODER.encode(value)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def content_hash(sample: Sample) -> str:
    """What a metric may read of ``sample``: input, expected output, metadata (tags aside).

    The sample's row hash already covers its input and expected output (and is taken once per
    sample for the report): it is the content hash of a sample with no other metadata, and
    only the metadata is encoded beside it otherwise.
    """
    metadata = sample.metadata
    if not metadata or (len(metadata) == 1 and "tags" in metadata):
        return _CONTENT_SCHEME + sample.row_hash[:32]
    rest = {key: value for key, value in metadata.items() if key != "tags"}
    text = canonical_bytes(rest, flat=flat_values(rest), errors="surrogatepass")
    return _CONTENT_SCHEME + hashlib.sha256(sample.row_hash.encode() + text).hexdigest()[:32]


def _whole_sample_hash(sample: Sample) -> str:
    """The content hash an assay before the ``h2:`` scheme stored (kept to resume its runs)."""
    metadata = {key: value for key, value in sample.metadata.items() if key != "tags"}
    return _digest([sample.input, sample.expected_output, metadata])


def options_hash(
    dataset: Dataset, metric_names: Sequence[str], thresholds: Mapping[str, float]
) -> str:
    """The metrics' names, their options as the dataset gives them, and the thresholds."""
    specs = [[spec.name, spec.options] for spec in dataset.metrics]
    return _digest([list(metric_names), specs, dict(sorted(thresholds.items()))])


def check_resume(
    store: RunStore,
    run_id: str,
    dataset: Dataset,
    *,
    stored_options: object,
    options: str,
    rescore_changed: bool,
) -> set[str]:
    """The sample ids to score again (their stored work forgotten); raises on a changed dataset.

    A run stored before hashes were kept (no hashes, no options hash) resumes unchecked.
    """
    if stored_options is not None and stored_options != options:
        raise UsageError(
            f"run '{run_id}' was started with other metric options or thresholds; "
            "start a new run (a resume scores with the options it began with)"
        )
    before = stored_hashes(store, run_id)
    if not before:
        return set()
    legacy = not next(iter(before.values())).startswith(_CONTENT_SCHEME)
    hashing = _whole_sample_hash if legacy else content_hash
    now = {sample.id: hashing(sample) for sample in dataset.samples}
    changed = [key for key, value in now.items() if key in before and before[key] != value]
    gone = [key for key in before if key not in now]
    if not (changed or gone):
        save_hashes(store, run_id, {key: now[key] for key in now if key not in before})
        return set()
    if not rescore_changed:
        raise UsageError(_refusal(run_id, changed, gone))
    forget(store, run_id, [*changed, *gone])
    save_hashes(store, run_id, {key: now[key] for key in now if before.get(key) != now[key]})
    return set(changed)


def _refusal(run_id: str, changed: list[str], gone: list[str]) -> str:
    count = len(changed) + len(gone)
    first = (
        f"sample {changed[0]!r} changed (input, expected output or metadata)"
        if changed
        else f"sample {gone[0]!r} is no longer in the dataset"
    )
    return (
        f"run '{run_id}': the dataset changed since the run began: {first}"
        f"{f' (and {count - 1} more)' if count > 1 else ''}; start a new run, or pass "
        "--resume-changed to score the changed samples again"
    )
