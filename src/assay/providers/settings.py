"""Provider configuration: which judge and embedding models to call, where, and how politely.

Settings merge four layers, highest first: command-line flags, the dataset's ``providers:``
block, environment variables, and built-in defaults. API keys come only from the environment
(``ASSAY_API_KEY`` or ``OPENAI_API_KEY``); a dataset that carries one is rejected, because
datasets are committed to repositories. The key is a :class:`~pydantic.SecretStr`, so printing
or serialising the settings never shows it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator

from assay.errors import UsageError
from assay.providers.key_scope import key_variable, scoped_key
from assay.providers.limiter import (
    BACKOFF_BASE_S,
    MAX_CONCURRENCY,
    MAX_WAIT_S,
    PROVIDER_MAX_RETRIES,
)
from assay.providers.pricing import ModelPrice, packaged_prices, read_price_file
from assay.providers.urls import is_http_url
from assay.store.location import StoreUrl, is_url, store_location
from assay.store.project import project_dir

PROVIDER_SETTINGS_SCHEMA: Final = "assay.providers.v1"
EmbeddingKind = Literal["openai", "local", "hashing"]
CacheMode = Literal["use", "off", "refresh"]

DEFAULT_JUDGE_MODEL = "gpt-4o-mini"
DEFAULT_EMBEDDING_MODELS: dict[str, str] = {
    "openai": "text-embedding-3-small",
    "local": "all-MiniLM-L6-v2",
    "hashing": "hashing-256",
}

# Environment variable -> settings field. ASSAY_* wins over the SDK's own OPENAI_* names.
ENVIRONMENT: tuple[tuple[str, str], ...] = (
    ("OPENAI_BASE_URL", "base_url"),
    ("ASSAY_BASE_URL", "base_url"),
    ("ASSAY_JUDGE_MODEL", "judge_model"),
    ("ASSAY_EMBEDDING_MODEL", "embedding_model"),
    ("ASSAY_EMBEDDING_PROVIDER", "embedding_provider"),
    ("ASSAY_PROVIDER_TIMEOUT", "timeout_s"),
    ("ASSAY_PROVIDER_MAX_RETRIES", "max_retries"),
    ("ASSAY_PROVIDER_CONCURRENCY", "max_concurrency"),
    ("ASSAY_CACHE_DIR", "cache_dir"),
    ("ASSAY_CACHE_MODE", "cache_mode"),
    ("ASSAY_PRICES_FILE", "prices_file"),
    ("ASSAY_RERANKER", "reranker"),
    ("ASSAY_MAX_PRICE_AGE_DAYS", "max_price_age_days"),
)
KEY_VARIABLES = ("ASSAY_API_KEY", "OPENAI_API_KEY")  # first non-empty wins

# CLI flag names that differ from field names (typer passes options by parameter name).
_CLI_ALIASES = {"provider_concurrency": "max_concurrency", "provider_timeout": "timeout_s"}


def default_cache_dir() -> Path | str:
    """Where provider answers are cached when nothing says: beside a PostgreSQL run store
    (``ASSAY_STORE`` or ``store =`` in assay.toml), so a team shares its answers; else the
    project's ``.assay/`` directory."""
    configured = store_location(None)
    return configured.url if isinstance(configured, StoreUrl) else project_dir()


