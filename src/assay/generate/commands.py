"""``assay generate`` end to end: check the request, read the corpus, generate, write.

Provider settings are built as for every command (flags > environment > defaults) and put in
force for the run; the plan of calls and its estimated cost is printed before the first call.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay.data.fileio import is_dir, write_atomic
from assay.errors import UsageError
from assay.generate.corpus import Corpus, read_corpus
from assay.generate.cost import count
from assay.generate.plan import parse_mix
from assay.generate.run import Generated, GenerateOptions, Generator
from assay.generate.writer import (
    GenerateSummary,
    corpus_lines,
    dataset_document,
    summary,
    summary_lines,
    write_dataset,
)
from assay.providers import registry
from assay.providers.settings import ProviderSettings, build

MAX_COUNT = 10_000
Echo = Callable[[str], None]


@dataclass(frozen=True)
class GenerateRequest:
    """The command line of ``assay generate``, as given."""

    source: Path
    count: int
    out: Path
    name: str | None = None
    seed: int = 0
    mix: tuple[str, ...] = ()
    personas: tuple[str, ...] = ()
    check: str = "heuristic"
    duplicate_threshold: float = 90.0
    max_attempts: int | None = None
    model: str | None = None
    budget: float | None = None
    chunk_chars: int = 1200
    summary_path: Path | None = None


@dataclass(frozen=True)
class GenerateOutcome:
    summary: GenerateSummary
    halted: str | None
    written: bool


def check_request(request: GenerateRequest) -> None:
    """Usage errors before any file is read or call made."""
    if not 1 <= request.count <= MAX_COUNT:
        raise UsageError(f"-n must be between 1 and {MAX_COUNT}; got {request.count}")
    if request.check not in ("heuristic", "judge"):
        raise UsageError(f"--check must be heuristic or judge; got {request.check!r}")
    if not 0.0 <= request.duplicate_threshold <= 100.0:
        raise UsageError("--duplicate-threshold must be between 0 and 100")
    if request.max_attempts is not None and request.max_attempts < 1:
        raise UsageError(f"--max-attempts must be at least 1; got {request.max_attempts}")
    if request.budget is not None and not (math.isfinite(request.budget) and request.budget >= 0):
        raise UsageError(f"--budget must be a number of dollars, 0 or more; got {request.budget}")
    if not 200 <= request.chunk_chars <= 20_000:
        raise UsageError(f"--chunk-chars must be between 200 and 20000; got {request.chunk_chars}")
    if any(not p.strip() for p in request.personas):
        raise UsageError("--persona must not be empty")
    check_writable(request.out, "-o")
    if request.summary_path is not None:
        check_writable(request.summary_path, "--summary")


def check_writable(path: Path, flag: str) -> None:
    """The folder of a file to write exists (checked before any call is paid for)."""
    if not is_dir(path.parent if str(path.parent) else Path(".")):
        raise UsageError(f"{flag} {path}: the folder {path.parent} does not exist")


def options_of(request: GenerateRequest) -> GenerateOptions:
    return GenerateOptions(
        n=request.count,
        seed=request.seed,
        mix=parse_mix(request.mix),
        personas=tuple(p.strip() for p in request.personas),
        check=request.check,
        duplicate_threshold=request.duplicate_threshold,
        max_attempts=request.max_attempts,
        model=request.model,
        budget_usd=request.budget,
    )


def run_generate(request: GenerateRequest, flags: Mapping[str, Any], echo: Echo) -> GenerateOutcome:
    """Generate, print the summary, write the dataset (and the summary file when asked)."""
    check_request(request)
    options = options_of(request)
    corpus = read_corpus(request.source, max_chars=request.chunk_chars)
    settings = build(cli={k: v for k, v in flags.items() if v is not None})
    for line in corpus_lines(corpus):
        echo(line)
    generated = asyncio.run(_generate(corpus, options, settings, echo))
    result = summary(corpus, options, generated)
    for line in summary_lines(result):
        echo(line)
    written = bool(generated.samples)
    if written:
        name = request.name or f"{request.source.resolve().name or 'corpus'}-generated"
        write_dataset(request.out, dataset_document(name, str(request.source), generated))
        echo(f"wrote {count(len(generated.samples), 'sample')} to {request.out}")
    else:
        echo(f"no sample was kept; {request.out} was not written")
    if request.summary_path is not None:
        write_atomic(request.summary_path, result.model_dump_json(indent=2) + "\n")
    return GenerateOutcome(result, generated.spend.halted, written)


async def _generate(
    corpus: Corpus, options: GenerateOptions, settings: ProviderSettings, echo: Echo
) -> Generated:
    try:
        generator = Generator(corpus, options, settings)
        return await generator.run(lambda plan: echo(plan.line()))
    finally:
        await registry.aclose()
