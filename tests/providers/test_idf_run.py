"""``assay run`` prepares IDF-weighted BERTScore once per run, before any sample is scored."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

DATASET = """\
name: idf
metrics:
  - {name: bertscore-like, idf: true}
samples:
  - {id: a, input: {}, expected_output: "the cat sat on the mat"}
  - {id: b, input: {}, expected_output: "the dog ran in the park"}
  - {id: c, input: {}, expected_output: "a bird sang in the tree"}
"""


def _run(tmp_path: Path, *args: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ASSAY_", "OPENAI_"))}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "assay",
            "run",
            "d.yml",
            "--outputs",
            "o.json",
            "--embedding-provider",
            "hashing",
            "-f",
            "json",
            "-q",
            "--store",
            str(tmp_path / "runs.db"),
            *args,
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_idf_metric_is_prepared_before_scoring(tmp_path: Path) -> None:
    (tmp_path / "d.yml").write_text(DATASET, encoding="utf-8")
    (tmp_path / "o.json").write_text(
        json.dumps(
            {"outputs": {"a": "the cat sat on a mat", "b": "a dog ran", "c": "the bird sang"}}
        ),
        encoding="utf-8",
    )
    full = _run(tmp_path, "--run-id", "full")
    metric = full["metrics"][0]
    assert (metric["scored"], metric["errored"]) == (3, 0), full["failures"]
    assert all(row["scores"]["bertscore-like"]["details"]["idf"] for row in full["rows"])
