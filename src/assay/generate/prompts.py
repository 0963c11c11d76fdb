"""The prompts of ``assay generate`` and ``assay simulate``, and the strict parsers of their
replies.

A generation prompt names the kind, the persona and the source passages (each tagged with its
chunk id); the reply must be one JSON object ``{"question", "answer"}``. The check prompt asks
a judge whether the passages answer the question with that answer. The user prompt asks the
simulated user for its next message and whether its goal is reached. Templates are versioned
by their hash (:func:`assay.judging.client.template_version`), which keys the provider cache
and is recorded in each sample's provenance.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Final

from assay.errors import JudgeParseError
from assay.generate.corpus import Chunk
from assay.judging.replies import json_type, only_keys, parse_object

KIND_INSTRUCTIONS: Final = {
    "single-fact": (
        "Ask about one specific fact stated in the passage. The answer is one short sentence "
        "taken from what the passage says."
    ),
    "multi-hop": (
        "Ask a question that needs a fact from EACH of the two passages to answer (for "
        "example, a fact from the first one leads to the second). The answer combines both."
    ),
    "comparison": (
        "Ask the reader to compare one property that the two passages both describe (a "
        "number, a date, a rule). The answer states both values and which is larger, earlier "
        "or stricter."
    ),
    "unanswerable": (
        "Ask a question on the same topic that a user could plausibly ask but that the "
        "passage does NOT answer (a detail it never gives). The answer is a short refusal "
        "saying the documents do not give that information."
    ),
}

GENERATE: Final = """\
You write one test question for evaluating a question-answering assistant that answers from \
the documents below. Write the question as this person would ask it: {persona}.

KIND: {kind}
TASK: {instruction}

{passages}

Rules: use only the passages; never copy the answer into the question; the question must make \
sense without seeing the passages (name the thing it is about).
Reply with one JSON object and nothing else, no code fences:
{{"question": "<the question>", "answer": "<the expected answer>"}}"""

CHECK: Final = """\
You check a generated test question for an automated evaluation.

{passages}

QUESTION: {question}
PROPOSED ANSWER: {answer}

answerable: true when the passages contain the information that answers the question.
supported: true when every statement of the proposed answer is stated in the passages.
Reply with one JSON object and nothing else, no code fences:
{{"answerable": true|false, "supported": true|false, "reason": "<one short sentence>"}}"""

USER: Final = """\
You play a user talking to an assistant, for an automated test of that assistant. Stay in \
character: {persona}.

YOUR GOAL: {goal}

CONVERSATION SO FAR:
{transcript}

Write your next message to the assistant (short, as this user would write it). When the \
assistant has done what your goal needs, reply with status "done"; when it clearly cannot and \
you would give up, "abandon"; otherwise "continue".
Reply with one JSON object and nothing else, no code fences:
{{"message": "<your next message; empty when done or abandon>", \
"status": "continue|done|abandon"}}"""

USER_STATUSES: Final = ("continue", "done", "abandon")


def passages(chunks: Sequence[Chunk]) -> str:
    """The chunks as tagged passages; a closing tag inside a text is defused."""
    blocks = []
    for chunk in chunks:
        text = chunk.text.replace("</passage", "</ passage")
        title, name = chunk.title.replace('"', "'"), chunk.id.replace('"', "'")
        blocks.append(f'<passage id="{name}" title="{title}">\n{text}\n</passage>')
    return "\n\n".join(blocks)


def prompt_hash(prompt: str) -> str:
    """The first 16 hex digits of the prompt's SHA-256 (a sample's provenance)."""
    return hashlib.sha256(prompt.encode("utf-8")).hexdigest()[:16]


MAX_FIELD_CHARS: Final = 4000  # a question, answer or user message longer is no test sample


def _text_field(data: Mapping[str, object], key: str, prefix: str) -> str:
    """A string field, whitespace collapsed; refused when too long or not valid Unicode."""
    value = data[key]
    if not isinstance(value, str):
        raise JudgeParseError(f"{prefix} '{key}' must be a string; got {json_type(value)}")
    if len(value) > MAX_FIELD_CHARS:
        raise JudgeParseError(f"{prefix} '{key}' is over {MAX_FIELD_CHARS} characters")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate (JSON "\ud800"): no file could hold it
        raise JudgeParseError(f"{prefix} '{key}' is not valid Unicode text") from None
    return " ".join(value.split())


def parse_generation(text: str) -> tuple[str, str]:
    """``(question, answer)`` from a generation reply; both non-empty strings."""
    data = parse_object(text)
    only_keys(data, frozenset({"question", "answer"}), prefix="generator")
    question = _text_field(data, "question", "generator")
    answer = _text_field(data, "answer", "generator")
    if not question or not answer:
        raise JudgeParseError("generator response has an empty question or answer")
    return question, answer


def parse_check(text: str) -> tuple[bool, bool, str | None]:
    """``(answerable, supported, reason)`` from a check reply."""
    data = parse_object(text)
    only_keys(data, frozenset({"answerable", "supported"}), frozenset({"reason"}), "check")
    flags = []
    for key in ("answerable", "supported"):
        if not isinstance(data[key], bool):
            raise JudgeParseError(
                f"check '{key}' must be true or false; got {json_type(data[key])}"
            )
        flags.append(bool(data[key]))
    reason = data.get("reason")
    return flags[0], flags[1], reason if isinstance(reason, str) else None


def parse_user_turn(text: str) -> tuple[str, str]:
    """``(message, status)`` from a simulated user's reply; a message when it continues."""
    data = parse_object(text)
    only_keys(data, frozenset({"message", "status"}), prefix="simulated user")
    status = data["status"]
    if status not in USER_STATUSES:
        raise JudgeParseError(f"simulated user 'status' must be one of {', '.join(USER_STATUSES)}")
    message = _text_field(data, "message", "simulated user")
    if status == "continue" and not message:
        raise JudgeParseError("simulated user continues with an empty message")
    return message, str(status)
