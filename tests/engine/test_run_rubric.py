"""``assay run`` hands a dataset's top-level ``rubric:`` to the ``rubric`` metric.

The judge is the loopback OpenAI server.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

DATASET = {
    "schema_version": "assay.dataset.v1",
    "name": "rubric.run",
    "metrics": ["rubric"],
    "rubric": [
        {"name": "correct", "requirement": "States the 30-day refund window.", "weight": 3},
        {"name": "polite", "requirement": "Is polite.", "weight": 1},
    ],
    "samples": [
        {"id": "a", "input": {"question": "Refund window?"}, "expected_output": "30 days"},
        {"id": "b", "input": {"question": "Refund window, please?"}, "expected_output": "30 days"},
    ],
}


def test_dataset_rubric_reaches_the_metric(openai_server, tmp_path: Path) -> None:
    openai_server.chat_reply = lambda request: json.dumps(
        {"verdicts": {"correct": "MET", "polite": "UNMET"}, "reason": "ok"}
    )
    (tmp_path / "d.yml").write_text(yaml.safe_dump(DATASET), encoding="utf-8")
    (tmp_path / "o.json").write_text(
        json.dumps({"outputs": {"a": "30 days.", "b": "Thirty days."}}), encoding="utf-8"
    )
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("ASSAY_", "OPENAI_"))},
        "OPENAI_BASE_URL": openai_server.url,
        "OPENAI_API_KEY": "sk-test-not-a-real-key",
        "ASSAY_JUDGE_MODEL": "judge-test",
        "ASSAY_CACHE_DIR": str(tmp_path / "cache"),
    }
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "assay",
            "run",
            "d.yml",
            "--outputs",
            "o.json",
            "-f",
            "json",
            "--no-store",
            "-q",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    rubric = report["metrics"][0]
    assert rubric["name"] == "rubric" and rubric["scored"] == 2 and rubric["errored"] == 0
    # weighted score = 3*1 + 1*0 over 4, for both samples
    assert rubric["mean"] == pytest.approx(0.75)
    assert report["run"]["judge_model"] == "judge-test"
    assert "sk-test-not-a-real-key" not in done.stdout + done.stderr
