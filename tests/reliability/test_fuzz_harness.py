"""The fuzz entry point runs every surface and finds nothing untyped in a short run.

The long run (100,000 cases per surface) is documented in docs/reliability.md; this keeps the
harness itself working and catches a regression on the first cases of each surface.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_surface_runs_and_raises_only_assay_errors(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), str(ROOT)])
    done = subprocess.run(
        [sys.executable, "-m", "fuzz", "--cases", "60", "--surface", "all", "--seed", "3"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert {row["surface"] for row in rows} >= {"judge", "regex", "dataset", "bundle", "labels"}
    for row in rows:
        assert row["cases"] == 60
        assert row["ok"] + row["typed"] == 60, row
        assert row["crashes"] == [] and row["hangs"] == [], row
