"""Configuration errors found before any work: a run that cannot succeed stops in under a second.

Checked once the metrics are resolved and the samples selected, before the run store is opened
or any sample is attempted: a judge or embedding metric with neither an API key nor a base URL,
and a metric whose own check (``check_config(samples)``) finds a required option missing. A tag
scope that matches no sample is only a warning.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence

from assay.data.dataset import Sample
from assay.errors import MetricConfigError, UsageError
from assay.metrics.base import Metric, checks_config
from assay.metrics.registry import applies
from assay.providers.local_extra import INSTALL_HINT
from assay.providers.local_extra import runtime_installed as local_available
from assay.providers.pricing import stale_prices
from assay.providers.settings import ProviderSettings

CHAT_FAMILIES = frozenset({"judge", "rubric"})


def family(metric: Metric) -> str:
    """The module a metric is defined in (``judge``, ``semantic``, ...)."""
    return type(metric).__module__.rsplit(".", 1)[-1]


def _needs_remote_provider(metric: Metric, settings: ProviderSettings) -> bool:
    kind = family(metric)
    if kind in CHAT_FAMILIES:
        return True
    return kind == "semantic" and settings.embedding_provider == "openai"


def check_providers(metrics: Sequence[Metric], settings: ProviderSettings) -> None:
    """A metric that calls an OpenAI-compatible endpoint needs a key or a base URL, and the
    key and ids sent as headers must be sendable."""
    local = getattr(settings, "embedding_provider", None) == "local"
    if local and any(family(m) == "semantic" for m in metrics) and not local_available():
        raise UsageError(INSTALL_HINT)
    remote = [metric for metric in metrics if _needs_remote_provider(metric, settings)]
    if not remote:
        return
    if settings.api_key is None and settings.base_url is None:
        raise UsageError(
            f"metric '{remote[0].name}' calls an OpenAI-compatible provider, but neither an API "
            "key (OPENAI_API_KEY or ASSAY_API_KEY) nor a base URL (--base-url or "
            "OPENAI_BASE_URL) is set"
        )
    # The endpoint module brings the HTTP pool and asyncio: a lexical run never gets here.
    from assay.providers.endpoint import check_header_values

    check_header_values(settings)


def check_metrics(
    metrics: Sequence[Metric], scopes: Mapping[str, frozenset[str]], samples: Sequence[Sample]
) -> list[str]:
    """Each metric's own configuration check; returns warnings for scopes that match nothing."""
    warnings: list[str] = []
    for metric in metrics:
        check = metric if checks_config(metric) else None
        if metric.name not in scopes and check is None:
            continue  # nothing to check: a streamed dataset is not read
        scoped = [s for s in samples if applies(scopes, metric.name, s.tags)]
        if metric.name in scopes and not scoped:
            tags = ", ".join(sorted(scopes[metric.name]))
            warnings.append(
                f"metric '{metric.name}' is limited to tags [{tags}], no sample has one"
            )
            continue
        if check is not None:
            try:
                check.check_config(scoped)
            except MetricConfigError:
                raise
            except UsageError as exc:
                raise MetricConfigError(str(exc)) from None
    return warnings


def price_warnings(
    metrics: Sequence[Metric], settings: ProviderSettings, today: dt.date
) -> list[str]:
    """A warning for each model the metrics will pay for whose price is older than the
    settings' ``max_price_age_days``."""
    if settings is None:
        return []
    models: list[str] = []
    for metric in metrics:
        kind = family(metric)
        if kind in CHAT_FAMILIES:
            own = [getattr(metric, "model", None), *(getattr(metric, "models", None) or ())]
            named = [m if isinstance(m, str) else getattr(m, "model", None) for m in own]
            models.extend([m for m in named if isinstance(m, str)] or [settings.judge_model])
        elif _needs_remote_provider(metric, settings):
            models.append(settings.resolved_embedding_model)
    return stale_prices(
        models, settings.prices, today=today, max_age_days=settings.max_price_age_days
    )
