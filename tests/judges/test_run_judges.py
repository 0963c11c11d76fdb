"""``assay run`` with a calibrated judge metric: the judges block in every format, its numbers
against scikit-learn, the gate on the judge, the cache, and judge swaps on --compare.

The judge is the loopback OpenAI server, scripted per model (tests/judges/scripted.py).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from sklearn.metrics import cohen_kappa_score

from . import scripted

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.UndefinedMetricWarning")

CODES = {"MET": 1, "UNMET": 0, "poor": 0, "ok": 1, "good": 2}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    for name in ("rubric_dataset.yml", "rubric_outputs.json"):
        shutil.copy(scripted.EXAMPLE / name, tmp_path / name)
    return tmp_path


def with_gate(project: Path, gate: dict[str, Any], **metric: Any) -> None:
    path = project / "rubric_dataset.yml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["gate"] = gate
    data["metrics"][0].update(metric)
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")


def assay(project: Path, url: str, model: str, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "assay", "run", "rubric_dataset.yml"]
    command += ["--outputs", "rubric_outputs.json", "-f", "json", "-o", "r.json", *args]
    return subprocess.run(
        command,
        cwd=project,
        env=scripted.cli_env(url, project, model),
        capture_output=True,
        text=True,
        timeout=180,
    )


def judges_of(project: Path, name: str = "r.json") -> list[dict[str, Any]]:
    return json.loads((project / name).read_text(encoding="utf-8"))["judges"]


def people_codes(criterion: str) -> list[int]:
    return [CODES[labels[criterion]] for labels in scripted.people().values()]


def biased_codes(criterion: str) -> list[int]:
    def asked(answer: str) -> dict[str, Any]:
        return {"messages": [{"content": f"ANSWER: {answer}\n"}]}

    verdicts = [json.loads(scripted.harsh_tone(asked(a)))["verdicts"] for a in scripted.people()]
    return [CODES[v[criterion]] for v in verdicts]


def bootstrap_interval(human: list[int], judge: list[int], weights: str | None) -> tuple:
    """The percentile interval of 1000 item resamples, seed 0, with scikit-learn's kappa."""
    h, j = np.array(human), np.array(judge)
    draws = np.random.default_rng(0).integers(0, len(h), (1000, len(h)))
    values = []
    for idx in draws:
        labels = [0, 1, 2] if weights else [0, 1]
        with np.errstate(all="ignore"):
            value = cohen_kappa_score(h[idx], j[idx], labels=labels, weights=weights)
        if np.isfinite(value):
            values.append(value)
    low, high = np.percentile(values, [2.5, 97.5])
    return float(low), float(high)


def test_biased_judge_block_matches_sklearn_in_every_format(project, openai_server) -> None:
    openai_server.chat_reply = scripted.harsh_tone
    done = assay(
        project, openai_server.url, "judge-biased", "--also", "md=r.md", "--also", "html=r.html"
    )
    assert done.returncode == 0, done.stderr
    [block] = judges_of(project)
    assert block["status"] == "measured" and block["judge"]["model"] == "judge-biased"
    assert block["n_labelled"] == 8 and block["n_judged"] == 8
    found = {a["criterion"]: a for a in block["agreement"]}
    for criterion, weights in (("correct", None), ("cites_policy", None), ("tone", "quadratic")):
        human, judge = people_codes(criterion), biased_codes(criterion)
        labels = [0, 1, 2] if weights else [0, 1]
        with np.errstate(all="ignore"):
            expected = cohen_kappa_score(human, judge, labels=labels, weights=weights)
        assert found[criterion]["value"] == pytest.approx(expected, abs=1e-12)
        assert found[criterion]["n"] == 8
        low, high = bootstrap_interval(human, judge, weights)
        assert found[criterion]["low"] == pytest.approx(low, abs=1e-9)
        assert found[criterion]["high"] == pytest.approx(high, abs=1e-9)
    assert found["tone"]["statistic"] == "quadratic-weighted kappa"
    assert found["correct"]["statistic"] == "kappa"
    assert block["lowest_bound"] == min(a["low"] for a in block["agreement"])
    # the judge passes everything people pass and fails none of what they fail... by hand:
    # people pass (weighted rubric score >= 0.5) r01 r03 r05 r07; the biased judge's scores
    p = block["pass_agreement"]
    assert (p["true_pass"] + p["false_fail"], p["false_pass"] + p["true_fail"]) == (4, 4)
    md = (project / "r.md").read_text(encoding="utf-8")
    html = (project / "r.html").read_text(encoding="utf-8")
    line = f"quadratic-weighted kappa {found['tone']['value']:.2f}"
    assert "## Judges: agreement with people" in md and line in md
    assert 'id="judges"' in html and line in html
    assert "assay: judge rubric: measured: agreement with people" in done.stderr


def test_min_judge_agreement_fails_the_biased_judge_and_passes_the_faithful(
    project, openai_server
) -> None:
    openai_server.chat_reply = scripted.by_model
    with_gate(project, {"min_judge_agreement": {"rubric": 0.6}, "min_pass_rate": {"rubric": 0}})
    biased = assay(project, openai_server.url, "judge-lenient")
    assert biased.returncode == 1, biased.stderr
    assert (
        "min_judge_agreement"
        in json.loads((project / "r.json").read_text())["gate"]["failures"][0]["rule"]
    )
    assert "rubric judge agreement 0.0000 (lowest interval bound) is below" in biased.stderr
    faithful = assay(project, openai_server.url, "judge-faithful")
    assert faithful.returncode == 0, faithful.stderr
    [block] = judges_of(project)
    assert block["lowest_bound"] == 1.0
    # people fail 4 of 8 answers and so does the faithful judge: nothing to correct
    assert block["pass_rate"]["raw"] == 0.5 and block["pass_rate"]["corrected"] == 0.5


