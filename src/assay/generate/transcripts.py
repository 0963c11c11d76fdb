"""Simulated conversations as an ordinary dataset and saved outputs, ready to score.

Each conversation ``c`` becomes two samples: ``c`` itself, a conversation (``turns:`` of the
user's messages, tagged ``simulated-turn``) whose saved outputs are the system's replies, so
every turn is scored by the turn metrics and the report aggregates them per conversation; and
``c#goal`` (tagged ``simulated-goal``), whose output is the whole transcript and whose
``goal-accuracy`` says whether the conversation reached the goal (``expected_output`` is the
original sample's expected outcome). How each talk ended is in ``metadata.simulation``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from assay.data.dataset import DATASET_SCHEMA, HISTORY_KEY, MESSAGE_KEY, dataset_from_data
from assay.generate.simulate import Transcript, transcript_text

TURN_TAG: Final = "simulated-turn"
GOAL_TAG: Final = "simulated-goal"
DEFAULT_TURN_METRICS: Final = ("answer-relevancy",)
OUTPUTS_SCHEMA: Final = "assay.outputs.v1"


def goal_id(conversation: str) -> str:
    return f"{conversation}#goal"


def metrics_of(turn_metrics: Sequence[str]) -> list[dict[str, Any]]:
    """The turn metrics scoped to turns, and goal-accuracy scoped to the goal samples."""
    metrics: list[dict[str, Any]] = [{"name": name, "tags": [TURN_TAG]} for name in turn_metrics]
    return [*metrics, {"name": "goal-accuracy", "tags": [GOAL_TAG]}]


def _simulation(transcript: Transcript, model: str) -> dict[str, Any]:
    block: dict[str, Any] = {
        "status": transcript.status,
        "turns": len(transcript.users),
        "user_model": model,
    }
    if transcript.detail:
        block["detail"] = transcript.detail
    return block


def _samples(transcript: Transcript, model: str) -> list[dict[str, Any]]:
    goal = transcript.goal
    source = goal.sample
    shared = {k: v for k, v in source.input.items() if k not in (MESSAGE_KEY, HISTORY_KEY)}
    kept = {k: v for k, v in source.metadata.items() if k not in ("tags", "conversation")}
    metadata = {**kept, "goal": goal.goal, "persona": goal.persona}
    metadata["simulation"] = _simulation(transcript, model)
    conversation = {
        "id": source.id,
        "input": shared,
        "metadata": {**metadata, "tags": [TURN_TAG]},
        "turns": [{"user": message} for message in transcript.users],
    }
    outcome = {
        "id": goal_id(source.id),
        "input": {"goal": goal.goal},
        "expected_output": source.expected_output,
        "metadata": {**metadata, "tags": [GOAL_TAG]},
    }
    return [conversation, outcome]


def transcripts_documents(
    name: str, transcripts: Sequence[Transcript], model: str, turn_metrics: Sequence[str]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(dataset, outputs)`` documents of the conversations that have at least one turn."""
    talked = [t for t in transcripts if t.users]
    samples = [sample for t in talked for sample in _samples(t, model)]
    outputs: list[dict[str, Any]] = []
    for transcript in talked:
        cid = transcript.goal.sample.id
        outputs.append({"id": cid, "turns": list(transcript.replies)})
        text = transcript_text(transcript.users, transcript.replies)
        outputs.append({"id": goal_id(cid), "output": text})
    dataset = {
        "schema_version": DATASET_SCHEMA,
        "name": name,
        "description": f"Conversations simulated by assay simulate with {model}.",
        "metrics": metrics_of(turn_metrics),
        "samples": samples,
    }
    dataset_from_data(dataset, source=name)  # what is written validates, or nothing is
    return dataset, {"schema_version": OUTPUTS_SCHEMA, "outputs": outputs}
