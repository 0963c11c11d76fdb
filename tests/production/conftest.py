"""The example instrumented application (examples/production/rag_app.py) is importable here,
so the tests drive the same app docs/production.md runs."""

from __future__ import annotations

import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "production"
if str(EXAMPLE) not in sys.path:
    sys.path.insert(0, str(EXAMPLE))
