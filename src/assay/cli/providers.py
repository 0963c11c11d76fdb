"""``assay cache stats`` and ``assay cache clear``: look into and empty the provider cache."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from assay.data.fileio import exists

cache_app = typer.Typer(
    help="Inspect or empty the provider cache (judge verdicts, embeddings).", no_args_is_help=True
)


def register(app: typer.Typer) -> None:
    app.add_typer(cache_app, name="cache")


def _cache_dir(cache_dir: Path | None) -> Path:
    from assay.providers.settings import build

    return cache_dir if cache_dir is not None else build().cache_dir


CacheDir = Annotated[
    Path | None,
    typer.Option(
        "--cache-dir",
        envvar="ASSAY_CACHE_DIR",
        help="Provider cache directory (default: the project's .assay/).",
    ),
]


@cache_app.command("stats")
def stats(
    cache_dir: CacheDir = None,
    fmt: Annotated[str, typer.Option("--format", "-f", help="text | json")] = "text",
) -> None:
    """Entries and bytes per kind and model."""
    from assay.cli.console import fail
    from assay.providers.cache import CACHE_FILE, ProviderCache

    if fmt not in ("text", "json"):
        fail(f"--format must be text or json; got {fmt!r}")
    path = _cache_dir(cache_dir) / CACHE_FILE
    rows = ProviderCache(path).stats() if exists(path) else []
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
    from assay.providers.cache import CACHE_FILE, ProviderCache

    if kind is not None and kind not in ("chat", "embedding"):
        fail(f"--kind must be chat or embedding; got {kind!r}")
    path = _cache_dir(cache_dir) / CACHE_FILE
    if not exists(path):
        typer.echo(f"{path}: nothing to clear")
        return
    cache = ProviderCache(path)
    deleted = cache.clear(kind=kind, model=model)
    cache.close()
    typer.echo(f"{path}: removed {deleted} entr{'y' if deleted == 1 else 'ies'}")
