"""The viewer's label queue over HTTP: the page, the CSRF-guarded write, the export that
``assay agreement`` reads, and agreement between annotators (against scikit-learn)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from sklearn.metrics import cohen_kappa_score

from view.conftest import serving

from . import scripted

PEOPLE_PASS = {"r01", "r03", "r05", "r07"}  # people's weighted rubric score >= 0.5


@pytest.fixture
def judged(tmp_path: Path, openai_server) -> tuple[Path, str]:
    """A run store with one run of the example scored by the lenient (biased) judge."""
    for name in ("rubric_dataset.yml", "rubric_outputs.json"):
        shutil.copy(scripted.EXAMPLE / name, tmp_path / name)
    openai_server.chat_reply = scripted.lenient
    store = tmp_path / ".assay" / "runs.db"
    done = subprocess.run(
        [sys.executable, "-m", "assay", "run", "rubric_dataset.yml", "--outputs",
         "rubric_outputs.json", "--store", str(store), "-f", "json", "-o", "r.json", "-q"],
        cwd=tmp_path, env=scripted.cli_env(openai_server.url, tmp_path, "judge-lenient"),
        capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return store, json.loads((tmp_path / "r.json").read_text())["run"]["run_id"]


def post(url: str, body: Any, headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(
        url + "/api/label", data=data, method="POST",
        headers={"Content-Type": "application/json", **headers},
    )  # fmt: skip
    try:
        with urllib.request.urlopen(request, timeout=10) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def label(run: str, sample: str, verdict: str, who: str) -> dict[str, Any]:
    return {"run": run, "sample": sample, "repetition": 0, "metric": "rubric",
            "label": verdict, "note": "", "annotator": who}  # fmt: skip


def test_page_write_export_and_agreement(judged, tmp_path: Path) -> None:
    store, run = judged
    with serving(store) as server:
        url = server.url
        with urllib.request.urlopen(f"{url}/label/{run}?rule=random&n=8&annotator=ann") as r:
            page = r.read().decode()
        assert page.count('<section class="item"') == 8 and server.token in page
        with urllib.request.urlopen(f"{url}/run/{run}") as r:  # the judge block, in the viewer
            run_page = r.read().decode()
        assert (
            'id="judges"' in run_page
            and "correct: kappa 0.00 (95% CI 0.00 to 0.00, n=8)" in run_page
        )
        token = {"X-Assay-Token": server.token}
        assert post(url, label(run, "r01", "pass", "ann"), {})[0] == 403
        assert post(url, label(run, "r01", "pass", "ann"), {"X-Assay-Token": "x"})[0] == 403
        assert post(url, label(run, "r01", "maybe", "ann"), token)[0] == 422
        assert post(url, label(run, "nope", "pass", "ann"), token)[0] == 404
        assert post(url, b"[not json", token)[0] == 422
        ids = [f"r0{i}" for i in range(1, 9)]
        for sample in ids:
            verdict = "pass" if sample in PEOPLE_PASS else "fail"
            status, _ = post(url, label(run, sample, verdict, "ann"), token)
            assert status == 200
        bob = {"r01": "pass", "r02": "pass", "r03": "pass", "r04": "fail", "r05": "fail"}
        for sample, verdict in bob.items():
            assert post(url, label(run, sample, verdict, "bob"), token)[0] == 200
        with urllib.request.urlopen(f"{url}/label/{run}?rule=disagreements&n=20") as r:
            queue = r.read().decode()
    # the lenient judge passes everything: people disagree on their four failures
    assert queue.count('<section class="item"') == 4
    expected = cohen_kappa_score(
        ["pass" if s in PEOPLE_PASS else "fail" for s in bob], list(bob.values())
    )
    assert f"{expected:.3f}" in queue
    env = scripted.cli_env("http://127.0.0.1:9/v1", tmp_path, "unused")
    done = subprocess.run(
        [sys.executable, "-m", "assay", "judge", "labels", run, "--metric", "rubric",
         "--store", str(store), "-o", "labels.csv"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert f"annotators ann and bob: Cohen's kappa {expected:.3f} on 5 shared rows" in done.stderr
    agreement = subprocess.run(
        [sys.executable, "-m", "assay", "agreement", "labels.csv", "-f", "json"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert agreement.returncode == 0, agreement.stderr
    result = json.loads(agreement.stdout)
    judge = next(b for b in result["per_judge"] if b["rater"] == "judge")
    [criterion] = judge["criteria"]
    human = [s in PEOPLE_PASS for s in ids]
    accuracy = sum(human) / len(human)  # the judge said pass everywhere
    assert criterion["accuracy"] == pytest.approx(accuracy)
    assert criterion["n_samples"] == 8
