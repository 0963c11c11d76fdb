"""RAG metrics: faithfulness, context recall and context precision (offline heuristic method).

Claims come from the one claim splitter (:mod:`assay.tez.claims`) and lexical support from the
Tez heuristic (:func:`assay.tez.support.supports`: every number and name of the claim present,
and at least ``tau`` of its content words). Details list claims by index and verdict; claim
texts appear only with ``texts: true``. Formulas: docs/metrics.md, "RAG metrics".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from assay.errors import MetricConfigError, MetricError
from assay.metrics.base import MetricScore, type_name
from assay.metrics.retrieval import RELEVANT_KEY, gains
from assay.tez.claims import split_response
from assay.tez.support import DEFAULT_TAU, supports

if TYPE_CHECKING:
    from assay.dataset import Sample
    from assay.outputs import Output

METHODS = ("heuristic",)


def claims_of(text: str) -> list[str]:
    """The claims of a text, in order (citations stripped)."""
    return [claim.text for claim in split_response(text).claims]


def supported(claim: str, contexts: Sequence[str], tau: float) -> bool:
    """Whether some context, or all of them together, lexically supports the claim."""
    if any(supports(claim, text, tau=tau).supported for text in contexts):
        return True
    return len(contexts) > 1 and supports(claim, "\n".join(contexts), tau=tau).supported


def contexts_of(metric: str, output: Output) -> tuple[str, ...]:
    texts = output.context_texts()
    if not texts:
        raise MetricError(
            f"metric '{metric}' needs the answer's contexts; return 'contexts' (texts) or "
            "'retrieved' entries with 'text'"
        )
    return texts


def reference_text(metric: str, sample: Sample) -> str:
    expected = sample.expected_output
    if not isinstance(expected, str) or not expected.strip():
        raise MetricError(
            f"metric '{metric}' needs a reference answer in expected_output; got "
            f"{type_name(expected)}"
        )
    return expected


@dataclass(frozen=True)
class _ClaimSupport:
    """Shared shape of the claim-based metrics: share of claims the contexts support."""

    name: str = ""
    method: str = "heuristic"
    tau: float = DEFAULT_TAU
    texts: bool = False

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise MetricConfigError(
                f"{self.name}: method must be one of {', '.join(METHODS)}; got {self.method!r}"
            )
        if not 0.0 < self.tau <= 1.0:
            raise MetricConfigError(f"{self.name}: tau must be in (0, 1]; got {self.tau!r}")

    def claim_score(self, claims: list[str], contexts: Sequence[str], what: str) -> MetricScore:
        if not claims:
            raise MetricError(f"metric '{self.name}': {what} has no claims to check")
        verdicts = [supported(claim, contexts, self.tau) for claim in claims]
        rows: list[dict[str, Any]] = [
            {"index": i, "verdict": "supported" if ok else "unsupported"}
            for i, ok in enumerate(verdicts)
        ]
        if self.texts:
            for row, claim in zip(rows, claims, strict=True):
                row["text"] = claim
        details = {
            "method": self.method,
            "claims": rows,
            "supported": sum(verdicts),
            "total": len(claims),
        }
        return MetricScore(round(sum(verdicts) / len(claims), 6), details)


@dataclass(frozen=True)
class Faithfulness(_ClaimSupport):
    name: str = "faithfulness"

    def score(self, sample: Sample, output: Output) -> MetricScore:
        contexts = contexts_of(self.name, output)
        return self.claim_score(claims_of(output.text), contexts, "the answer")


@dataclass(frozen=True)
class ContextRecall(_ClaimSupport):
    name: str = "context-recall"

    def score(self, sample: Sample, output: Output) -> MetricScore:
        contexts = contexts_of(self.name, output)
        reference = reference_text(self.name, sample)
        return self.claim_score(claims_of(reference), contexts, "the reference answer")


def average_precision(relevant: Sequence[bool]) -> float:
    """Mean of precision@k over the ranks k that hold a relevant context; 0.0 with none."""
    hits, total = 0, 0.0
    for rank, is_relevant in enumerate(relevant, start=1):
        if is_relevant:
            hits += 1
            total += hits / rank
    return round(total / hits, 6) if hits else 0.0


@dataclass(frozen=True)
class ContextPrecision(_ClaimSupport):
    name: str = "context-precision"

    def score(self, sample: Sample, output: Output) -> MetricScore:
        if sample.metadata.get(RELEVANT_KEY) is not None:
            if not output.retrieved:
                raise MetricError(f"metric '{self.name}' needs the answer's 'retrieved' ranking")
            relevance = gains(sample)
            flags = [relevance.get(r.id, 0.0) > 0 for r in output.retrieved]
            source = f"metadata.{RELEVANT_KEY}"
        else:
            claims = claims_of(reference_text(self.name, sample))
            if not claims:
                raise MetricError(f"metric '{self.name}': the reference answer has no claims")
            contexts = contexts_of(self.name, output)
            flags = [any(supported(c, [text], self.tau) for c in claims) for text in contexts]
            source = "reference claims"
        details = {
            "method": self.method,
            "relevance_from": source,
            "relevant_ranks": [rank for rank, ok in enumerate(flags, start=1) if ok],
            "ranked": len(flags),
        }
        return MetricScore(average_precision(flags), details)
