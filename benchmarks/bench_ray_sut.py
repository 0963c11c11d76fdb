"""A CPU-bound system under test for bench_ray.py (a module, so Ray workers can import it)."""

from __future__ import annotations

from typing import Any


def busy_answer(sample_input: dict[str, Any]) -> str:
    """About a millisecond of pure-Python work, then the expected answer."""
    n = int(sample_input["n"])
    total = 0
    for i in range(20_000):
        total += (i * n) % 7
    return f"answer {n} " * 8 if total >= 0 else ""
