"""Where a store lives: a SQLite file (the default) or a PostgreSQL server named by URL.

``--store``, ``ASSAY_STORE`` and ``store =`` in ``assay.toml`` all take either. Anything that
looks like a URL (``scheme://``) is a URL: a scheme assay does not serve is refused, never taken
as a file name (``mysql://host/db`` used to become a folder named ``mysql:``). A URL is shown
everywhere with its password hidden.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Final
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from assay.errors import StoreError
from assay.store.project import find_config, project_dir, read_toml

POSTGRES_SCHEMES: Final = ("postgresql", "postgres")
_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*):/")
_SECRET_KEYS: Final = ("password", "sslpassword")


@dataclass(frozen=True)
class StoreUrl:
    """A PostgreSQL store's URL; ``str()`` gives it with the password hidden."""

    url: str

    def __str__(self) -> str:
        return redacted(self.url)


# A store's place: a SQLite file's path, or a server's URL.
StoreName = Path | StoreUrl


def redacted(url: str) -> str:
    """``url`` with its password (in the authority or the query) replaced by ``***``."""
    try:
        parts = urlsplit(url)
        netloc = parts.netloc
        if parts.password is not None:
            user, _, host = netloc.rpartition("@")
            netloc = f"{user.partition(':')[0]}:***@{host}"
        query = parts.query
        if query:
            pairs = parse_qsl(query, keep_blank_values=True)
            query = urlencode([(k, "***" if k in _SECRET_KEYS else v) for k, v in pairs])
        return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
    except ValueError:  # an unparsable URL: show its scheme only
        return url.partition(":")[0] + "://***"


def store_location(value: str | Path | None) -> StoreName:
    """The store ``value`` names (default: ``ASSAY_STORE``, ``assay.toml``'s ``store``, else
    ``runs.db`` in the project's ``.assay/``); a URL of another scheme is a StoreError."""
    if value is None or str(value).strip() == "":
        value = configured_store()
    text = str(value)
    match = _URL.match(text)
    if match is None:
        return Path(value)
    scheme = match.group(1).lower()
    if scheme in POSTGRES_SCHEMES and text[match.end() :].startswith("/"):
        return StoreUrl(text)
    raise StoreError(
        f"store {redacted(text)!r}: assay serves postgresql:// URLs and SQLite files, "
        f"not '{scheme}:' (to name a file of that name, begin it with ./)"
    )


def configured_store() -> str:
    """The store configured outside the command line: ``ASSAY_STORE``, else ``store =`` in
    the nearest ``assay.toml``, else ``runs.db`` in the project's ``.assay/``."""
    configured = os.environ.get("ASSAY_STORE", "").strip()
    if configured:
        return configured
    config = find_config()
    if config is not None:
        value = read_toml(config).get("store")
        if isinstance(value, str) and value.strip():
            return value.strip()
        if value is not None:
            raise StoreError(f"{config}: field 'store': expected a file path or URL (a string)")
    return str(project_dir() / "runs.db")


def is_url(text: str) -> bool:
    """Whether ``text`` is written as a URL (``scheme:/...``), of any scheme."""
    return _URL.match(text) is not None


def existing_store(value: str | Path | None) -> StoreName:
    """The store ``value`` names, which must exist already: a SQLite file that is not there
    is a StoreError (a server's store is checked when it is opened)."""
    name = store_location(value)
    if isinstance(name, Path) and not name.is_file():
        raise StoreError(f"no run store at {name}")
    return name
