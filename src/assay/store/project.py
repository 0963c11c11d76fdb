"""The project directory ``.assay/``, where the run store, provider cache and baselines live,
and the project's ``assay.toml``.

It is found the way git finds ``.git``: walking up from the working directory, the first folder
that holds a ``.assay/`` directory, or failing that a ``.git`` or ``pyproject.toml`` (the
project's root), decides. So ``assay runs`` lists the same runs from any sub-folder of a
project. ``ASSAY_HOME`` names the directory outright; ``ASSAY_STORE``, ``ASSAY_CACHE_DIR`` and
``ASSAY_BASELINE_DIR`` still override one location each.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Final

from assay.errors import UsageError

HOME_ENV: Final = "ASSAY_HOME"
DIR_NAME: Final = ".assay"
ROOT_MARKERS: Final = (".git", "pyproject.toml")


def project_root(start: Path | None = None) -> Path | None:
    """The nearest folder at or above ``start`` (default: the working directory) that holds
    ``.assay/``, ``.git`` or ``pyproject.toml``; None when no folder up to ``/`` does."""
    here = Path(start) if start is not None else Path.cwd()
    here = here.absolute()
    for folder in (here, *here.parents):
        if (folder / DIR_NAME).is_dir() or any((folder / m).exists() for m in ROOT_MARKERS):
            return folder
    return None


def project_dir(start: Path | None = None) -> Path:
    """``$ASSAY_HOME``, else ``<project root>/.assay``, else ``.assay`` in the working directory.

    The path is relative (``.assay``) when the project root is the working directory itself,
    so messages read as before; a root further up is given as an absolute path.
    """
    configured = os.environ.get(HOME_ENV, "").strip()
    if configured:
        return Path(configured).expanduser()
    root = project_root(start)
    if root is None or (start is None and root == Path.cwd().absolute()):
        return (Path(start) if start is not None else Path()) / DIR_NAME
    return root / DIR_NAME


def find_config(start: Path | None = None) -> Path | None:
    """The nearest ``assay.toml`` in ``start`` (default: the working directory) or a parent."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        candidate = folder / "assay.toml"
        if candidate.is_file():
            return candidate
    return None


def read_toml(path: Path) -> dict[str, Any]:
    """An ``assay.toml`` file as a mapping; a missing or malformed file is a UsageError."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except FileNotFoundError:
        raise UsageError(f"{path}: config file not found") from None
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path}: not valid TOML: {exc}") from None
    except RecursionError:  # tomllib recurses per nested array or inline table (pure Python)
        raise UsageError(f"{path}: not valid TOML: nested too deeply to read") from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path}: not valid UTF-8 (byte {exc.start})") from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc.strerror}") from None
