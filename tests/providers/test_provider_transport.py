"""Provider requests on the shared retry stack: host labels and the endpoint's limiter."""

from __future__ import annotations

import pytest

from assay.providers import registry
from assay.providers.limiter import Limiter
from assay.providers.settings import ProviderSettings
from assay.providers.transport import endpoint_host
from openai_server import CHAT, OpenAIServer, Step


@pytest.mark.parametrize(
    ("url", "host"),
    [
        (None, "api.openai.com"),
        ("http://127.0.0.1:8080/v1", "127.0.0.1:8080"),
        ("https://user:sk-secret@proxy.example/v1?key=sk-secret", "proxy.example"),
    ],
)
def test_endpoint_host_never_carries_credentials(url: str | None, host: str) -> None:
    assert endpoint_host(url) == host


async def test_a_429_cuts_the_endpoints_window_and_a_500_does_not(
    openai_server: OpenAIServer, provider_settings: ProviderSettings
) -> None:
    provider = registry.chat_provider(provider_settings)
    limiter = provider._limiter
    assert isinstance(limiter, Limiter) and limiter.limit == provider_settings.max_concurrency
    openai_server.script(CHAT, Step.error(500))
    _, reply = await provider.complete(
        [{"role": "user", "content": "a"}], params={}, template_version="v", accept=str
    )
    assert reply.retries == 1 and limiter.stats.overloaded == 0 and limiter.limit == 8
    openai_server.script(CHAT, Step.error(429, retry_after="0"))
    _, reply = await provider.complete(
        [{"role": "user", "content": "b"}], params={}, template_version="v", accept=str
    )
    assert reply.retries == 1 and limiter.stats.overloaded == 1
    assert limiter.limit == 4  # halved once (DECREASE = 0.5)
    assert registry.embedder(provider_settings)._limiter is limiter  # one limiter per endpoint
