"""One OpenAI-compatible endpoint: its limiter and one JSON client for chat and embeddings.

Chat and embedding requests are plain JSON POSTs: :class:`JSONClient` sends them over
:class:`~assay.providers.pool.ConnectionPool` (httpx, keep-alive connections, as many kept as
the endpoint's concurrency). It sends what the ``openai`` SDK sends for a request (bearer key,
JSON content type, ``OpenAI-Organization`` / ``OpenAI-Project`` from ``OPENAI_ORG_ID`` /
``OPENAI_PROJECT_ID``) without the SDK's per-request machinery or its import (over a second of
CPU at start-up).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from assay.errors import StatusFailure, UsageError
from assay.providers.limiter import Limiter
from assay.providers.pool import ConnectionPool, Reply
from assay.providers.settings import ProviderSettings
from assay.providers.urls import is_header_value

NO_KEY_PLACEHOLDER = "assay-no-key"  # keyless endpoints (vLLM, Ollama) still get a bearer header
DEFAULT_BASE_URL = "https://api.openai.com/v1"
_ENV_HEADERS = (("OPENAI_ORG_ID", "OpenAI-Organization"), ("OPENAI_PROJECT_ID", "OpenAI-Project"))


def _api_key(settings: ProviderSettings) -> str:
    key = settings.api_key.get_secret_value() if settings.api_key is not None else ""
    return key or NO_KEY_PLACEHOLDER


def check_header_values(
    settings: ProviderSettings, environ: Mapping[str, str] | None = None
) -> None:
    """Refuse a key or id that cannot be sent as a header: one line naming it, never its value.

    A CR or LF in ``OPENAI_ORG_ID`` or the key once ended its header line early and sent the
    rest as headers of its own (a second ``Content-Length`` among them); other characters
    failed every request.
    """
    env = os.environ if environ is None else environ
    named = [("the API key (ASSAY_API_KEY or OPENAI_API_KEY)", _api_key(settings))]
    named += [(variable, env.get(variable, "")) for variable, _ in _ENV_HEADERS]
    for name, value in named:
        if not is_header_value(value):
            raise UsageError(
                f"{name} must be one line of printable ASCII: it is sent as an HTTP header "
                "(the value is not shown)"
            )


class JSONClient:
    """POSTs JSON bodies to one endpoint; a non-2xx answer raises :class:`StatusFailure`."""

    def __init__(self, *, base_url: str, api_key: str, timeout_s: float, keep: int) -> None:
        headers = {
            "Authorization": f"Bearer {api_key}",
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": "assay",
        }
        headers.update({name: os.environ[var] for var, name in _ENV_HEADERS if os.environ.get(var)})
        self._http = ConnectionPool(base_url, headers=headers, timeout_s=timeout_s, keep=keep)

    async def post(self, path: str, payload: bytes) -> Reply:
        """The endpoint's answer to ``payload`` at ``path`` (relative to the base URL)."""
        reply = await self._http.post(path, payload)
        if not 200 <= reply.status < 300:
            raise StatusFailure(reply.status, reply.headers)
        return reply

    def is_closed(self) -> bool:
        return self._http.is_closed()

    async def close(self) -> None:
        await self._http.close()


class Endpoint:
    """The limiter every request to the endpoint shares, and its clients (made on first use)."""

    def __init__(self, settings: ProviderSettings) -> None:
        self.settings = settings
        self.limiter = Limiter(settings.max_concurrency)
        self._json: JSONClient | None = None

    @property
    def json(self) -> JSONClient:
        if self._json is None:
            check_header_values(self.settings)
            self._json = JSONClient(
                base_url=self.settings.base_url or DEFAULT_BASE_URL,
                api_key=_api_key(self.settings),
                timeout_s=self.settings.timeout_s,
                keep=self.settings.max_concurrency,
            )
        return self._json

    def clients(self) -> list[JSONClient]:
        """The clients opened so far (each has an async ``close()``)."""
        return [self._json] if self._json is not None else []
