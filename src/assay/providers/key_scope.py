"""Where the API key may go: only to the endpoint the user named, never one a dataset names.

A key from the environment (``ASSAY_API_KEY`` / ``OPENAI_API_KEY``) is sent only to the base URL
from the environment or the command line (or the default, api.openai.com). A dataset is a file a
pull request can edit: when its ``providers.base_url`` names another endpoint, the run needs one
of two things, else it stops (exit 2) before any call:

- ``providers.api_key_env: ASSAY_API_KEY_<NAME>`` in the dataset: the key in that variable is
  sent there instead (the variable must be set; only ``ASSAY_API_KEY_*`` names are taken, so a
  dataset cannot pick any other secret of the environment, such as a CI token);
- ``--allow-dataset-endpoints``: the user vouches for the dataset's endpoint.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final
from urllib.parse import urlsplit

from assay.errors import UsageError

DEFAULT_BASE_URL: Final = "https://api.openai.com/v1"
KEY_PREFIX: Final = "ASSAY_API_KEY_"
_VARIABLE = re.compile(r"ASSAY_API_KEY_[A-Z0-9_]+")


def origin_of(url: str) -> tuple[str, str, int]:
    """(scheme, host, port) of ``url``: what decides where a request (and its key) goes."""
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:
        port = None
    return scheme, (parts.hostname or "").lower(), port or (443 if scheme == "https" else 80)


def _shown(url: str) -> str:
    scheme, host, port = origin_of(url)
    return f"{scheme}://{host}:{port}"


def key_variable(name: object) -> str:
    """The ``api_key_env`` a dataset names, checked: an ``ASSAY_API_KEY_*`` variable name."""
    if not isinstance(name, str) or _VARIABLE.fullmatch(name) is None:
        raise UsageError(
            "dataset field 'providers.api_key_env' must name an environment variable "
            f"'{KEY_PREFIX}<NAME>' (upper-case letters, digits, _); got {name!r}"
        )
    return name


def scoped_key(
    *,
    dataset_url: str | None,
    trusted_url: str | None,
    key_env: str | None,
    env_key: str | None,
    env: Mapping[str, str],
    allow: bool,
) -> str | None:
    """The key to send when the dataset's ``base_url`` is in force, or a UsageError.

    ``dataset_url`` is the dataset's base URL when it decides the endpoint (no flag overrode
    it), ``trusted_url`` the one from the environment or the command line, ``key_env`` the
    dataset's ``api_key_env``, ``env_key`` the key from the environment.
    """
    if key_env is not None:
        value = env.get(key_env, "").strip()
        if not value:
            raise UsageError(
                f"dataset field 'providers.api_key_env' names {key_env}, which is not set"
            )
        return value
    if dataset_url is None or env_key is None or allow:
        return env_key
    if origin_of(dataset_url) == origin_of(trusted_url or DEFAULT_BASE_URL):
        return env_key
    raise UsageError(
        f"the dataset's providers.base_url names {_shown(dataset_url)}: the API key from the "
        "environment goes only to the base URL from the environment or --base-url. Name the "
        f"key for that host in the dataset (providers.api_key_env: {KEY_PREFIX}<NAME>) or pass "
        "--allow-dataset-endpoints"
    )
