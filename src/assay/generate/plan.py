"""What to ask the generator for: a reproducible stream of tasks (kind, chunks, persona).

The kinds are interleaved by smooth weighted round robin, so any prefix of the stream follows
the requested mix as closely as whole numbers allow, and the chunks of each task are drawn by
a generator seeded with the run's seed: the same seed, corpus and options give the same tasks,
hence the same prompts, hence cache hits on a rerun. A task that would repeat an earlier
task's kind and chunks is drawn again (a few times), since its sample would be a duplicate.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Final

from assay.errors import UsageError
from assay.generate.corpus import Chunk, Corpus

KINDS: Final = ("single-fact", "multi-hop", "comparison", "unanswerable")
DEFAULT_MIX: Final = {"single-fact": 4, "multi-hop": 2, "comparison": 2, "unanswerable": 1}
DEFAULT_PERSONA: Final = "a person who uses these documents and wants a straight answer"
_REDRAWS: Final = 20


@dataclass(frozen=True)
class Task:
    """One generation request: its position in the stream, kind, source chunks and persona."""

    index: int
    kind: str
    chunks: tuple[Chunk, ...]
    persona: str
    seed: int


def parse_mix(items: Sequence[str] | None) -> dict[str, int]:
    """``--mix kind=weight`` options as weights (default :data:`DEFAULT_MIX`); a kind left out
    gets weight 0."""
    if not items:
        return dict(DEFAULT_MIX)
    mix: dict[str, int] = {}
    for item in items:
        kind, sep, raw = item.partition("=")
        kind = kind.strip()
        if kind not in KINDS:
            raise UsageError(f"--mix {item!r}: unknown kind; kinds: {', '.join(KINDS)}")
        if not sep or not raw.strip().isdigit() or not raw.strip().isascii():
            raise UsageError(f"--mix {item!r}: the weight must be a whole number, e.g. {kind}=2")
        mix[kind] = int(raw.strip())
    if not any(mix.values()):
        raise UsageError("--mix: at least one kind needs a weight above 0")
    return mix


def kind_sequence(mix: dict[str, int]) -> Iterator[str]:
    """Kinds forever, interleaved in proportion to their weights (smooth weighted round robin)."""
    weights = [(kind, mix.get(kind, 0)) for kind in KINDS if mix.get(kind, 0) > 0]
    total = sum(weight for _, weight in weights)
    current = dict.fromkeys((kind for kind, _ in weights), 0)
    while True:
        for kind, weight in weights:
            current[kind] += weight
        chosen = max(current, key=lambda kind: current[kind])  # ties: the earlier kind
        current[chosen] -= total
        yield chosen


def tasks(
    corpus: Corpus, mix: dict[str, int], personas: Sequence[str], seed: int
) -> Iterator[Task]:
    """The task stream for a corpus; deterministic in every argument."""
    rng = random.Random(f"assay-generate:{seed}")
    people = list(personas) or [DEFAULT_PERSONA]
    used: set[tuple[str, tuple[str, ...]]] = set()
    for index, kind in enumerate(kind_sequence(mix)):
        chunks = _draw(corpus, kind, rng)
        for _ in range(_REDRAWS):
            if (kind, tuple(c.id for c in chunks)) not in used:
                break
            chunks = _draw(corpus, kind, rng)
        used.add((kind, tuple(c.id for c in chunks)))
        persona = people[rng.randrange(len(people))]
        yield Task(index, kind, chunks, persona, rng.randrange(1, 2**31))


def _draw(corpus: Corpus, kind: str, rng: random.Random) -> tuple[Chunk, ...]:
    """The chunks of one task: one, or two for multi-hop (same document when it has two or
    more chunks) and comparison (different documents when the corpus has two or more)."""
    first = corpus.chunks[rng.randrange(len(corpus.chunks))]
    if kind in ("single-fact", "unanswerable") or len(corpus.chunks) < 2:
        return (first,)
    others = [c for c in corpus.chunks if c.id != first.id]
    same = [c for c in others if c.document == first.document]
    other_docs = [c for c in others if c.document != first.document]
    pool = (same or other_docs) if kind == "multi-hop" else (other_docs or same)
    return (first, pool[rng.randrange(len(pool))])
