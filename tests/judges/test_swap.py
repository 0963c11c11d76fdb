"""``assay judge swap``: two judges on one calibration set, against scikit-learn."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from . import scripted
from .test_run_judges import biased_codes, bootstrap_interval, people_codes

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.UndefinedMetricWarning")


def test_swap_reports_both_judges_and_their_agreement(tmp_path: Path, openai_server) -> None:
    openai_server.chat_reply = lambda r: (
        scripted.harsh_tone(r) if r["model"] == "judge-biased" else scripted.faithful(r)
    )
    done = subprocess.run(
        [sys.executable, "-m", "assay", "judge", "swap", "--calibration",
         str(scripted.EXAMPLE / "rubric_dataset.yml"), "--from", "judge-biased", "--to",
         "judge-faithful"],
        cwd=tmp_path, env=scripted.cli_env(openai_server.url, tmp_path, "unused"),
        capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    human, judge = people_codes("tone"), biased_codes("tone")
    qwk = cohen_kappa_score(human, judge, labels=[0, 1, 2], weights="quadratic")
    low, high = bootstrap_interval(human, judge, "quadratic")
    biased = lines[lines.index("judge-biased with people:") + 3]
    assert biased == (
        f"  tone: quadratic-weighted kappa {qwk:.2f} (95% CI {low:.2f} to {high:.2f}, n=8)"
    )
    faithful = lines[lines.index("judge-faithful with people:") + 1]
    assert faithful == "  correct: kappa 1.00 (95% CI 1.00 to 1.00, n=8)"
    between = lines[lines.index("judge-biased with judge-faithful:") + 3]
    alpha = krippendorff.alpha(
        reliability_data=np.array([judge, human], dtype=float), level_of_measurement="ordinal"
    )
    kappa = cohen_kappa_score(judge, human)
    assert between == (
        f"  tone: Krippendorff's alpha (ordinal) {alpha:.2f}, unweighted Cohen's kappa "
        f"{kappa:.2f}, n=8"
    )
