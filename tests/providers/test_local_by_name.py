"""Any local embedding model by name, resolved as sentence-transformers resolves it and offline:
a path, or a repository id found in the Hugging Face cache (HF_HOME / HF_HUB_CACHE honoured,
HF_HUB_OFFLINE respected), a download only when the user allows it.

The cache layout tests need nothing installed. The end-to-end test builds a tiny BERT
sentence-transformers model in the test, saves it into a temporary Hugging Face cache, and
loads it by name with the network forbidden; it skips without the ``local`` extra. Its vectors
are checked against the same weights run directly through ``transformers`` (mean pooling).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from assay.errors import UsageError
from assay.providers import local
from assay.providers.hf_cache import cached_model, hub_cache

REVISION = "0123456789abcdef0123456789abcdef01234567"


def fake_snapshot(cache: Path, repo_id: str, revision: str = REVISION, main: bool = True) -> Path:
    """The folders huggingface_hub leaves for a downloaded repository (config.json only)."""
    folder = cache / ("models--" + repo_id.replace("/", "--"))
    snapshot = folder / "snapshots" / revision
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text("{}", encoding="utf-8")
    if main:
        (folder / "refs").mkdir()
        (folder / "refs" / "main").write_text(revision, encoding="utf-8")
    return snapshot


def test_the_hub_cache_follows_huggingface_hub_s_variables(tmp_path: Path) -> None:
    assert hub_cache({"HF_HUB_CACHE": str(tmp_path / "a"), "HF_HOME": "x"}) == tmp_path / "a"
    assert hub_cache({"HF_HOME": str(tmp_path / "h")}) == tmp_path / "h" / "hub"
    xdg = {"XDG_CACHE_HOME": str(tmp_path / "x")}
    assert hub_cache(xdg) == tmp_path / "x" / "huggingface" / "hub"
    assert hub_cache({}) == Path.home() / ".cache" / "huggingface" / "hub"


def test_a_cached_model_is_found_by_its_repository_id(tmp_path: Path) -> None:
    env = {"HF_HOME": str(tmp_path)}
    snapshot = fake_snapshot(tmp_path / "hub", "acme/my-embedder")
    assert cached_model("acme/my-embedder", env) == snapshot
    assert local.model_path("acme/my-embedder", env) == snapshot
    # a bare name is looked up under sentence-transformers/ first, as sentence-transformers does
    bare = fake_snapshot(tmp_path / "hub", "sentence-transformers/all-mpnet-base-v2")
    assert local.model_path("all-mpnet-base-v2", env) == bare


def test_the_newest_complete_snapshot_serves_when_refs_main_is_missing(tmp_path: Path) -> None:
    env = {"HF_HUB_CACHE": str(tmp_path)}
    older = fake_snapshot(tmp_path, "acme/e", revision="a" * 40, main=False)
    os.utime(older, (1_000_000, 1_000_000))
    newer = tmp_path / "models--acme--e" / "snapshots" / ("b" * 40)
    newer.mkdir()
    (newer / "modules.json").write_text("[]", encoding="utf-8")
    partial = tmp_path / "models--acme--e" / "snapshots" / ("c" * 40)
    partial.mkdir()  # a download that never finished: no config, not a model
    assert cached_model("acme/e", env) == newer


@pytest.mark.parametrize("name", ["../../etc", "acme/../x", "a/b/c", "", " "])
def test_names_that_are_not_repository_ids_are_not_looked_up(tmp_path: Path, name: str) -> None:
    assert cached_model(name, {"HF_HOME": str(tmp_path)}) is None


def test_an_uncached_model_is_refused_unless_a_download_is_allowed(tmp_path: Path) -> None:
    env = {"HF_HOME": str(tmp_path)}
    with pytest.raises(UsageError) as info:
        local.model_path("acme/absent", env)
    message = str(info.value)
    assert str(tmp_path / "hub") in message and "ASSAY_LOCAL_DOWNLOAD=1" in message
    allowed = {**env, "ASSAY_LOCAL_DOWNLOAD": "1"}
    assert local.model_path("acme/absent", allowed) == "acme/absent"  # sentence-transformers'
    with pytest.raises(UsageError, match="HF_HUB_OFFLINE is set"):
        local.model_path("acme/absent", {**allowed, "HF_HUB_OFFLINE": "1"})


def test_a_directory_path_still_wins(tmp_path: Path) -> None:
    assert local.model_path(str(tmp_path), {}) == tmp_path


# --------------------------------------------------------------------------- end to end

TEXTS = ["the cat sat on the mat", "a dog ran", "hello world"]
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "on", "mat", "a"]
VOCAB += ["dog", "ran", "hello", "world"]


def build_tiny_model(directory: Path) -> None:
    """A 2-layer, 16-wide BERT with a 15-word vocabulary, as a sentence-transformers model."""
    import torch
    from sentence_transformers import SentenceTransformer
    from transformers import BertConfig, BertModel, BertTokenizerFast

    try:  # sentence-transformers 5 moved the modules; 3 and 4 have them here only
        from sentence_transformers.sentence_transformer.modules import Pooling, Transformer
    except ImportError:
        from sentence_transformers.models import Pooling, Transformer

    torch.manual_seed(7)
    raw = directory.parent / "raw-bert"
    raw.mkdir()
    (raw / "vocab.txt").write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    BertTokenizerFast.from_pretrained(str(raw)).save_pretrained(str(raw))  # reads vocab.txt
    config = BertConfig(
        vocab_size=len(VOCAB),
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=64,
    )
    BertModel(config).save_pretrained(str(raw))
    word = Transformer(str(raw), max_seq_length=32)
    renamed = hasattr(type(word), "get_embedding_dimension")  # sentence-transformers 6
    width = word.get_embedding_dimension() if renamed else word.get_word_embedding_dimension()
    pooling = Pooling(width, pooling_mode="mean")
    SentenceTransformer(modules=[word, pooling], device="cpu").save(str(directory))


async def test_a_tiny_model_loads_by_name_from_the_cache_offline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("torch")
    import torch
    from transformers import AutoModel, AutoTokenizer

    snapshot = tmp_path / "hf" / "hub" / "models--acme--tiny-embedder" / "snapshots" / REVISION
    snapshot.parent.mkdir(parents=True)
    build_tiny_model(snapshot)
    (snapshot.parents[1] / "refs").mkdir()
    (snapshot.parents[1] / "refs" / "main").write_text(REVISION, encoding="utf-8")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.delenv("ASSAY_LOCAL_DOWNLOAD", raising=False)

    embedder = local.LocalEmbedder("acme/tiny-embedder")
    result = await embedder.embed(TEXTS)

    tokenizer = AutoTokenizer.from_pretrained(str(snapshot), local_files_only=True)
    model = AutoModel.from_pretrained(str(snapshot), local_files_only=True).eval()
    for text, vector in zip(TEXTS, result.vectors):
        with torch.no_grad():
            hidden = model(**tokenizer(text, return_tensors="pt")).last_hidden_state[0]
        assert vector.shape == (16,)
        np.testing.assert_allclose(vector, hidden.mean(dim=0).numpy(), atol=1e-5)
