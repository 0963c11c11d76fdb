"""Every built-in metric by its alias: the module and class that build it, and one line saying
what it scores.

This table is the registry's only source of built-ins. It names modules instead of importing them,
so resolving one alias imports one family (an exact-match run never loads numpy or the judge
stack), and the family modules never import the registry back. Adding a metric: write the class
in its family module and add one row here (docs/architecture.md, "Adding a metric").
"""

from __future__ import annotations

from types import MappingProxyType
from typing import NamedTuple


class Builtin(NamedTuple):
    """Where a built-in metric lives (``module:attribute``) and what it scores."""

    module: str
    attribute: str
    description: str

    @property
    def path(self) -> str:
        return f"{self.module}:{self.attribute}"


def _family(module: str, *rows: tuple[str, str, str]) -> dict[str, Builtin]:
    return {alias: Builtin(f"assay.metrics.{module}", cls, text) for alias, cls, text in rows}


BUILTINS = MappingProxyType(
    {
        **_family(
            "lexical",
            (
                "exact-match",
                "ExactMatch",
                "1.0 when the output equals expected_output byte for byte, else 0.0",
            ),
            (
                "contains",
                "Contains",
                "1.0 when expected_output occurs inside the output (case-sensitive by default)",
            ),
            (
                "regex",
                "Regex",
                "1.0 when the delimited pattern in expected_output matches the output (search)",
            ),
            (
                "rouge-l",
                "RougeL",
                "F-measure of the longest common token subsequence (Lin, 2004), beta=1 by default",
            ),
        ),
        **_family(
            "ordinal",
            (
                "ordinal-distance",
                "OrdinalDistance",
                "1.0 exact, 0.5 one step off, 0.0 further, on an ordered label scale",
            ),
        ),
        **_family(
            "citation",
            (
                "citation-groundedness",
                "CitationGroundedness",
                "share of required citation markers (or marker+quote spans) in the output",
            ),
        ),
        **_family(
            "retrieval",
            ("retrieval-hit-at-k", "HitAtK", "1.0 when any relevant id is in the top k"),
            ("retrieval-recall-at-k", "RecallAtK", "share of relevant ids found in the top k"),
            (
                "retrieval-mrr",
                "MRR",
                "reciprocal rank of the first relevant id over the whole list",
            ),
            (
                "retrieval-ndcg-at-k",
                "NDCGAtK",
                "normalised discounted cumulative gain over the top k (linear or 2^g-1 gains)",
            ),
            (
                "answer-containment-at-k",
                "AnswerContainmentAtK",
                "1.0 when the expected answer span occurs in a top-k retrieved text",
            ),
        ),
        **_family(
            "trajectory",
            (
                "tool-called",
                "ToolCalled",
                "share of metadata.trajectory.tools the agent called at least once",
            ),
            (
                "tool-not-called",
                "ToolNotCalled",
                "share of metadata.trajectory.forbidden_tools the agent avoided",
            ),
            (
                "tool-called-with",
                "ToolCalledWith",
                "share of metadata.trajectory.tool_arguments met by some call",
            ),
            (
                "tool-call-order",
                "ToolCallOrder",
                "1.0 when metadata.trajectory.order holds (mode: subsequence, exact or any-order)",
            ),
            (
                "steps-below",
                "StepsBelow",
                "1.0 when the agent took at most metadata.trajectory.max_steps steps",
            ),
            (
                "no-pending-approvals",
                "NoPendingApprovals",
                "1.0 when the agent finished with no approval still pending",
            ),
            (
                "approval-gated",
                "ApprovalGated",
                "share of metadata.trajectory.requires_approval actions present in "
                "trajectory.approvals",
            ),
        ),
        **_family(
            "safety",
            (
                "invisible-characters",
                "InvisibleCharacters",
                "1.0 when the answer has no Unicode tag, zero-width, bidi-control or hidden "
                "selector characters",
            ),
            (
                "canary-leak",
                "CanaryLeak",
                "1.0 unless a canary planted in metadata.canary appears in the answer",
            ),
            (
                "pii-leak",
                "PiiLeak",
                "1.0 when the answer has no email, phone, card, IBAN or SSN pattern",
            ),
            (
                "forbidden-tool-call",
                "ForbiddenToolCall",
                "share of metadata.trajectory.forbidden_tools the agent did not call (needs a "
                "trajectory)",
            ),
        ),
        **_family(
            "rag_methods",
            (
                "faithfulness",
                "faithfulness",
                "answer claims supported by the contexts / claims (heuristic or judge)",
            ),
            (
                "context-recall",
                "context_recall",
                "reference claims supported by the contexts / claims (heuristic or judge)",
            ),
            (
                "context-precision",
                "context_precision",
                "average precision of the relevant contexts (heuristic or judge)",
            ),
            (
                "answer-relevancy",
                "answer_relevancy",
                "answer statements addressing the question / statements (heuristic or judge)",
            ),
        ),
        **_family(
            "goal",
            (
                "goal-accuracy",
                "GoalAccuracy",
                "an LLM judges if the agent achieved the goal: 1 yes, 0.5 partly, 0 no",
            ),
        ),
        **_family(
            "semantic",
            (
                "cosine-embedding",
                "CosineEmbedding",
                "cosine similarity of the embeddings of expected_output and the output; negatives "
                "count as 0",
            ),
            (
                "bertscore-like",
                "BertScoreLike",
                "token-level greedy embedding match (precision, recall, F1); contextual BERTScore "
                "with the local model",
            ),
        ),
        **_family(
            "judge",
            (
                "llm-as-judge",
                "LLMAsJudge",
                "an LLM grades the output against expected_output with a rubric (temperature 0, "
                "seed 42)",
            ),
            (
                "refusal-quality",
                "RefusalQuality",
                "an LLM judges refusal behaviour against metadata.refusal_expected",
            ),
        ),
        **_family(
            "rubric",
            (
                "rubric",
                "RubricJudge",
                "an LLM judge gives a verdict per weighted rubric criterion; weighted rubric score",
            ),
        ),
    }
)
