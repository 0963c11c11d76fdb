"""``--reranker NAME``: a local cross-encoder decides answer-relevancy's and context-precision's
relevance instead of their heuristic.

The end-to-end test builds a tiny BERT relevance cross-encoder in the test (its bias set so
that the test's pairs fall on both sides of 0.5), saves it into a temporary Hugging Face cache
and loads it by name offline; the metric's relevance scores are checked against the same
weights run directly through ``transformers`` (sigmoid of the logit), and its score against
the share and the average precision computed here. Skips without the ``local`` extra.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from assay.data.dataset import Sample
from assay.data.outputs import Output
from assay.errors import MetricError
from assay.metrics.registry import resolve
from assay.providers.settings import ProviderSettings

REVISION = "fedcba9876543210fedcba9876543210fedcba98"
QUESTION = "how long is the refund window"
STATEMENTS = ["You have thirty days", "The shop opens at nine", "Refunds need a receipt"]
CONTEXTS = ["refund window is thirty days", "opening hours", "receipt policy", "shipping"]
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "."]
VOCAB += sorted({w.lower() for text in [QUESTION, *STATEMENTS, *CONTEXTS] for w in text.split()})


@pytest.fixture
def reranker_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[ProviderSettings]:
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    yield ProviderSettings(reranker="acme/tiny-reranker", cache_dir=tmp_path / "cache")


def sample() -> Sample:
    return Sample(id="s", input={"question": QUESTION}, expected_output="thirty days")


def output() -> Output:
    return Output(text=". ".join(STATEMENTS) + ".", contexts=tuple(CONTEXTS))


def test_a_missing_reranker_is_an_errored_row(reranker_settings: ProviderSettings) -> None:
    metric = resolve("answer-relevancy", reranker_settings)
    with pytest.raises(MetricError, match="acme/tiny-reranker"):
        metric.score(sample(), output())  # type: ignore[union-attr]


def build(snapshot: Path) -> None:
    """A 1-layer BERT scoring (query, passage) pairs, its bias centring the test's logits."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    torch.manual_seed(3)
    snapshot.mkdir(parents=True)
    (snapshot / "vocab.txt").write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    tokenizer = BertTokenizerFast.from_pretrained(str(snapshot))  # reads vocab.txt
    config = BertConfig(
        vocab_size=len(VOCAB),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=64,
        num_labels=1,
        initializer_range=0.05,  # large random weights: pairs get clearly different scores
    )
    model = BertForSequenceClassification(config).eval()
    pairs = [*(f"{text}." for text in STATEMENTS), *CONTEXTS]  # as the metric sends them
    with torch.no_grad():  # spread the head's logits to about 4, centred between two pairs
        model.classifier.bias.zero_()
        logits = logits_of(model, tokenizer, pairs)
        model.classifier.weight *= 4.0 / float(np.ptp(logits))
        ranked = np.sort(logits_of(model, tokenizer, pairs))
        model.classifier.bias -= float(ranked[2] + ranked[3]) / 2
    model.save_pretrained(str(snapshot))
    tokenizer.save_pretrained(str(snapshot))


def logits_of(model: object, tokenizer: object, passages: list[str]) -> np.ndarray:
    import torch

    out = []
    with torch.no_grad():
        for passage in passages:
            encoded = tokenizer(QUESTION, passage, return_tensors="pt")  # type: ignore[operator]
            out.append(float(model(**encoded).logits[0, 0]))  # type: ignore[operator]
    return np.array(out)


def test_relevance_comes_from_the_cross_encoder(
    reranker_settings: ProviderSettings, tmp_path: Path
) -> None:
    pytest.importorskip("sentence_transformers")
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    folder = tmp_path / "hf" / "hub" / "models--acme--tiny-reranker"
    build(folder / "snapshots" / REVISION)
    (folder / "refs").mkdir()
    (folder / "refs" / "main").write_text(REVISION, encoding="utf-8")
    model = AutoModelForSequenceClassification.from_pretrained(str(folder / "snapshots" / REVISION))
    tokenizer = AutoTokenizer.from_pretrained(str(folder / "snapshots" / REVISION))

    metric = resolve({"name": "answer-relevancy", "texts": True}, reranker_settings)
    relevancy = metric.score(sample(), output())  # type: ignore[union-attr]
    units = [row["text"] for row in relevancy.details["statements"]]
    assert [u.rstrip(".") for u in units] == STATEMENTS
    expected = 1 / (1 + np.exp(-logits_of(model.eval(), tokenizer, units)))
    assert relevancy.details["method"] == "reranker"
    np.testing.assert_allclose(relevancy.details["relevance"], expected, atol=1e-4)
    assert relevancy.value == pytest.approx(np.mean(expected >= 0.5))
    assert np.all(np.abs(expected - 0.5) > 1e-3)  # no score sits on the threshold

    precision = resolve("context-precision", reranker_settings).score(sample(), output())  # type: ignore[union-attr]
    flags = 1 / (1 + np.exp(-logits_of(model, tokenizer, CONTEXTS))) >= 0.5
    assert 0 < flags.sum() < len(flags)  # the bias put the contexts on both sides of 0.5
    hits = np.cumsum(flags)
    by_hand = float(np.mean([hits[k] / (k + 1) for k in range(len(flags)) if flags[k]]))
    assert precision.details["relevance_from"] == "reranker"
    assert precision.value == pytest.approx(by_hand, abs=1e-6)
