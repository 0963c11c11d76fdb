"""Joining two reports sample by sample: each side's samples as columns (repetitions pooled),
the join, and the outcome changes (pass/fail flips, new failures) of the joined samples.

A side is read from its rows in one pass (:meth:`SampleTable.of`), so the rows may stream from
a run store or a report file: what is kept per sample is its id, row hash, tags and, per metric,
the sum of its scores and its counts of scores and passes.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from assay.report.comparison_model import Flip, NewFailure, SampleRef
from assay.report.model import Row
from assay.store.schema import decode_json

JoinKey = Literal["row_hash", "id"]


@dataclass
class MetricTally:
    """One metric on one side, per sample: the sum of its scores, how many, how many passed."""

    total: array[float] = field(default_factory=lambda: array("d"))
    scored: array[int] = field(default_factory=lambda: array("q"))
    passed: array[int] = field(default_factory=lambda: array("q"))

    def grow(self, size: int) -> None:
        """Room for ``size`` samples, grown by doubling: the columns may run past the table's
        samples (the readers cut them to its length)."""
        have = len(self.scored)
        if size > have:
            more = max(size - have, have)
            self.total.extend(array("d", bytes(8 * more)))
            self.scored.extend(array("q", bytes(8 * more)))
            self.passed.extend(array("q", bytes(8 * more)))


class SampleTable:
    """One report's samples, in the order their first rows come, repetitions pooled.

    Samples are told apart by id. ``row_hash`` can be the join key when every row has one, no
    hash stands for two ids and no id has two hashes (see :func:`join`).
    """

    def __init__(self) -> None:
        self.ids: list[str] = []
        self.hashes: list[str] = []
        self.tags: list[tuple[str, ...]] = []
        self.by_id: dict[str, int] = {}
        self.metrics: dict[str, MetricTally] = {}
        self.errors: dict[int, set[str]] = {}
        self.hashable = True  # every row had a hash, and each id the same one
        self._tag_tuples: dict[tuple[str, ...], tuple[str, ...]] = {}

    @classmethod
    def of(cls, rows: Iterable[Row | bytes]) -> SampleTable:
        table = cls()
        for row in rows:
            table.add(row)
        return table

    def add(self, row: Row | bytes) -> None:
        """Pool one row (one execution) into its sample: a model, or the row's JSON as a run
        store keeps it (assay's own bytes: read without validation, as stored rows are)."""
        if isinstance(row, bytes):
            document = decode_json(row)
            scores = [(m, s["score"], s["passed"]) for m, s in document["scores"].items()]
            tags, errors = document["tags"], document["errors"]
            self._add(document["id"], document["row_hash"], tags, scores, errors)
        else:
            scores = [(m, s.score, s.passed) for m, s in row.scores.items()]
            self._add(row.id, row.row_hash, row.tags, scores, row.errors)

    def _add(
        self,
        sample_id: str,
        row_hash: str,
        tags: list[str],
        scores: list[tuple[str, float, bool]],
        errors: dict[str, str],
    ) -> None:
        index = self.by_id.get(sample_id)
        if index is None:
            index = self.by_id[sample_id] = len(self.ids)
            self.ids.append(sample_id)
            self.hashes.append(row_hash)
            labels = tuple(tags)
            self.tags.append(self._tag_tuples.setdefault(labels, labels))
        if not row_hash or self.hashes[index] != row_hash:
            self.hashable = False
        if errors:
            self.errors.setdefault(index, set()).update(errors)
        for metric, value, passed in scores:
            tally = self.metrics.get(metric)
            if tally is None:
                tally = self.metrics[metric] = MetricTally()
            if index >= len(tally.scored):
                tally.grow(index + 1)
            tally.total[index] += value
            tally.scored[index] += 1
            tally.passed[index] += passed

    def __len__(self) -> int:
        return len(self.ids)

    def counts(self, metric: str) -> np.ndarray:
        """How many scores each sample has on ``metric`` (0: none)."""
        tally = self.metrics.get(metric)
        if tally is None:
            return np.zeros(len(self), dtype=np.int64)
        return _padded(np.frombuffer(tally.scored, dtype=np.int64), len(self))

    def score_means(self, metric: str) -> np.ndarray:
        """Each sample's mean score on ``metric`` over its repetitions (NaN: none)."""
        tally = self.metrics.get(metric)
        return self._per_score(metric, None if tally is None else tally.total)

    def pass_fractions(self, metric: str) -> np.ndarray:
        """Each sample's fraction of passing repetitions on ``metric`` (NaN: none)."""
        tally = self.metrics.get(metric)
        return self._per_score(metric, None if tally is None else tally.passed)

    def _per_score(self, metric: str, sums: array[float] | array[int] | None) -> np.ndarray:
        """``sums`` divided by each sample's count of scores on ``metric`` (NaN: none)."""
        if sums is None:
            return np.full(len(self), np.nan)
        dtype = np.float64 if sums.typecode == "d" else np.int64
        top = _padded(np.frombuffer(sums, dtype=dtype), len(self)).astype(np.float64)
        counts = self.counts(metric)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(counts > 0, top / counts, np.nan)

    def fails(self, metric: str) -> np.ndarray:
        """Samples whose repetitions mostly failed ``metric`` (one repetition: it failed)."""
        return (self.counts(metric) > 0) & ~(self.pass_fractions(metric) > 0.5)

    def passed_all(self, metrics: Iterable[str]) -> np.ndarray:
        """Samples with no error that no metric of ``metrics`` failed."""
        ok = np.ones(len(self), dtype=bool)
        for metric in metrics:
            ok &= ~self.fails(metric)
        if self.errors:
            ok[np.fromiter(self.errors, dtype=np.int64)] = False
        return ok

    def keyed(self, join_key: JoinKey) -> dict[str, int]:
        """Each sample's index by its ``join_key`` (the first, should two share a hash)."""
        if join_key == "id":
            return self.by_id
        keys: dict[str, int] = {}
        for index, value in enumerate(self.hashes):
            keys.setdefault(value, index)
        return keys

    def key(self, index: int, join_key: JoinKey) -> str:
        return self.hashes[index] if join_key == "row_hash" else self.ids[index]

    def ref(self, index: int, join_key: JoinKey) -> SampleRef:
        return SampleRef(key=self.key(index, join_key), sample_id=self.ids[index])


@dataclass(frozen=True)
class SampleAt:
    """One sample of a :class:`SampleTable`, for code that looks at samples one at a time."""

    table: SampleTable
    index: int

    @property
    def sample_id(self) -> str:
        return self.table.ids[self.index]

    @property
    def errors(self) -> set[str]:
        return self.table.errors.get(self.index, set())

    def scored(self, metric: str) -> bool:
        tally = self.table.metrics.get(metric)
        return tally is not None and self.index < len(tally.scored) and tally.scored[self.index] > 0

    def score_mean(self, metric: str) -> float | None:
        """The mean of its scores on ``metric`` over its repetitions; None: none."""
        if not self.scored(metric):
            return None
        tally = self.table.metrics[metric]
        return tally.total[self.index] / tally.scored[self.index]

    def passes_metric(self, metric: str) -> bool | None:
        """Most repetitions passed (with one repetition: it passed); None: not scored."""
        if not self.scored(metric):
            return None
        tally = self.table.metrics[metric]
        return tally.passed[self.index] / tally.scored[self.index] > 0.5

    def passed_all(self, metrics: Iterable[str]) -> bool:
        if self.errors:
            return False
        return all(self.passes_metric(name) is not False for name in metrics)


def _padded(values: np.ndarray, size: int) -> np.ndarray:
    """``values`` with zeros after it up to ``size`` (samples seen after a metric's last row)."""
    if len(values) >= size:
        return values[:size]
    return np.concatenate([values, np.zeros(size - len(values), dtype=values.dtype)])


def _unique_hashes(table: SampleTable) -> bool:
    return table.hashable and len(set(table.hashes)) == len(table.hashes)


@dataclass
class Joined:
    """The samples of ``current`` that ``reference`` also has (current's order), as index
    pairs, and those either side has alone."""

    key: JoinKey
    current: SampleTable
    reference: SampleTable
    cur: np.ndarray
    ref: np.ndarray
    added: list[int]
    removed: list[int]

    def __len__(self) -> int:
        return len(self.cur)


def join(current: SampleTable, reference: SampleTable) -> Joined:
    """Pair the samples on ``row_hash`` (the hash of input and expected output) when both sides
    allow it (:class:`SampleTable`), else on the sample id."""
    key: JoinKey = "row_hash" if _unique_hashes(current) and _unique_hashes(reference) else "id"
    if key == "row_hash":
        theirs = {value: index for index, value in enumerate(reference.hashes)}
        mine = current.hashes
    else:
        theirs, mine = reference.by_id, current.ids
    cur, ref, added = array("q"), array("q"), []
    for index, value in enumerate(mine):
        other = theirs.get(value)
        if other is None:
            added.append(index)
        else:
            cur.append(index)
            ref.append(other)
    matched = np.zeros(len(reference), dtype=bool)
    ref_indices = np.frombuffer(ref, dtype=np.int64)
    matched[ref_indices] = True
    removed = np.flatnonzero(~matched).tolist()
    return Joined(
        key, current, reference, np.frombuffer(cur, dtype=np.int64), ref_indices, added, removed
    )


def flips(joined: Joined, metrics: list[str]) -> list[Flip]:
    """Every (sample, metric) whose pass/fail outcome changed, in sample then metric order."""
    found: list[tuple[int, int, bool]] = []  # (pair, metric, passed before)
    for position, metric in enumerate(metrics):
        before = _outcome(joined.reference, metric)[joined.ref]
        after = _outcome(joined.current, metric)[joined.cur]
        changed = (before != 0) & (after != 0) & (before != after)
        found += [(int(pair), position, bool(before[pair] > 0)) for pair in np.flatnonzero(changed)]
    found.sort()
    return list(_flip_rows(joined, metrics, found))


def _outcome(table: SampleTable, metric: str) -> np.ndarray:
    """Per sample: 1 passed, -1 failed, 0 not scored (see :meth:`SampleTable.fails`)."""
    scored = table.counts(metric) > 0
    passed = table.pass_fractions(metric) > 0.5
    return np.where(scored, np.where(passed, 1, -1), 0)


def _flip_rows(
    joined: Joined, metrics: list[str], found: list[tuple[int, int, bool]]
) -> Iterator[Flip]:
    means: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for pair, position, passed_before in found:
        metric = metrics[position]
        if metric not in means:
            means[metric] = (
                joined.reference.score_means(metric),
                joined.current.score_means(metric),
            )
        before, after = means[metric]
        cur, ref = int(joined.cur[pair]), int(joined.ref[pair])
        yield Flip(
            key=joined.current.key(cur, joined.key),
            sample_id=joined.current.ids[cur],
            metric=metric,
            direction="pass-to-fail" if passed_before else "fail-to-pass",
            before=float(before[ref]),
            after=float(after[cur]),
        )


def new_failures(joined: Joined, metrics: list[str]) -> list[NewFailure]:
    """Samples that passed every metric in the reference and now fail or error."""
    current = joined.current
    passed_before = joined.reference.passed_all(metrics)[joined.ref]
    passed_now = current.passed_all(metrics)[joined.cur]
    failing = {metric: current.fails(metric) for metric in metrics}
    found: list[NewFailure] = []
    for pair in np.flatnonzero(passed_before & ~passed_now):
        index = int(joined.cur[pair])
        found.append(
            NewFailure(
                key=current.key(index, joined.key),
                sample_id=current.ids[index],
                failed_metrics=[m for m in metrics if failing[m][index]],
                errored=sorted(current.errors.get(index, ())),
            )
        )
    return found
