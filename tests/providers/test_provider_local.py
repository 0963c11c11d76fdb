"""The offline local provider (sentence-transformers + the packaged all-MiniLM-L6-v2).

Skipped cleanly when the ``local`` extra is not installed. Vectors are checked against the
same weights run directly through ``transformers`` (an independent code path).
"""

from __future__ import annotations

import numpy as np
import pytest

from assay.errors import ProviderError, UsageError
from assay.providers import local

pytestmark = pytest.mark.skipif(
    not local.available(), reason='needs the local extra: pip install "assay[local]"'
)

TEXTS = ["The cat sat on the mat.", "Naïve café owners close at 6 p.m.", "hello"]


@pytest.fixture(scope="module")
def reference():
    """Last hidden states and mean-pooled, normalised sentence vectors, from transformers."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    path = local.model_path("all-MiniLM-L6-v2")
    tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    model = AutoModel.from_pretrained(str(path), local_files_only=True).eval()
    out = []
    with torch.no_grad():
        for text in TEXTS:
            encoded = tokenizer(text, return_tensors="pt")
            hidden = model(**encoded).last_hidden_state[0].numpy()
            sentence = hidden.mean(axis=0)
            out.append(
                (
                    tokenizer.convert_ids_to_tokens(encoded["input_ids"][0]),
                    hidden,
                    sentence / np.linalg.norm(sentence),
                )
            )
    return out


def test_the_model_ships_in_a_package() -> None:
    path = local.model_path("all-MiniLM-L6-v2")
    assert (path / "config.json").is_file() and (path / "tokenizer.json").is_file()
    assert local.model_path("sentence-transformers/all-MiniLM-L6-v2") == path


def test_unknown_models_never_download(tmp_path) -> None:
    with pytest.raises(UsageError, match="local models download only when allowed"):
        local.model_path("bert-base-uncased", {"HF_HOME": str(tmp_path)})


async def test_sentence_vectors_match_transformers(reference) -> None:
    embedder = local.LocalEmbedder()
    result = await embedder.embed(TEXTS)
    assert result.usage == ()
    for vector, (_, _, expected) in zip(result.vectors, reference):
        assert vector.shape == (384,)
        np.testing.assert_allclose(vector, expected, atol=2e-5)


async def test_contextual_token_vectors_match_transformers(reference) -> None:
    embedder = local.LocalEmbedder()
    results = await embedder.embed_tokens(TEXTS)
    for result, (tokens, hidden, _) in zip(results, reference):
        assert list(result.tokens) == tokens[1:-1]  # [CLS] and [SEP] removed
        np.testing.assert_allclose(result.vectors, hidden[1:-1], atol=2e-5)
    assert embedder.tokenize(TEXTS[0]) == ["the", "cat", "sat", "on", "the", "mat", "."]


async def test_over_long_texts_fail_instead_of_being_truncated() -> None:
    embedder = local.LocalEmbedder()
    with pytest.raises(ProviderError, match=f"at most {embedder.max_tokens}"):
        await embedder.embed_tokens(["word " * 400])
