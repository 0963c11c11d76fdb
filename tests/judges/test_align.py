"""``assay judge align``: examples from training disagreements only, agreement before and
after on the held-out items (against scikit-learn), a versioned variant used only when named."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from sklearn.metrics import cohen_kappa_score

from assay.metrics.registry import resolve

from . import scripted

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.UndefinedMetricWarning")

PEOPLE = {f"answer number {i}": i % 3 != 0 for i in range(24)}  # a third fail


def judge(request: dict[str, Any]) -> str:
    """Lenient with the default prompt; follows people once the prompt shows their examples."""
    prompt = request["messages"][-1]["content"]
    answer = re.findall(r"ACTUAL: (.*)\n", prompt)[-1]
    taught = "Examples graded by people" in prompt
    score = (1.0 if PEOPLE[answer] else 0.0) if taught else 1.0
    return json.dumps({"score": score, "reason": "scripted"})


def test_align_measures_before_and_after_on_held_out_items(tmp_path: Path, openai_server):
    samples = [
        {"id": f"s{i:02d}", "input": {"question": f"q {i}"}, "expected_output": "e",
         "metadata": {"answer": answer, "human_pass": passed, "note": "too vague {x}"}}
        for i, (answer, passed) in enumerate(PEOPLE.items())
    ]  # fmt: skip
    (tmp_path / "set.yml").write_text(yaml.safe_dump({"name": "set", "samples": samples}))
    openai_server.chat_reply = judge
    done = subprocess.run(
        [sys.executable, "-m", "assay", "judge", "align", "--calibration", "set.yml",
         "--model", "judge-a", "--examples", "3", "-o", "variant.yml"],
        cwd=tmp_path, env=scripted.cli_env(openai_server.url, tmp_path, "judge-a"),
        capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    variant = yaml.safe_load((tmp_path / "variant.yml").read_text())
    assert variant["schema_version"] == "assay.judge-variant.v1"
    held, examples = variant["held_out"], variant["examples"]
    assert len(held) == 12 and len(examples) == 3 and not set(held) & set(examples)
    by_id = {s["id"]: s["metadata"]["human_pass"] for s in samples}
    assert all(by_id[i] is False for i in examples)  # the lenient judge passed what people failed
    human = [int(by_id[i]) for i in held]
    before = cohen_kappa_score(human, [1] * len(held))  # the default prompt passes everything
    assert variant["before"]["value"] == pytest.approx(before) and variant["before"]["n"] == 12
    assert variant["after"]["value"] == pytest.approx(cohen_kappa_score(human, human))
    # every resample of a constant judge gives kappa 0, of a perfect one 1
    assert (variant["before"]["low"], variant["before"]["high"]) == (0.0, 0.0)
    assert (variant["after"]["low"], variant["after"]["high"]) == (1.0, 1.0)
    assert f"after:  pass: kappa {variant['after']['value']:.2f}" in done.stdout
    template = variant["use"]["prompt_template"]
    assert "{x}" not in template and "(x)" in template  # example text never a placeholder
    metric = resolve(variant["use"])
    assert metric.prompt_template == template  # type: ignore[attr-defined]
    assert variant["version"].startswith("llm-as-judge.v1:")
