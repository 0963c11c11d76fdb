"""Systems under test for the Ray executor tests (imported by Ray workers by module path)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any


def echo(sample_input: dict[str, Any]) -> str:
    """Answers with the question's number, so exact-match passes on even numbers only."""
    number = int(sample_input["n"])
    return str(number) if number % 2 == 0 else f"wrong {number}"


def echo_dying_once(sample_input: dict[str, Any]) -> str:
    """Like ``echo``, but the worker process dies the first time it meets the sample that
    names a marker file (and writes the marker, so the retried batch goes through)."""
    marker = Path(sample_input.get("marker", ""))
    if sample_input.get("marker") and not marker.exists():
        marker.write_text("died", encoding="utf-8")
        os._exit(1)
    return echo(sample_input)
