"""``-m module:Class`` imports a metric module from the working directory, as ``--sut`` does,
also when assay runs as the installed ``assay`` script (whose ``sys.path`` does not hold the
working directory, unlike ``python -m assay``: ``python -P`` reproduces that here)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from engine.procs import assay_env

METRIC = """
from assay.metrics.base import MetricScore


class Jaccard:
    name = "jaccard"

    def score(self, sample, output):
        a, b = set(str(sample.expected_output).split()), set(output.text.split())
        return MetricScore(len(a & b) / len(a | b) if a | b else 1.0, {})
"""


def test_a_metric_module_beside_the_dataset_is_found(tmp_path: Path) -> None:
    (tmp_path / "mymetrics.py").write_text(METRIC, encoding="utf-8")
    dataset = {
        "name": "d",
        "samples": [{"id": "a", "input": {}, "expected_output": "red fox jumps"}],
    }
    (tmp_path / "d.json").write_text(json.dumps(dataset), encoding="utf-8")
    (tmp_path / "o.json").write_text(json.dumps({"outputs": {"a": "red fox"}}), encoding="utf-8")
    command = [sys.executable, "-P", "-m", "assay", "run", "d.json", "--outputs", "o.json"]
    command += ["-m", "mymetrics:Jaccard", "--no-store", "-f", "json"]
    done = subprocess.run(
        command, cwd=tmp_path, env=assay_env(), capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    (row,) = json.loads(done.stdout)["rows"]
    assert row["scores"]["jaccard"]["score"] == 2 / 3  # {red, fox} of {red, fox, jumps}
