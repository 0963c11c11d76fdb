"""RAG metrics: faithfulness, context recall, context precision and answer relevancy.

Each has two methods, chosen by the option ``method``: ``heuristic`` (the default; offline,
lexical; here) and ``judge`` (an OpenAI-compatible chat judge through :mod:`assay.judging`, in
:mod:`assay.metrics.rag_judge`, which imports this module); :mod:`assay.metrics.rag_methods`
builds the class the ``method`` option names. Both methods read the same units: claims from the
one claim splitter (:mod:`assay.tez.claims`), statements for answer relevancy, contexts in
ranking order. They differ only in who gives each unit its verdict, so their details line up
index by index. Details list units by index and verdict; texts appear only with ``texts: true``.
Formulas: docs/metrics.md, "RAG metrics".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from assay.errors import MetricConfigError, MetricError, UsageError
from assay.metrics.base import check_bool_option, environment_settings, type_name
from assay.metrics.batch import Row, RowScored
from assay.metrics.retrieval import RELEVANT_KEY, gains
from assay.providers.settings import ProviderSettings
from assay.tez.claims import split_response, statements
from assay.tez.scoring import GENERIC_QUERY_STEMS
from assay.tez.support import DEFAULT_TAU, content_words, supports

if TYPE_CHECKING:
    from assay.data.dataset import Sample
    from assay.data.outputs import Output

METHODS = ("heuristic", "judge")
RELEVANT_SCORE = 0.5
"""A reranker's relevance at or above which a statement or context counts as relevant."""


# --------------------------------------------------------------------------- inputs


def claims_of(text: str) -> list[str]:
    """The claims of a text, in order (citations stripped)."""
    return list(_claims(text))


@lru_cache(maxsize=4096)  # a memo of a pure function: context-recall and context-precision
def _claims(text: str) -> tuple[str, ...]:  # split the same references (a chunk is 2,048 rows)
    return tuple(claim.text for claim in split_response(text).claims)


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


def question_text(metric: str, sample: Sample) -> str:
    """``input.question``, else ``input.message`` (a conversation turn), else the only string
    value of ``input``; else an errored row."""
    question = sample.input.get("question", sample.input.get("message"))
    if not isinstance(question, str):
        strings = [v for v in sample.input.values() if isinstance(v, str)]
        question = strings[0] if len(strings) == 1 else None
    if question is None or not question.strip():
        raise MetricError(
            f"metric '{metric}' needs the question in input.question (a non-empty string)"
        )
    return question


def answer_claims(metric: str, text: str, what: str) -> list[str]:
    claims = claims_of(text)
    if not claims:
        raise MetricError(f"metric '{metric}': {what} has no claims to check")
    return claims


def answer_statements(metric: str, output: Output) -> list[str]:
    found = statements(output.text)
    if not found:
        raise MetricError(f"metric '{metric}': the answer has no statements to judge")
    return found


def relevance_from_ids(metric: str, sample: Sample, output: Output) -> list[bool] | None:
    """Per-rank relevance from ``metadata.relevant`` (None when the sample has none)."""
    if sample.metadata.get(RELEVANT_KEY) is None:
        return None
    if not output.retrieved:
        raise MetricError(f"metric '{metric}' needs the answer's 'retrieved' ranking")
    relevance = gains(sample)
    return [relevance.get(r.id, 0.0) > 0 for r in output.retrieved]


# --------------------------------------------------------------------------- scores


def average_precision(relevant: Sequence[bool]) -> float:
    """Mean of precision@k over the ranks k that hold a relevant context; 0.0 with none."""
    hits, total = 0, 0.0
    for rank, is_relevant in enumerate(relevant, start=1):
        if is_relevant:
            hits += 1
            total += hits / rank
    return round(total / hits, 6) if hits else 0.0


def share_score(
    units: Sequence[str],
    verdicts: Sequence[bool],
    labels: tuple[str, str],
    *,
    texts: bool,
    key: str = "claims",
) -> tuple[float, dict[str, Any]]:
    """``round(true / total, 6)`` and details listing each unit by index and verdict."""
    rows: list[dict[str, Any]] = [
        {"index": i, "verdict": labels[0] if ok else labels[1]} for i, ok in enumerate(verdicts)
    ]
    if texts:
        for row, unit in zip(rows, units, strict=True):
            row["text"] = unit
    found = sum(verdicts)
    details = {key: rows, labels[0]: found, "total": len(verdicts)}
    return round(found / len(verdicts), 6), details


def precision_details(flags: Sequence[bool], source: str) -> dict[str, Any]:
    return {
        "relevance_from": source,
        "relevant_ranks": [rank for rank, ok in enumerate(flags, start=1) if ok],
        "ranked": len(flags),
    }


# --------------------------------------------------------------------------- options


