"""Model providers: OpenAI-compatible chat and embeddings, a local sentence-transformers
embedder, a deterministic hashing embedder for tests, the SQLite provider cache and pricing.

Importing this package is cheap; the ``openai`` SDK and torch load only when a client is built.
Configuration: :func:`build` in :mod:`assay.providers.settings` makes a :class:`ProviderSettings`,
which is handed to the metrics and judge clients that call a provider.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from assay.providers.settings import ProviderSettings, build, from_environment


def __getattr__(name: str) -> Any:
    """Settings load on first use (pydantic), so ``assay --help`` does not pay for them."""
    if name not in __all__:
        raise AttributeError(f"module 'assay.providers' has no attribute {name!r}")
    value = getattr(importlib.import_module("assay.providers.settings"), name)
    globals()[name] = value
    return value


__all__ = ["ProviderSettings", "build", "from_environment"]
