"""Scripted judges for the loopback OpenAI server: a faithful one that answers with the
people's labels of examples/calibration/rubric_dataset.yml, and deliberately biased ones."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "calibration"
SRC = ROOT / "src"


def people() -> dict[str, dict[str, str]]:
    """answer text -> the people's labels, from the example's calibration set."""
    data = yaml.safe_load((EXAMPLE / "rubric_dataset.yml").read_text(encoding="utf-8"))
    return {s["metadata"]["answer"]: s["metadata"]["labels"] for s in data["samples"]}


def _answer(request: dict[str, Any]) -> str:
    prompt = request["messages"][-1]["content"]
    found = re.search(r"ANSWER: (.*)\n", prompt)
    assert found is not None, prompt
    return found.group(1)


def faithful(request: dict[str, Any]) -> str:
    """Answers with the people's verdicts."""
    labels = people()[_answer(request)]
    return json.dumps({"verdicts": labels, "reason": "as people said"})


def lenient(request: dict[str, Any]) -> str:
    """Passes everything: every binary criterion MET, tone good."""
    verdicts = {"correct": "MET", "cites_policy": "MET", "tone": "good"}
    return json.dumps({"verdicts": verdicts, "reason": "looks fine"})


def by_model(request: dict[str, Any]) -> str:
    """The faithful judge for model 'judge-faithful', the lenient one for any other."""
    return faithful(request) if request.get("model") == "judge-faithful" else lenient(request)


def cli_env(url: str, home: Path, model: str) -> dict[str, str]:
    """The environment of an ``assay`` subprocess against the loopback server."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ASSAY_", "OPENAI_"))}
    env.update(
        PYTHONPATH=str(SRC),
        OPENAI_BASE_URL=url,
        OPENAI_API_KEY="sk-test-not-a-real-key",
        ASSAY_JUDGE_MODEL=model,
        ASSAY_CACHE_DIR=str(home / "cache"),
        ASSAY_HOME=str(home / ".assay"),
    )
    return env


TONES = ["poor", "ok", "good"]


def harsh_tone(request: dict[str, Any]) -> str:
    """Biased: every answer 'correct', the true policy citation, tone one level lower."""
    labels = people()[_answer(request)]
    tone = TONES[max(0, TONES.index(labels["tone"]) - 1)]
    verdicts = {"correct": "MET", "cites_policy": labels["cites_policy"], "tone": tone}
    return json.dumps({"verdicts": verdicts, "reason": "biased"})
