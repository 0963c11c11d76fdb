"""The run configuration: every setting of one ``assay run``, built once and passed down.

Precedence, highest first (one rule for every setting):

1. a command-line flag;
2. its environment variable (each flag has one, read by the CLI as the flag's value);
3. for provider settings, the dataset's ``providers:`` block, then ``ASSAY_*``/``OPENAI_*``
   provider variables (see :mod:`assay.providers.settings`);
4. ``assay.toml`` (``[gate]`` rules, ``executor`` and ``[ray]``);
5. the dataset's ``gate:`` block, which sits between ``assay.toml`` and the flags for gate rules
   (``assay.toml [gate]`` < dataset ``gate:`` < flags; see
   :func:`assay.compare.gate_rules.load_rules`);
6. built-in defaults.

Adding a flag is four local edits: its option type in :mod:`assay.cli.run_options`, a parameter
of that type in :func:`assay.cli.run.run`, a field of the same name here, and the keyword that
passes one to the other in ``run``'s body. Nothing in assay keeps settings in module-level or
context variables: the provider settings built from these flags are handed, as a value, to the
metrics and the judge client that call a provider (docs/architecture.md, "Two paths traced").
This module holds values only.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from assay.data.dataset import MAX_REPETITIONS
from assay.store.location import StoreUrl, store_location

FORMATS = ("json", "md", "html", "junit", "csv", "padosoft-json")  # the last: compatibility keys
MIN_RPM = 0.01  # a slower rate waits hours between calls: a typo (1e-3 for 1e3), not a plan


class RunConfig(BaseModel):
    """The ``assay run`` flags by parameter name (environment already applied by the CLI)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    dataset: Path
    # systems under test
    outputs: list[str] = []
    sut: list[str] = []
    sut_url: str | None = None
    sut_output_path: str | None = None
    sut_retrieved_path: str | None = None
    sut_trajectory_path: str | None = None
    sut_timeout: float | None = None
    rpm: float | None = None
    concurrency: int = 8
    # what to score and how to report it
    metric: list[str] = []
    fmt: str = "md"
    out: Path | None = None
    also: list[str] = []
    redact: bool = False
    text_limit: int = 200
    quiet: bool = False
    promote_failures: Path | None = None
    # gate
    min_macro_f1: float | None = None
    min_pass_rate: list[str] = []
    min_mean: list[str] = []
    min_coverage: list[str] = []
    max_failures: int | None = None
    compare: str | None = None
    max_regressions: int | None = None
    max_flips: int | None = None
    max_drop: list[str] = []
    reference: str | None = None  # several systems: the one the others are gated against
    allow_judge_change: bool = False
    # execution
    repetitions: int | None = None
    budget_usd: float | None = None
    limit: int | None = None
    sample_n: int | None = None
    seed: int = 0
    tag: list[str] = []
    sample_id: list[str] = []
    resume: str | None = None
    resume_changed: bool = False
    retry_errors: bool = False
    run_id: str | None = None
    executor: str | None = None
    ray_address: str | None = None
    store_path: str | Path | None = None  # a SQLite file or a postgresql:// URL
    no_store: bool = False
    dry_run: bool = False
    # providers
    judge_model: str | None = None
    embedding_model: str | None = None
    embedding_provider: str | None = None
    reranker: str | None = None
    base_url: str | None = None
    allow_dataset_endpoints: bool = False
    provider_concurrency: int | None = None
    no_cache: bool = False
    refresh_cache: bool = False
    cache_dir: str | Path | None = None  # a folder or a postgresql:// URL

    def problems(self) -> list[str]:
        """Flag values that are wrong on their own (the CLI exits 2 on the first)."""
        return _problems(self)

    def provider_flags(self) -> dict[str, Any]:
        """The provider settings given on the command line (unset ones left out); the run's
        plan builds the settings from them (flags > dataset ``providers:`` > environment >
        defaults, :func:`assay.providers.settings.build`)."""
        flags = {
            "judge_model": self.judge_model,
            "embedding_model": self.embedding_model,
            "embedding_provider": self.embedding_provider,
            "reranker": self.reranker,
            "base_url": self.base_url,
            "max_concurrency": self.provider_concurrency,
            "cache_dir": str(self.cache_dir) if self.cache_dir else self._store_cache(),
            "cache_mode": "off" if self.no_cache else "refresh" if self.refresh_cache else None,
            "allow_dataset_endpoints": self.allow_dataset_endpoints or None,
            "dry_run": True if self.dry_run else None,
        }
        return {key: value for key, value in flags.items() if value is not None}

    def _store_cache(self) -> str | None:
        """A run into a PostgreSQL store given by ``--store`` caches provider answers there
        too, shared by the team (``ASSAY_STORE`` and assay.toml do so in the settings)."""
        if self.store_path is None or self.no_store:
            return None
        place = store_location(self.store_path)
        return place.url if isinstance(place, StoreUrl) else None

    def gate_flags(self, *, with_baseline_rules: bool = True) -> dict[str, Any]:
        """The gate rules given as flags, in the shape :func:`assay.compare.gate_rules.load_rules`
        takes."""
        flags: dict[str, Any] = {
            "min_macro_f1": self.min_macro_f1,
            "min_pass_rate": self.min_pass_rate,
            "min_mean": self.min_mean,
            "min_coverage": self.min_coverage,
            "max_failures": self.max_failures,
            "max_regressions": self.max_regressions,
        }
        if with_baseline_rules:
            flags.update(max_flips=self.max_flips, max_drop=self.max_drop)
        return flags

    def comparison_flags(self) -> list[str]:
        """The rules given as flags that judge a run against another (need a reference)."""
        given = [
            ("--max-flips", self.max_flips is not None),
            ("--max-drop", bool(self.max_drop)),
            ("--max-regressions", self.max_regressions is not None),
        ]
        return [flag for flag, set_ in given if set_]


