"""The README's calibration and Tez commands run as written on the shipped examples.

Each line of the README block is run in a subprocess (``python -m assay`` for ``assay``) from a
fresh copy of ``examples/``, so ``--write``-style side effects never touch the checkout. The
key number each prints is computed here independently (scikit-learn, the ``krippendorff``
package, the published table, or a count of the example's claims).
"""

from __future__ import annotations

import csv
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import krippendorff
import numpy as np
import pytest
import yaml
from sklearn.metrics import cohen_kappa_score

REPO = Path(__file__).resolve().parents[2]
SECTION = "## Judge calibration and Tez bundles"


def readme_commands() -> list[str]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    block = text.split(SECTION, 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    return [line.split("  #", 1)[0].strip() for line in block.splitlines() if line.strip()]


def command(prefix: str) -> str:
    found = [c for c in readme_commands() if c.startswith(prefix)]
    assert len(found) == 1, f"README has no single line starting {prefix!r}: {readme_commands()}"
    return found[0]


def run(line: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    args = shlex.split(line)
    assert args[0] == "assay"
    leak = ("ASSAY_", "OPENAI_", "PYTEST_CURRENT_TEST")
    clean = {k: v for k, v in os.environ.items() if not k.startswith(leak)}
    clean["PYTHONPATH"] = str(REPO / "src")
    return subprocess.run(
        [sys.executable, "-m", "assay", *args[1:]],
        cwd=cwd,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    shutil.copytree(REPO / "examples", tmp_path / "examples")
    return tmp_path


def _number(pattern: str, text: str) -> float:
    match = re.search(pattern, text)
    assert match, f"{pattern!r} not in output:\n{text}"
    return float(match.group(1))


def test_agreement_on_the_labels_example(workdir: Path) -> None:
    done = run(command("assay agreement examples/calibration/labels.csv"), workdir)
    assert done.returncode == 0, done.stderr
    rows = list(csv.DictReader((REPO / "examples/calibration/labels.csv").open()))
    alphas = []
    for criterion, level, domain in (
        ("correct", "nominal", ["MET", "UNMET"]),  # CANNOT_ASSESS is excluded (missing)
        ("clarity", "ordinal", list("12345")),
        ("tone", "nominal", ["casual", "curt", "formal"]),
    ):
        mine = [r for r in rows if r["criterion"] == criterion]
        matrix = np.array(
            [
                [domain.index(r[j]) if r[j] in domain else np.nan for r in mine]
                for j in ("judge-a", "judge-b")
            ]
        )
        alphas.append(
            krippendorff.alpha(
                reliability_data=matrix, level_of_measurement=level, value_domain=range(len(domain))
            )
        )
    shown = _number(r"Mean Krippendorff's alpha \(macro over criteria\): (\S+)", done.stdout)
    assert shown == pytest.approx(np.mean(alphas), abs=5e-4)
    assert "Bootstrap (1000 item-level resamples, seed 7" in done.stdout


def test_agreement_on_the_krippendorff_example(workdir: Path) -> None:
    done = run(command("assay agreement examples/calibration/krippendorff2011.csv"), workdir)
    assert done.returncode == 0, done.stderr
    assert re.search(r"severity\s+11\s+0\.743\s+0\.815\s+0\.849", done.stdout), done.stdout


# answer -> verdicts of the two judge models, (correct, cites_policy, tone)
JUDGED = {
    "r01": (("MET", "MET", "good"), ("MET", "MET", "good")),
    "r02": (("UNMET", "UNMET", "ok"), ("UNMET", "UNMET", "ok")),
    "r03": (("MET", "MET", "good"), ("MET", "MET", "ok")),
    "r04": (("UNMET", "MET", "poor"), ("UNMET", "MET", "poor")),
    "r05": (("MET", "UNMET", "good"), ("MET", "UNMET", "ok")),
    "r06": (("UNMET", "MET", "ok"), ("MET", "MET", "ok")),
    "r07": (("MET", "MET", "good"), ("MET", "MET", "good")),
    "r08": (("UNMET", "UNMET", "poor"), ("UNMET", "UNMET", "poor")),
}
CRITERIA = ("correct", "cites_policy", "tone")


def test_calibrate_on_the_rubric_example(workdir: Path, openai_server: Any) -> None:
    line = command("assay calibrate examples/calibration/rubric_dataset.yml")
    models = re.findall(r"--judge-model (\S+)", line)
    assert len(models) == 2
    data = yaml.safe_load((REPO / "examples/calibration/rubric_dataset.yml").read_text())
    by_answer = {s["metadata"]["answer"]: s["id"] for s in data["samples"]}

    def reply(request: dict[str, Any]) -> str:
        prompt = request["messages"][0]["content"]
        answer = re.search(r"ANSWER: (.*)\n", prompt).group(1)
        verdicts = JUDGED[by_answer[answer]][models.index(request["model"])]
        return json.dumps({"verdicts": dict(zip(CRITERIA, verdicts)), "reason": "r"})

    openai_server.chat_reply = reply
    done = run(
        line,
        workdir,
        OPENAI_BASE_URL=openai_server.url,
        OPENAI_API_KEY="sk-test-not-a-real-key",
        ASSAY_CACHE_DIR=str(workdir / "cache"),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    for j, model in enumerate(models):
        kappas = []
        for c, name in enumerate(CRITERIA):
            human = [s["metadata"]["labels"][name] for s in data["samples"]]
            judge = [JUDGED[s["id"]][j][c] for s in data["samples"]]
            labels = ["poor", "ok", "good"] if name == "tone" else ["MET", "UNMET"]
            kappas.append(cohen_kappa_score(human, judge, labels=labels))
        shown = _number(rf"{re.escape(model)}\s+Acc \(micro\) \S+\s+Mean kappa \(macro\) (\S+)",
                        done.stdout)  # fmt: skip
        assert shown == pytest.approx(np.mean(kappas), abs=5e-4)


def test_tez_score_on_the_example_bundle(workdir: Path) -> None:
    done = run(command("assay tez score examples/tez/novatech"), workdir)
    assert done.returncode == 0, done.stderr
    # claims grounded per turn, counted by reading examples/tez/session.json against the bundle:
    # grounded-01 2/2, grounded-03 2/2, cross-reference-01 5/5, abstention-02 1/1,
    # hallucination-trap-01 0/1 (a fabricated quote), grounded-02 0/3 (cited to the wrong places)
    per_turn = [2 / 2, 2 / 2, 5 / 5, 1 / 1, 0 / 1, 0 / 3]
    shown = _number(r"session means over 6 queries: groundedness (\S+),", done.stdout)
    assert shown == pytest.approx(np.mean(per_turn), abs=5e-4)
    assert not (workdir / "examples/tez/novatech/extensions/com.ragu.eval-metrics").exists()
