"""The system under test of this example: a tiny rule-based FAQ bot.

``FAQ_BOT_VERSION=2`` switches to a "new release" that regressed on two questions, so you can
watch the assay tests fail with expected vs actual (see README.md).
"""

from __future__ import annotations

import os

ANSWERS = {
    "What is the capital of France?": "Paris",
    "What is the capital of Japan?": "Tokyo",
    "How long do I have to return an order?": "You have 30 days from delivery to return it.",
    "When is shipping free?": "Shipping is free on orders over 50 euros.",
    "Give me a sample order id.": "ORD-104233",
}
REGRESSED = {
    "What is the capital of Japan?": "Kyoto",
    "When is shipping free?": "Shipping is always free.",
}


def answer(sample_input: dict) -> str:
    """Answer one question; unknown questions get a polite fallback."""
    question = str(sample_input.get("question", ""))
    if os.environ.get("FAQ_BOT_VERSION") == "2" and question in REGRESSED:
        return REGRESSED[question]
    return ANSWERS.get(question, "Welcome! Sorry, I do not know that yet.")