_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")


def is_run_id(value: str | None) -> bool:
    """Whether ``value`` is unset or a run id assay can show and store as given: no control
    character, space or path separator (an ESC sequence in one rewrote the terminal)."""
    return value is None or _RUN_ID.fullmatch(value) is not None


def _problems(config: RunConfig) -> list[str]:
    """Every flag value that is wrong on its own, in the order the CLI reports them."""
    checks: list[tuple[bool, str]] = [
        (
            config.fmt not in FORMATS,
            f"--format must be one of {', '.join(FORMATS)}; got {config.fmt!r}",
        ),
        (config.retry_errors and not config.resume, "--retry-errors needs --resume RUN_ID"),
        (config.resume_changed and not config.resume, "--resume-changed needs --resume RUN_ID"),
        (
            not is_run_id(config.run_id),
            f"--run-id must be 1-128 letters, digits, '.', '_', ':' or '-' (starting with a "
            f"letter or digit); got {config.run_id!r}",
        ),
        (
            config.resume != "latest" and not is_run_id(config.resume),
            f"--resume must be a run id (letters, digits, '.', '_', ':', '-') or 'latest'; "
            f"got {config.resume!r}",
        ),
        (
            config.repetitions is not None and not 1 <= config.repetitions <= MAX_REPETITIONS,
            f"--repetitions must be an integer from 1 to {MAX_REPETITIONS}; "
            f"got {config.repetitions}",
        ),
        (
            config.budget_usd is not None and not config.budget_usd > 0,
            f"--budget-usd must be a positive amount in US dollars; got {config.budget_usd}",
        ),
        (
            config.rpm is not None and not config.rpm >= MIN_RPM,
            f"--rpm must be at least {MIN_RPM} calls per minute (one per 100 minutes); "
            f"got {config.rpm}",
        ),
        (
            config.text_limit < 0,
            f"--text-limit must be 0 (no limit) or a positive number; got {config.text_limit}",
        ),
        (
            config.sut_timeout is not None and not config.sut_timeout > 0,
            f"--sut-timeout must be a positive number of seconds; got {config.sut_timeout}",
        ),
        (config.concurrency < 1, f"--concurrency must be at least 1; got {config.concurrency}"),
    ]
    return [message for wrong, message in checks if wrong]
