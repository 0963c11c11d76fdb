"""``assay cache stats`` and ``assay cache clear``: look into and empty the provider cache."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from assay.data.fileio import exists
from assay.store.location import StoreUrl

cache_app = typer.Typer(
    help="Inspect or empty the provider cache (judge verdicts, embeddings).", no_args_is_help=True
)


def register(app: typer.Typer) -> None:
    app.add_typer(cache_app, name="cache")


def _cache_place(cache_dir: str | None) -> Path | StoreUrl:
    """The cache ``--cache-dir`` names (a folder or a postgresql:// URL), else the configured."""
    from assay.providers.cache import cache_location
    from assay.providers.settings import build

    return cache_location(cache_dir if cache_dir is not None else build().cache_dir)


CacheDir = Annotated[
    str | None,
    typer.Option(
        "--cache-dir",
        envvar="ASSAY_CACHE_DIR",
        help="Provider cache: a directory (default: the project's .assay/) or postgresql:// URL.",
    ),
]


@cache_app.command("stats")
def stats(
    cache_dir: CacheDir = None,
    fmt: Annotated[str, typer.Option("--format", "-f", help="text | json")] = "text",
) -> None:
    """Entries and bytes per kind and model."""
    from assay.cli.console import fail
    from assay.providers.cache import ProviderCache

    if fmt not in ("text", "json"):
        fail(f"--format must be text or json; got {fmt!r}")
    path = _cache_place(cache_dir)
    rows = ProviderCache(path).stats() if not isinstance(path, Path) or exists(path) else []
    if fmt == "json":
        data = {
            "path": str(path),
            "entries": [{"kind": k, "model": m, "count": n, "bytes": b} for k, m, n, b in rows],
        }
        typer.echo(json.dumps(data, indent=2))
        return
    if not rows:
        typer.echo(f"{path}: empty")
        return
    typer.echo(f"{path}")
    typer.echo(f"{'kind':<10} {'model':<40} {'entries':>8} {'bytes':>12}")
    for kind, model, count, size in rows:
        typer.echo(f"{kind:<10} {model:<40} {count:>8} {size:>12}")


@cache_app.command("clear")
def clear(
    cache_dir: CacheDir = None,
    kind: Annotated[
        str | None, typer.Option("--kind", help="Only 'chat' or 'embedding' entries.")
    ] = None,
    model: Annotated[str | None, typer.Option("--model", help="Only this model's entries.")] = None,
) -> None:
    """Delete cached answers (all of them, or one kind and/or model)."""
    from assay.cli.console import fail
    from assay.providers.cache import ProviderCache

    if kind is not None and kind not in ("chat", "embedding"):
        fail(f"--kind must be chat or embedding; got {kind!r}")
    path = _cache_place(cache_dir)
    if isinstance(path, Path) and not exists(path):
        typer.echo(f"{path}: nothing to clear")
        return
    cache = ProviderCache(path)
    deleted = cache.clear(kind=kind, model=model)
    cache.close()
    typer.echo(f"{path}: removed {deleted} entr{'y' if deleted == 1 else 'ies'}")
