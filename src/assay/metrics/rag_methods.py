"""The four RAG metrics as the registry builds them: the class serving the ``method`` option.

Imports run one way: this module imports the heuristic classes (:mod:`assay.metrics.rag`) and
the judge classes (:mod:`assay.metrics.rag_judge`, which imports :mod:`assay.metrics.rag`).
The judge classes are imported in the branch that builds one: the judge stack (judging, the
providers' HTTP client and cache) loads only for ``method: judge``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from assay.metrics.rag import (
    AnswerRelevancy,
    ContextPrecision,
    ContextRecall,
    Faithfulness,
    RagOptions,
)
from assay.providers.settings import ProviderSettings

if TYPE_CHECKING:
    from assay.metrics.rag_judge import Judged


def _judged(
    cls: type[Judged], settings: ProviderSettings | None, options: dict[str, Any]
) -> Judged:
    """``cls`` built with ``options`` and the provider ``settings`` (None: the environment's)."""
    return cls(**options) if settings is None else cls(settings=settings, **options)


def _judge(options: dict[str, Any]) -> bool:
    return options.get("method") == "judge"


def faithfulness(settings: ProviderSettings | None = None, **options: Any) -> RagOptions:
    if not _judge(options):
        return (
            Faithfulness(**options)
            if settings is None
            else Faithfulness(settings=settings, **options)
        )
    from assay.metrics.rag_judge import JudgedFaithfulness  # the judge stack: see above

    return _judged(JudgedFaithfulness, settings, options)


def context_recall(settings: ProviderSettings | None = None, **options: Any) -> RagOptions:
    if not _judge(options):
        return (
            ContextRecall(**options)
            if settings is None
            else ContextRecall(settings=settings, **options)
        )
    from assay.metrics.rag_judge import JudgedContextRecall  # the judge stack: see above

    return _judged(JudgedContextRecall, settings, options)


def context_precision(settings: ProviderSettings | None = None, **options: Any) -> RagOptions:
    if not _judge(options):
        return (
            ContextPrecision(**options)
            if settings is None
            else ContextPrecision(settings=settings, **options)
        )
    from assay.metrics.rag_judge import JudgedContextPrecision  # the judge stack: see above

    return _judged(JudgedContextPrecision, settings, options)


def answer_relevancy(settings: ProviderSettings | None = None, **options: Any) -> RagOptions:
    if not _judge(options):
        return (
            AnswerRelevancy(**options)
            if settings is None
            else AnswerRelevancy(settings=settings, **options)
        )
    from assay.metrics.rag_judge import JudgedAnswerRelevancy  # the judge stack: see above

    return _judged(JudgedAnswerRelevancy, settings, options)
