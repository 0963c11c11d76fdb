"""``assay judge align``: few-shot examples from labelled disagreements, as a prompt variant.

The labelled items of a calibration set (``metadata.human_score`` / ``metadata.human_pass``,
for ``llm-as-judge``) are split, seeded, into a training part and a held-out part. The judge
scores both with its default prompt; the training items where its pass decision differs from
people's become few-shot examples (people's verdict, and their ``metadata.note`` when given)
put before the default prompt. That variant judges the held-out part again, so agreement
before and after is measured only on items no example came from. The variant is written to a
file with its version (the template's hash) and is used only where a user names it (its
``use:`` block, pasted into a dataset's ``metrics:``).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict

from assay.calibration.compute import compute_agreement
from assay.calibration.model import MET
from assay.data.dataset import Dataset
from assay.engine.calibration_items import PASS_CRITERION, Labelled, read_labelled
from assay.engine.calibration_run import Judged, judge_all, label_set
from assay.errors import UsageError
from assay.judges.swap import judge_agreements
from assay.judging.client import template_version
from assay.metrics.judge import DEFAULT_JUDGE_TEMPLATE, LLMAsJudge, expected_of, question_of
from assay.providers import settings as provider_settings
from assay.providers.settings import ProviderSettings
from assay.report.judge_model import JudgeAgreement
from assay.report.judge_sections import agreement_text

__all__ = ["VARIANT_SCHEMA", "Alignment", "JudgeVariant", "align", "alignment_lines"]

VARIANT_SCHEMA: Final = "assay.judge-variant.v1"


class JudgeVariant(BaseModel):
    """A versioned prompt variant of ``llm-as-judge`` (``assay.judge-variant.v1``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: Literal["assay.judge-variant.v1"] = VARIANT_SCHEMA
    metric: Literal["llm-as-judge"] = "llm-as-judge"
    model: str
    version: str
    base_prompt: str
    calibration: str
    seed: int
    examples: list[str]
    held_out: list[str]
    before: JudgeAgreement
    after: JudgeAgreement
    use: dict[str, str]


@dataclass(frozen=True)
class Alignment:
    variant: JudgeVariant
    disagreements: int


def _subset(labelled: Labelled, rows: Sequence[int]) -> Labelled:
    return Labelled(
        samples=[labelled.samples[i] for i in rows],
        answers=[labelled.answers[i] for i in rows],
        human=labelled.human[:, list(rows)],
        human_scores=labelled.human_scores[list(rows)],
    )


def _plain(text: str) -> str:
    """Example text with braces turned to parentheses: never a placeholder of the template."""
    return " ".join(text.replace("{", "(").replace("}", ")").split())


def few_shot(labelled: Labelled, rows: Sequence[int]) -> str:
    """The examples block: each item's question, reference, answer and people's verdict."""
    parts = ["Examples graded by people (follow their standard):"]
    for i in rows:
        sample = labelled.samples[i]
        passed = int(labelled.human[0, i]) == MET
        note = sample.metadata.get("note")
        why = f" Why: {_plain(note)}" if isinstance(note, str) and note.strip() else ""
        parts.append(
            f"- QUESTION: {_plain(question_of(sample))} | EXPECTED: "
            f"{_plain(expected_of(sample))} | ACTUAL: {_plain(labelled.answers[i].text)} | "
            f"people: {'pass' if passed else 'fail'}.{why}"
        )
    return "\n".join(parts) + "\n\n"


def _agreement(labelled: Labelled, judged: list[Judged], source: str) -> JudgeAgreement:
    labels = label_set(
        (PASS_CRITERION,),
        labelled,
        {"judge": judged},
        metric="llm-as-judge",
        abstain="skip",
        source=source,
    )
    result = compute_agreement(labels, bootstrap=1000, seed=0)
    assert result.overall is not None  # read_labelled found human labels
    return judge_agreements(result.overall, 0.95, result.bootstrap)[0]


def _split(n: int, share: float, seed: int) -> tuple[list[int], list[int]]:
    order = list(range(n))
    random.Random(seed).shuffle(order)
    cut = round(n * share)
    return sorted(order[cut:]), sorted(order[:cut])


async def _disagreements(
    judge: LLMAsJudge, labelled: Labelled, train: Sequence[int], source: str
) -> list[int]:
    """The training items where the judge's pass decision is not people's."""
    part = _subset(labelled, train)
    judged = await judge_all(judge, part.samples, part.answers, 8)
    wrong = [
        row
        for row, item in zip(train, judged)
        if item.value is not None and (item.value >= 0.5) != (int(labelled.human[0, row]) == MET)
    ]
    if not wrong:
        raise UsageError(f"{source}: the judge agrees with people on every training item")
    return wrong


async def align(
    dataset: Dataset,
    *,
    model: str,
    n_examples: int,
    held_out: float,
    seed: int,
    source: str,
    settings: ProviderSettings | None = None,
) -> Alignment:
    """Propose the variant and measure it on the held-out items (see the module docstring)."""
    if not 0.0 < held_out < 1.0 or n_examples < 1:
        raise UsageError("--held-out must be between 0 and 1 and --examples at least 1")
    labelled = read_labelled(
        dataset, (PASS_CRITERION,), metric="llm-as-judge", outputs=None, source=source
    )
    train, test = _split(len(labelled.samples), held_out, seed)
    if not train or len(test) < 2:
        raise UsageError(f"{source}: too few labelled items to split ({len(labelled.samples)})")
    settings = settings or provider_settings.from_environment()
    base, ids = LLMAsJudge(model=model, settings=settings), [s.id for s in labelled.samples]
    wrong = await _disagreements(base, labelled, train, source)
    chosen = sorted(random.Random(seed).sample(wrong, min(n_examples, len(wrong))))
    template = few_shot(labelled, chosen) + DEFAULT_JUDGE_TEMPLATE
    held = _subset(labelled, test)
    before = await judge_all(base, held.samples, held.answers, 8)
    after = await judge_all(
        LLMAsJudge(model=model, prompt_template=template, settings=settings),
        held.samples,
        held.answers,
        8,
    )
    variant = JudgeVariant(
        model=model,
        version=template_version("llm-as-judge", template),
        base_prompt=template_version("llm-as-judge", DEFAULT_JUDGE_TEMPLATE),
        calibration=source,
        seed=seed,
        examples=[ids[i] for i in chosen],
        held_out=[ids[i] for i in test],
        before=_agreement(held, before, source),
        after=_agreement(held, after, source),
        use={"name": "llm-as-judge", "model": model, "prompt_template": template},
    )
    return Alignment(variant, len(wrong))


def alignment_lines(found: Alignment, written: str) -> list[str]:
    """What ``assay judge align`` prints: the examples, agreement before and after, the file."""
    variant = found.variant
    held = f"held out ({len(variant.held_out)} items)"
    return [
        f"{found.disagreements} training disagreement(s); examples: {', '.join(variant.examples)}",
        f"{held} before: {agreement_text(variant.before)}",
        f"{held} after:  {agreement_text(variant.after)}",
        f"variant {variant.version} written to {written}; name it to use it (its 'use:' block)",
    ]
