"""Short, readable renderings of inputs, expected values and answers for failure messages."""

from __future__ import annotations

import json

MAX_CHARS = 400


def show(value: object, limit: int = MAX_CHARS) -> str:
    """A value as one line of JSON (strings quoted), cut to ``limit`` characters."""
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