@dataclass(frozen=True)
class RagOptions:
    """Options every RAG metric takes; each class serves one ``method``."""

    name: str = ""
    method: str = "heuristic"
    texts: bool = False
    tau: float | None = None
    model: str | None = None
    reask: bool = True

    METHOD = "heuristic"

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise MetricConfigError(
                f"{self.name}: method must be one of {', '.join(METHODS)}; got {self.method!r}"
            )
        if self.method != self.METHOD:
            raise MetricConfigError(
                f"{self.name}: this class scores method {self.METHOD!r}; build the metric "
                f"with resolve({{'name': {self.name!r}, 'method': {self.method!r}}})"
            )
        check_bool_option(self.texts, self.name, "texts")
        check_bool_option(self.reask, self.name, "reask")
        self._check_method_options()

    def _check_method_options(self) -> None:
        if self.model is not None:
            raise MetricConfigError(f"{self.name}: option 'model' applies to method: judge")
        tau = self.tau_value
        if isinstance(tau, bool) or not isinstance(tau, (int, float)) or not 0.0 < tau <= 1.0:
            raise MetricConfigError(f"{self.name}: tau must be in (0, 1]; got {self.tau!r}")

    @property
    def tau_value(self) -> float:
        return DEFAULT_TAU if self.tau is None else self.tau


def supported(claim: str, contexts: Sequence[str], tau: float) -> bool:
    """Whether some context, or all of them together, lexically supports the claim."""
    if any(supports(claim, text, tau=tau).supported for text in contexts):
        return True
    return len(contexts) > 1 and supports(claim, "\n".join(contexts), tau=tau).supported


def question_words(metric: str, question: str) -> set[str]:
    """The question's content words that say what is asked (not 'tell', 'explain', ...)."""
    wanted = {w for w in content_words(question) if w not in GENERIC_QUERY_STEMS}
    if not wanted:
        raise MetricError(f"metric '{metric}': the question has no content words to match")
    return wanted


# --------------------------------------------------------------------------- heuristic


@dataclass(frozen=True)
class _Heuristic(RagOptions, RowScored):
    """The offline method: each metric's ``row`` is the one definition that ``score`` and
    ``score_batch`` share (:class:`~assay.metrics.batch.RowScored`). ``settings`` name the
    cross-encoder (``--reranker``) that decides relevance instead, when one is set."""

    settings: ProviderSettings = field(
        default_factory=environment_settings, compare=False, repr=False
    )

    def claim_row(self, claims: list[str], contexts: Sequence[str]) -> Row:
        verdicts = [supported(claim, contexts, self.tau_value) for claim in claims]
        value, details = share_score(
            claims, verdicts, ("supported", "unsupported"), texts=self.texts
        )
        return value, {"method": self.method, **details}


@dataclass(frozen=True)
class Faithfulness(_Heuristic):
    name: str = "faithfulness"

    def row(self, sample: Sample, output: Output) -> Row:
        contexts = contexts_of(self.name, output)
        return self.claim_row(answer_claims(self.name, output.text, "the answer"), contexts)


@dataclass(frozen=True)
class ContextRecall(_Heuristic):
    name: str = "context-recall"

    def row(self, sample: Sample, output: Output) -> Row:
        contexts = contexts_of(self.name, output)
        reference = reference_text(self.name, sample)
        return self.claim_row(answer_claims(self.name, reference, "the reference answer"), contexts)


@dataclass(frozen=True)
class ContextPrecision(_Heuristic):
    name: str = "context-precision"

    def row(self, sample: Sample, output: Output) -> Row:
        flags = relevance_from_ids(self.name, sample, output)
        source = f"metadata.{RELEVANT_KEY}"
        reranker = self.settings.reranker if flags is None else None
        scores = None
        if reranker is not None:
            question = question_text(self.name, sample)
            scores = rerank_scores(reranker, question, list(contexts_of(self.name, output)))
            flags, source = [score >= RELEVANT_SCORE for score in scores], "reranker"
        elif flags is None:
            claims = answer_claims(self.name, reference_text(self.name, sample), "the reference")
            contexts = contexts_of(self.name, output)
            tau = self.tau_value
            flags = [any(supported(c, [text], tau) for c in claims) for text in contexts]
            source = "reference claims"
        scorer = _scorer(self.method, reranker, scores)
        return average_precision(flags), {**scorer, **precision_details(flags, source)}


@dataclass(frozen=True)
class AnswerRelevancy(_Heuristic):
    name: str = "answer-relevancy"

    def row(self, sample: Sample, output: Output) -> Row:
        question = question_text(self.name, sample)
        units = answer_statements(self.name, output)
        reranker = self.settings.reranker
        scores = None
        if reranker is not None:
            scores = rerank_scores(reranker, question, units)
            verdicts = [score >= RELEVANT_SCORE for score in scores]
        else:
            wanted = question_words(self.name, question)
            verdicts = [bool(wanted & content_words(unit)) for unit in units]
        value, details = share_score(
            units, verdicts, ("relevant", "irrelevant"), texts=self.texts, key="statements"
        )
        return value, {**_scorer(self.method, reranker, scores), **details}


def rerank_scores(model: str, query: str, passages: list[str]) -> list[float]:
    """The cross-encoder's relevance of each passage to the query (the local provider)."""
    # The local provider loads numpy and the embeddings client: for a run with --reranker only.
    from assay.providers.local import rerank_scores as local_rerank_scores

    try:
        return local_rerank_scores(model, query, passages)
    except UsageError as exc:
        raise MetricError(str(exc)) from None


def _scorer(method: str, reranker: str | None, scores: list[float] | None) -> dict[str, Any]:
    """The details naming what decided relevance: the heuristic, or the reranker's scores."""
    if reranker is None or scores is None:
        return {"method": method}
    return {"method": "reranker", "reranker": reranker, "relevance": [round(s, 6) for s in scores]}