class ProviderSettings(BaseModel):
    """Everything the provider layer needs; immutable once built."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    judge_model: str = Field(default=DEFAULT_JUDGE_MODEL, min_length=1)
    embedding_model: str | None = Field(
        default=None,
        description="default depends on embedding_provider (see DEFAULT_EMBEDDING_MODELS)",
    )
    embedding_provider: EmbeddingKind = "openai"
    base_url: str | None = Field(
        default=None, description="OpenAI-compatible endpoint, e.g. http://localhost:8000/v1"
    )
    api_key: SecretStr | None = Field(
        default=None, description="from ASSAY_API_KEY / OPENAI_API_KEY only"
    )
    timeout_s: float = Field(default=60.0, gt=0, le=3600)
    max_retries: int = Field(default=PROVIDER_MAX_RETRIES, ge=0, le=20)
    retry_base_s: float = Field(
        default=BACKOFF_BASE_S, ge=0, le=60, description="first backoff delay; doubles per attempt"
    )
    retry_max_wait_s: float = Field(
        default=MAX_WAIT_S, ge=0, le=3600, description="longest single wait, Retry-After included"
    )
    cache_dir: Path | str = Field(
        default_factory=default_cache_dir,
        description="a folder (default: the project's .assay/), or a postgresql:// URL",
    )
    cache_mode: CacheMode = "use"
    max_concurrency: int = Field(default=MAX_CONCURRENCY, ge=1, le=1024)
    embedding_batch_size: int = Field(default=128, ge=1, le=2048)
    prices: dict[str, ModelPrice] = Field(default_factory=packaged_prices)
    prices_file: Path | None = Field(
        default=None, description="your prices file; its entries override the packaged ones"
    )
    reranker: str | None = Field(
        default=None,
        description="a local cross-encoder scoring answer-relevancy's and context-precision's "
        "relevance instead of their heuristic (name, path or Hugging Face cache id)",
    )
    dry_run: bool = Field(
        default=False, description="count the requests the cache cannot answer; send none"
    )
    max_price_age_days: int = Field(
        default=365, ge=0, le=100_000, description="warn when a price used is older than this"
    )

    @field_validator("cache_dir", mode="before")
    @classmethod
    def _cache_place(cls, value: object) -> object:
        """A URL stays a string (a PostgreSQL cache); anything else is a folder's path."""
        if isinstance(value, str) and not is_url(value):
            return Path(value)
        return value

    @field_validator("base_url")
    @classmethod
    def _clean_url(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        value = value.strip().rstrip("/")
        if not value.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        if not is_http_url(value):  # a bad host or port was a row error at run time
            raise ValueError("must be an http:// or https:// URL with a host and a port in 0-65535")
        return value

    @field_validator("judge_model", "embedding_model", "reranker")
    @classmethod
    def _strip_model(cls, value: str | None) -> str | None:
        if value is None:
            return None
        return value.strip() or None

    @property
    def resolved_embedding_model(self) -> str:
        return self.embedding_model or DEFAULT_EMBEDDING_MODELS[self.embedding_provider]

    @property
    def embedding_label(self) -> str:
        """How a report names the embedding provider; the hashing one says it is for tests."""
        model = self.resolved_embedding_model
        if self.embedding_provider == "hashing":
            return f"hashing (test only: {model})"
        if self.embedding_provider == "local":
            return f"local ({model}, sentence-transformers)"
        return f"openai-compatible ({model})"


def _environment(env: Mapping[str, str]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for variable, field in ENVIRONMENT:
        raw = env.get(variable)
        if raw is not None and raw.strip():
            values[field] = raw.strip()
    for variable in KEY_VARIABLES:
        raw = env.get(variable)
        if raw and raw.strip():
            values["api_key"] = raw.strip()
            break
    if env.get("ASSAY_NO_CACHE", "").strip().lower() in ("1", "true", "yes"):
        values["cache_mode"] = "off"
    return values


def _dataset_block(block: Mapping[str, Any]) -> dict[str, Any]:
    if not isinstance(block, Mapping):
        raise UsageError("dataset field 'providers' must be a mapping")
    if any(key in block for key in ("api_key", "apiKey", "key")):
        raise UsageError(
            "dataset field 'providers.api_key' is not allowed: API keys come from the environment "
            "(ASSAY_API_KEY or OPENAI_API_KEY), never from a dataset"
        )
    values = dict(block)
    if "prices" in values and isinstance(values["prices"], Mapping):
        values["prices"] = dict(values["prices"])
    return values


def _cli_flags(flags: Mapping[str, Any]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for key, value in flags.items():
        if value is None or (value is False and key in ("no_cache", "refresh_cache")):
            continue
        if key == "no_cache":
            values["cache_mode"] = "off"
        elif key == "refresh_cache":
            values.setdefault("cache_mode", "refresh")
        else:
            values[_CLI_ALIASES.get(key, key)] = value
    if flags.get("no_cache") and flags.get("refresh_cache"):
        raise UsageError("--no-cache and --refresh-cache cannot be used together")
    return values


def build(
    *,
    cli: Mapping[str, Any] | None = None,
    dataset: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
) -> ProviderSettings:
    """Merge flags > dataset ``providers:`` > environment > defaults into one immutable value."""
    environ = os.environ if env is None else env
    flags = dict(cli or {})
    allow = bool(flags.pop("allow_dataset_endpoints", False))
    block = _dataset_block(dataset) if dataset is not None else {}
    key_env = key_variable(block.pop("api_key_env")) if "api_key_env" in block else None
    layers = [
        ("environment", _environment(environ)),
        ("dataset 'providers' block", block),
        ("command line", _cli_flags(flags)),
    ]
    merged: dict[str, Any] = {}
    origin: dict[str, str] = {}
    for source, values in layers:
        for key, value in values.items():
            if key == "prices" and isinstance(value, Mapping):
                # Price tables extend each other rather than replace.
                merged["prices"] = {**merged.get("prices", {}), **value}
            else:
                merged[key] = value
            origin[key] = source
    _scope_key(merged, layers, key_env=key_env, env=environ, allow=allow)
    given = merged.get("prices", {})
    if isinstance(given, Mapping):
        merged["prices"] = {**_base_prices(merged.get("prices_file")), **given}
    try:
        return ProviderSettings.model_validate(merged)
    except ValidationError as exc:
        error = exc.errors()[0]
        field = ".".join(str(part) for part in error["loc"]) or "providers"
        top = str(error["loc"][0]) if error["loc"] else ""
        source = origin.get(top, "settings")
        message = "unknown setting" if error["type"] == "extra_forbidden" else error["msg"]
        raise UsageError(f"provider setting '{field}' from the {source}: {message}") from None


def _scope_key(
    merged: dict[str, Any],
    layers: list[tuple[str, dict[str, Any]]],
    *,
    key_env: str | None,
    env: Mapping[str, str],
    allow: bool,
) -> None:
    """Send the environment's key only where the user pointed (:mod:`.key_scope`)."""
    environment, block, flags = (values for _, values in layers)
    dataset_url = block.get("base_url") if "base_url" not in flags else None
    trusted = flags.get("base_url") or environment.get("base_url")
    key = scoped_key(
        dataset_url=dataset_url if isinstance(dataset_url, str) and dataset_url.strip() else None,
        trusted_url=trusted if isinstance(trusted, str) else None,
        key_env=key_env,
        env_key=environment.get("api_key"),
        env=env,
        allow=allow,
    )
    if key is not None:
        merged["api_key"] = key


def _base_prices(prices_file: object) -> dict[str, Any]:
    """The packaged prices with the user's prices file (when one is named) over them."""
    table: dict[str, Any] = dict(packaged_prices())
    if isinstance(prices_file, (str, Path)) and str(prices_file).strip():
        table.update(read_price_file(Path(prices_file)))
    return table


def from_environment() -> ProviderSettings:
    """The settings of the environment and the defaults alone: what a provider-backed metric
    built without any (the Python API, a test) calls with. ``assay run`` and ``assay calibrate``
    build theirs with flags and the dataset's block and hand them to each metric."""
    return build()
