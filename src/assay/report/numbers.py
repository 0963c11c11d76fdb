"""How reports and the command line write a number: fixed decimals, ``n/a`` for none.

Kept apart from the renderers so that a run printing its summary line loads no renderer.
"""

from __future__ import annotations


def fmt(value: float | None, digits: int = 4) -> str:
    """``value`` with ``digits`` decimals; ``n/a`` when there is none (no row was scored)."""
    return "n/a" if value is None else f"{value:.{digits}f}"
