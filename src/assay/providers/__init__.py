"""Model providers: OpenAI-compatible chat and embeddings, a local sentence-transformers
embedder, a deterministic hashing embedder for tests, the SQLite provider cache and pricing.

Importing this package is cheap; the ``openai`` SDK and torch load only when a client is built.
Configuration: :func:`configure` / :func:`current` in :mod:`assay.providers.settings`.
"""

from assay.providers.settings import ProviderSettings, configure, current, use

__all__ = ["ProviderSettings", "configure", "current", "use"]
