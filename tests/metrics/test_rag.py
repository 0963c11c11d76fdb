"""RAG metrics (heuristic method) on hand-worked vectors.

Average precision is checked against the textbook definition worked by hand, e.g. relevant at
ranks 1 and 3 of 3: (1/1 + 2/3) / 2 = 0.833333.
"""

from __future__ import annotations

from typing import Any

import pytest

from assay.data.dataset import Sample
from assay.data.outputs import Output, Retrieved
from assay.errors import MetricConfigError, MetricError
from assay.metrics.rag import (
    AnswerRelevancy,
    ContextPrecision,
    ContextRecall,
    Faithfulness,
    average_precision,
)
from assay.metrics.registry import resolve

CONTEXTS = (
    "Acme was founded in 2011 by Dana Smith in Lisbon.",
    "The company sells solar panels to farms in Portugal.",
)


def sample(expected: Any = "", **metadata: Any) -> Sample:
    return Sample(id="s", input={}, expected_output=expected, metadata=metadata)


@pytest.mark.parametrize(
    ("flags", "value"),
    [
        ([True, False, True], 0.833333),
        ([False, True], 0.5),
        ([True, True], 1.0),
        ([False, False, False], 0.0),
        ([False, False, True, True], 0.416667),  # (1/3 + 2/4) / 2
        ([], 0.0),
    ],
)
def test_average_precision(flags: list[bool], value: float) -> None:
    assert average_precision(flags) == value


def test_faithfulness_counts_unsupported_declarative_claims() -> None:
    answer = (
        "Acme was founded in 2011 by Dana Smith. The founders previously sold a company. "
        "It sells solar panels to farms."
    )
    score = Faithfulness().score(sample(), Output(answer, contexts=CONTEXTS))
    assert score.value == 0.666667  # 2 of 3 claims; the plain sentence is a claim now
    assert score.details["claims"][1] == {"index": 1, "verdict": "unsupported"}
    assert score.details["method"] == "heuristic"
    assert "text" not in score.details["claims"][0]


def test_faithfulness_texts_on_request_and_wrong_numbers() -> None:
    answer = "Acme was founded in 2015 by Dana Smith."
    score = Faithfulness(texts=True).score(sample(), Output(answer, contexts=CONTEXTS))
    assert score.value == 0.0  # the year is not in any context
    assert score.details["claims"][0]["text"] == answer


def test_faithfulness_errors() -> None:
    with pytest.raises(MetricError, match="needs the answer's contexts"):
        Faithfulness().score(sample(), Output("Acme sells panels to farms."))
    with pytest.raises(MetricError, match="has no claims"):
        Faithfulness().score(sample(), Output("I hope this helps!", contexts=CONTEXTS))
    with pytest.raises(MetricConfigError, match="method must be one of"):
        resolve({"name": "faithfulness", "method": "magic"})


def test_context_recall_over_reference_claims() -> None:
    reference = "Acme was founded in 2011 in Lisbon. Acme has 40 employees."
    retrieved = (Retrieved("a", CONTEXTS[0]), Retrieved("b", CONTEXTS[1]))
    score = ContextRecall().score(sample(reference), Output("x", retrieved=retrieved))
    assert score.value == 0.5
    assert [c["verdict"] for c in score.details["claims"]] == ["supported", "unsupported"]
    with pytest.raises(MetricError, match="needs a reference answer"):
        ContextRecall().score(sample(["a"]), Output("x", retrieved=retrieved))


def test_context_precision_from_metadata_relevance() -> None:
    ranking = tuple(Retrieved(i) for i in ("d1", "d7", "d3"))
    score = ContextPrecision().score(
        sample("Paris.", relevant={"d1": 2, "d3": 1}), Output("x", retrieved=ranking)
    )
    assert score.value == 0.833333
    assert score.details["relevant_ranks"] == [1, 3]


def test_context_precision_from_reference_claims() -> None:
    reference = "The company sells solar panels to farms in Portugal."
    contexts = ("Unrelated text about the weather today.", *CONTEXTS)
    score = ContextPrecision().score(sample(reference), Output("x", contexts=contexts))
    assert score.value == 0.333333  # only rank 3 supports the reference: 1/3
    assert score.details["relevance_from"] == "reference claims"


def test_the_rag_example_scores_as_its_readme_says() -> None:
    import json
    from pathlib import Path

    from assay.data.loading import load_dataset
    from assay.data.outputs import coerce_output

    root = Path(__file__).resolve().parents[2] / "examples" / "rag"
    dataset = load_dataset(root / "dataset.yml")
    saved = json.loads((root / "outputs.json").read_text())["outputs"]
    outputs = {entry["id"]: coerce_output(entry) for entry in saved}
    by_id = {s.id: s for s in dataset.samples}
    faith = {i: Faithfulness().score(by_id[i], outputs[i]).value for i in by_id}
    assert faith == {"return-window": 1.0, "shipping-cost": 0.5, "warranty": 0.5}
    precision = ContextPrecision().score(by_id["shipping-cost"], outputs["shipping-cost"])
    assert precision.value == 0.583333  # relevant at ranks 2 and 3: (1/2 + 2/3) / 2
    relevancy = {i: AnswerRelevancy().score(by_id[i], outputs[i]).value for i in by_id}
    assert relevancy == {"return-window": 1.0, "shipping-cost": 0.5, "warranty": 0.5}
