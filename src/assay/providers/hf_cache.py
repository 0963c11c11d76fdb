"""Find a model by name in the user's Hugging Face cache, as sentence-transformers would, with no
network: ``acme/my-embedder`` -> ``<hub cache>/models--acme--my-embedder/snapshots/<rev>``.

The hub cache is ``HF_HUB_CACHE``, else ``$HF_HOME/hub``, else
``$XDG_CACHE_HOME/huggingface/hub``, else ``~/.cache/huggingface/hub`` (huggingface_hub's
order). The snapshot is the one ``refs/main`` names, else the most recently written one. A bare
name (``all-mpnet-base-v2``) is looked up as ``sentence-transformers/<name>`` first, as
sentence-transformers does. Only a directory that holds a model (``config.json`` or
``modules.json``) counts: a half-finished download is not a model.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

_TRUE = ("1", "true", "yes", "on")
_REPO_ID = re.compile(r"[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?")


def hub_cache(env: Mapping[str, str]) -> Path:
    """The Hugging Face hub cache directory the environment names (it may not exist)."""
    if env.get("HF_HUB_CACHE", "").strip():
        return Path(env["HF_HUB_CACHE"]).expanduser()
    if env.get("HF_HOME", "").strip():
        return Path(env["HF_HOME"]).expanduser() / "hub"
    if env.get("XDG_CACHE_HOME", "").strip():
        return Path(env["XDG_CACHE_HOME"]).expanduser() / "huggingface" / "hub"
    return Path("~/.cache/huggingface/hub").expanduser()


def offline(env: Mapping[str, str]) -> bool:
    """Whether ``HF_HUB_OFFLINE`` forbids the network."""
    return env.get("HF_HUB_OFFLINE", "").strip().lower() in _TRUE


def candidates(name: str) -> list[str]:
    """The repository ids a model name may mean (empty when it cannot be a repository id)."""
    name = name.strip()
    if not _REPO_ID.fullmatch(name) or ".." in name:
        return []
    return [name] if "/" in name else [f"sentence-transformers/{name}", name]


def cached_model(name: str, env: Mapping[str, str]) -> Path | None:
    """The cached snapshot directory of the model ``name``, or None when it is not cached."""
    cache = hub_cache(env)
    for repo_id in candidates(name):
        snapshot = _snapshot(cache / ("models--" + repo_id.replace("/", "--")))
        if snapshot is not None:
            return snapshot
    return None


def _snapshot(folder: Path) -> Path | None:
    """The snapshot ``refs/main`` points at, else the newest complete one."""
    snapshots = folder / "snapshots"
    try:
        revision = (folder / "refs" / "main").read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        revision = ""
    if revision and _is_model(snapshots / revision):
        return snapshots / revision
    try:
        found = [p for p in snapshots.iterdir() if _is_model(p)]
    except OSError:
        return None
    return max(found, key=lambda p: p.stat().st_mtime) if found else None


def _is_model(path: Path) -> bool:
    """A directory that holds a model's description (not a partial download)."""
    return path.is_dir() and any((path / f).is_file() for f in ("modules.json", "config.json"))
