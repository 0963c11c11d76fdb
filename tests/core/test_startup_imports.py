"""``assay --help`` loads no heavy library (pydantic, numpy, rich, yaml, scipy, the openai SDK).

Checked by module presence in a fresh interpreter, not by timing (benchmarks/bench_startup.py
times it).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
HEAVY = ("pydantic", "numpy", "rich", "yaml", "scipy", "openai", "httpx", "regex", "sklearn")
PROBE = f"""
import contextlib, io, json, sys
from assay.cli import main
with contextlib.redirect_stdout(io.StringIO()) as out, contextlib.suppress(SystemExit):
    main(["--help"])
print(json.dumps({{"loaded": [m for m in {HEAVY!r} if m in sys.modules], "help": out.getvalue()}}))
"""


def test_help_imports_nothing_heavy() -> None:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    done = subprocess.run(
        [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True
    )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["loaded"] == []
    assert "Usage:" in result["help"] and "run" in result["help"]
