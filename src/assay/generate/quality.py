"""The checks a generated sample passes before it is kept, each with a named reason to drop.

- ``answer-leak``: the answer occurs verbatim in the question (compared case- and
  punctuation-insensitively), so the question gives itself away.
- ``unsupported``: the answer is not backed by its source passages: the heuristic check
  requires every claim and every sentence of the answer to be lexically supported by them
  (the offline ``faithfulness`` rule, :func:`assay.metrics.rag.supported`); the judge check
  asks a judge.
- ``one-passage``: a multi-hop or comparison answer none of whose claims or sentences comes
  from one of its two passages (heuristic check), so one passage alone answers it.
- ``answerable``: an *unanswerable* question that the passages do answer (judge check only:
  absence cannot be shown lexically).
- ``near-duplicate``: the question's token-sorted similarity (rapidfuzz ``token_sort_ratio``)
  to an already kept question is at or above the threshold.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from rapidfuzz import fuzz, process, utils

from assay.errors import MetricError
from assay.generate.corpus import Chunk
from assay.generate.prompts import CHECK, parse_check, passages
from assay.judging.client import Judge, Usage, ask, fill, template_version
from assay.metrics.rag import claims_of, supported
from assay.tez.support import DEFAULT_TAU

DEFAULT_DUPLICATE_THRESHOLD: Final = 90.0
_NOT_WORD = re.compile(r"[\W_]+")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
REASONS: Final = {
    "malformed": "the generator's reply is not a JSON object with a question and an answer",
    "answer-leak": "the answer appears verbatim in the question",
    "unsupported": "the answer is not supported by its source passages",
    "answerable": "an 'unanswerable' question that the passages answer",
    "one-passage": "a multi-hop or comparison answer that uses only one of its two passages",
    "near-duplicate": "too similar to a question already kept",
    "error": "the generator could not be asked (provider error)",
    "check-error": "the judge check did not give a verdict",
}


@dataclass(frozen=True)
class Verdict:
    """A check's outcome: None to keep, else the reason key and a short detail."""

    reason: str | None
    detail: str = ""
    usage: Usage = ()


def normalised(text: str) -> str:
    """Lower case, punctuation and runs of whitespace as one space (for the leak check)."""
    return " ".join(_NOT_WORD.sub(" ", text.casefold()).split())


def leaks(question: str, answer: str) -> bool:
    """Whether the whole answer occurs in the question, word-aligned."""
    wanted = normalised(answer)
    return bool(wanted) and f" {wanted} " in f" {normalised(question)} "


def heuristic_check(kind: str, answer: str, chunks: Sequence[Chunk]) -> Verdict:
    """Every claim and sentence of the answer lexically supported by the passages, and, with
    two passages, something of the answer taken from each (answerable kinds only)."""
    if kind == "unanswerable":
        return Verdict(None)
    claims = claims_of(answer)
    # sentences too: the claim splitter keeps no claim of some (a negation, a hedge)
    units = list(dict.fromkeys([*claims, *filter(None, _SENTENCE.split(answer.strip()))]))
    contexts = [chunk.text for chunk in chunks]
    missing = [u for u in units if not supported(u, contexts, DEFAULT_TAU)]
    if not claims or missing:
        detail = f"{len(missing)} of {len(units)} claims and sentences not found in the passages"
        return Verdict("unsupported", detail)
    unused = [c.id for c in chunks if not any(supported(u, [c.text], DEFAULT_TAU) for u in units)]
    if len(chunks) > 1 and unused:
        return Verdict("one-passage", f"nothing of the answer comes from {unused[0]}")
    return Verdict(None)


async def judge_check(
    judge: Judge, kind: str, question: str, answer: str, chunks: Sequence[Chunk]
) -> Verdict:
    """The judge's verdict on answerability and support (one re-ask on a malformed reply)."""
    values = {"passages": passages(chunks), "question": question, "answer": answer}
    try:
        verdict = await ask(
            judge,
            fill(CHECK, values),
            parse_check,
            version=template_version("generate-check", CHECK),
        )
    except MetricError as exc:
        return Verdict("check-error", str(exc), tuple(exc.usage))
    answerable, backed, reason = verdict.value
    detail = reason or ""
    if kind == "unanswerable":
        return Verdict("answerable" if answerable else None, detail, verdict.usage)
    if not (answerable and backed):
        return Verdict("unsupported", detail, verdict.usage)
    return Verdict(None, detail, verdict.usage)


class Duplicates:
    """The questions kept so far, to find a near-duplicate of a new one."""

    def __init__(self, threshold: float = DEFAULT_DUPLICATE_THRESHOLD) -> None:
        self.threshold = threshold
        self._questions: list[str] = []
        self._ids: list[str] = []

    def match(self, question: str) -> tuple[str, float] | None:
        """``(kept id, similarity)`` of the closest kept question at or above the threshold."""
        found = process.extractOne(
            _sorted_tokens(question),
            self._questions,  # sorted once, when kept: not again for every new question
            scorer=fuzz.ratio,  # on sorted tokens, token_sort_ratio itself
            processor=None,
            score_cutoff=self.threshold,
        )
        if found is None:
            return None
        return self._ids[int(found[2])], float(found[1])

    def add(self, sample_id: str, question: str) -> None:
        self._questions.append(_sorted_tokens(question))
        self._ids.append(sample_id)


def _sorted_tokens(text: str) -> str:
    """rapidfuzz's ``token_sort_ratio`` compares these: processed words, sorted, one space."""
    return " ".join(sorted(utils.default_process(text).split()))
