"""RAG samples and outputs: relevance in metadata beside a reference answer; output contexts."""

from __future__ import annotations

from typing import Any

import pytest

from assay.data.dataset import Sample
from assay.data.outputs import Output, Retrieved, coerce_output
from assay.errors import MetricError, SystemUnderTestError
from assay.metrics.registry import resolve
from assay.metrics.retrieval import gains


def rag_sample(relevant: Any, expected: Any = "Returns are accepted for 30 days.") -> Sample:
    return Sample(id="r", input={}, expected_output=expected, metadata={"relevant": relevant})


def test_metadata_relevance_wins_over_the_reference_answer() -> None:
    assert gains(rag_sample(["a", "b"])) == {"a": 1.0, "b": 1.0}
    assert gains(rag_sample({"a": 2, "b": "1"})) == {"a": 2.0, "b": 1.0}
    old = Sample(id="o", input={}, expected_output=["a"])
    assert gains(old) == {"a": 1.0}  # the older form keeps working


def test_metadata_relevance_errors_name_the_field() -> None:
    with pytest.raises(MetricError, match=r"metadata\.relevant must name at least one"):
        gains(rag_sample({"a": 0}))
    with pytest.raises(MetricError, match=r"metadata\.relevant\[0\]"):
        gains(rag_sample([""]))


def test_recall_reads_metadata_relevance() -> None:
    output = Output("x", retrieved=(Retrieved("b"), Retrieved("z"), Retrieved("a")))
    metric = resolve({"name": "retrieval-recall-at-k", "k": 2})
    assert metric.score(rag_sample(["a", "b"]), output).value == 0.5  # b in top 2, a at 3


def test_outputs_carry_contexts() -> None:
    out = coerce_output({"output": "x", "contexts": ["one", {"text": "two"}]})
    assert out.contexts == ("one", "two")
    assert out.context_texts() == ("one", "two")
    assert coerce_output(out.to_json()) == out
    fallback = coerce_output({"output": "x", "retrieved": [{"id": "d", "text": "t"}, "e"]})
    assert fallback.context_texts() == ("t",)
    assert coerce_output({"output": "x"}).context_texts() is None
    with pytest.raises(SystemUnderTestError, match=r"'contexts\[1\]' must be a text"):
        coerce_output({"output": "x", "contexts": ["a", 3]})
    with pytest.raises(SystemUnderTestError, match="must be a list of texts"):
        coerce_output({"output": "x", "contexts": "a"})