def test_the_calibration_is_judged_once_and_then_read_from_the_cache(
    project, openai_server
) -> None:
    openai_server.chat_reply = scripted.by_model
    first = assay(project, openai_server.url, "judge-faithful", "--no-cache")
    assert first.returncode == 0, first.stderr
    calls = openai_server.total_calls()
    assert calls == 16  # 8 answers scored + 8 calibration items judged (no provider cache)
    second = assay(project, openai_server.url, "judge-faithful", "--no-cache")
    assert second.returncode == 0, second.stderr
    assert openai_server.total_calls() - calls == 8  # the run's answers only
    [block] = judges_of(project)
    assert block["status"] == "cached" and block["lowest_bound"] == 1.0
    other = assay(project, openai_server.url, "judge-lenient")  # another judge: measured anew
    assert judges_of(project)[0]["status"] == "measured", other.stderr


def test_missing_calibration_is_one_line_and_require_calibration_fails(
    project, openai_server
) -> None:
    path = project / "rubric_dataset.yml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["metrics"] = [{"name": "rubric"}]
    data["gate"] = {"require_calibration": True, "min_pass_rate": {"rubric": 0}}
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    done = assay(project, openai_server.url, "judge-test")
    assert done.returncode == 1
    [block] = judges_of(project)
    assert block["status"] == "missing" and "\n" not in block["note"]
    assert "assay: judge rubric: missing: no calibration set" in done.stderr
    assert "require_calibration" in done.stderr or "no measured calibration" in done.stderr


def test_a_calibration_file_that_is_not_there_exits_2_naming_it(project, openai_server) -> None:
    with_gate(project, {}, calibration="nowhere.yml")
    done = assay(project, openai_server.url, "judge-test")
    assert done.returncode == 2
    assert "option 'calibration': no such file 'nowhere.yml'" in done.stderr
    assert "Traceback" not in done.stderr and openai_server.total_calls() == 0


def test_a_calibration_set_without_labels_is_an_errored_block(project, openai_server) -> None:
    (project / "plain.yml").write_text(
        yaml.safe_dump(
            {
                "name": "plain",
                "samples": [
                    {
                        "id": "a",
                        "input": {"q": "q"},
                        "expected_output": "e",
                        "metadata": {"answer": "x"},
                    }
                ],
            }
        ),
        encoding="utf-8",
    )
    with_gate(project, {"min_judge_agreement": 0.2}, calibration="plain.yml")
    done = assay(project, openai_server.url, "judge-test")
    assert done.returncode == 1, done.stderr
    [block] = judges_of(project)
    assert block["status"] == "errored" and "no sample carries human labels" in block["note"]
    assert "calibration errored" in done.stderr


def test_compare_across_judges_warns_and_attributes_nothing(project, openai_server) -> None:
    openai_server.chat_reply = scripted.by_model
    reference = assay(project, openai_server.url, "judge-lenient", "-o", "ref.json")
    assert reference.returncode == 0, reference.stderr
    with_gate(project, {"min_pass_rate": {"rubric": 0}})
    # the faithful judge fails 4 answers the lenient one passed: 4 flips, all the judge's
    done = assay(project, openai_server.url, "judge-faithful", "--compare", "ref.json")
    assert done.returncode == 0, done.stderr
    assert "judge changed for 'rubric' (model): judge-lenient -> judge-faithful" in done.stderr
    report = json.loads((project / "r.json").read_text())
    assert report["comparison"]["counts"]["pass_to_fail"] == 4
    allowed = assay(
        project,
        openai_server.url,
        "judge-faithful",
        "--compare",
        "ref.json",
        "--allow-judge-change",
    )
    assert allowed.returncode == 1, allowed.stderr
    assert "went from pass to fail" in allowed.stderr
    same = assay(project, openai_server.url, "judge-lenient", "--compare", "ref.json")
    assert "judge changed" not in same.stderr


def test_a_judge_that_cannot_be_measured_shows_the_last_measurement_as_stale(
    project, openai_server
) -> None:
    def replies(request: dict[str, Any]) -> str:
        return "not a verdict" if request["model"] == "judge-broken" else scripted.faithful(request)

    openai_server.chat_reply = replies
    with_gate(project, {"min_judge_agreement": 0.5, "max_failures": 100})
    first = assay(project, openai_server.url, "judge-faithful")
    assert first.returncode == 0, first.stderr
    done = assay(project, openai_server.url, "judge-broken")
    assert done.returncode == 1, done.stderr
    [block] = judges_of(project)
    assert block["status"] == "stale" and "\n" not in block["note"]
    assert block["note"].startswith("stale: re-measuring failed (")
    assert "correct: kappa 1.00" in block["note"]  # the faithful judge's, shown
    assert block["lowest_bound"] is None  # never trusted by the gate
    assert "judge agreement n/a (calibration stale)" in done.stderr
