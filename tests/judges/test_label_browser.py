"""The label queue in real headless Chromium, by keyboard: ten rows labelled (one with a note)
export to a labels file that ``assay agreement`` reads."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from compare.cdp import Browser, find_chromium
from view.conftest import serving

from . import scripted


@pytest.fixture
def browser(tmp_path):
    executable = find_chromium()
    if executable is None:
        pytest.skip("chromium not installed: apt-get install -y chromium to run the browser tests")
    with Browser(executable, tmp_path / "profile") as running:
        yield running


def _key(browser: Browser, session: str, key: str) -> None:
    for kind in ("keyDown", "keyUp"):
        params = {"type": kind, "key": key}
        if kind == "keyDown" and len(key) == 1:
            params["text"] = key
        browser.send("Input.dispatchKeyEvent", params, session=session)


def _labelled(browser: Browser, session: str) -> int:
    return browser.evaluate(
        session, "document.querySelectorAll('section.item[data-labelled=pass], "
        "section.item[data-labelled=fail]').length",
    )  # fmt: skip


def _until(browser: Browser, session: str, count: int) -> None:
    deadline = time.monotonic() + 20
    while _labelled(browser, session) < count:
        assert time.monotonic() < deadline, "a label was not saved"
        time.sleep(0.05)


def test_ten_rows_by_keyboard_export_to_agreement(tmp_path: Path, openai_server, browser) -> None:
    for name in ("rubric_dataset.yml", "rubric_outputs.json"):
        shutil.copy(scripted.EXAMPLE / name, tmp_path / name)
    openai_server.chat_reply = scripted.lenient
    store = tmp_path / ".assay" / "runs.db"
    env = scripted.cli_env(openai_server.url, tmp_path, "judge-lenient")
    done = subprocess.run(
        [sys.executable, "-m", "assay", "run", "rubric_dataset.yml", "--outputs",
         "rubric_outputs.json", "--store", str(store), "--repetitions", "2", "-f", "json",
         "-o", "r.json", "-q"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    run = json.loads((tmp_path / "r.json").read_text())["run"]["run_id"]
    with serving(store) as server:
        session = browser.open_page(f"{server.url}/label/{run}?rule=random&n=10&annotator=ana")
        assert browser.evaluate(session, "document.querySelectorAll('section.item').length") == 10
        _key(browser, session, "n")
        browser.send("Input.insertText", {"text": "tone is curt"}, session=session)
        _key(browser, session, "Escape")
        verdicts = "ffppfpfpfp"
        for count, key in enumerate(verdicts, start=1):
            _key(browser, session, key)
            _until(browser, session, count)
        assert browser.console_errors() == []
        made = server.labels.labels(run, "rubric")
    assert len(made) == 10 and {lab.annotator for lab in made} == {"ana"}
    assert [lab.label for lab in made] == ["fail" if k == "f" else "pass" for k in verdicts]
    assert made[0].note == "tone is curt" and made[0].labelled_at
    exported = subprocess.run(
        [sys.executable, "-m", "assay", "judge", "labels", run, "--metric", "rubric",
         "--store", str(store), "-o", "labels.csv"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert exported.returncode == 0, exported.stderr
    agreement = subprocess.run(
        [sys.executable, "-m", "assay", "agreement", "labels.csv", "-f", "json"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert agreement.returncode == 0, agreement.stderr
    result = json.loads(agreement.stdout)
    assert result["n_items"] == 10 and result["judges"] == ["judge"]
    [criterion] = result["per_judge"][0]["criteria"]
    assert criterion["accuracy"] == pytest.approx(verdicts.count("p") / 10)  # judge: all pass
