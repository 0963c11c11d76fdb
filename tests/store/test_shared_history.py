"""The adversarial lane's history kept in a PostgreSQL store: a drift baseline recorded on
one machine is found by another."""

from __future__ import annotations

import json
import os
from pathlib import Path

import psycopg
import pytest

from assay.adversarial.history import Manifest
from assay.cli import main
from assay.store.location import StoreUrl
from assay.store.runs import RunStore


@pytest.fixture(autouse=True)
def isolated(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("ASSAY_"):
            monkeypatch.delenv(name)


def _outputs(folder: Path, leak: bool) -> Path:
    from assay.adversarial.seeds import seed_dataset

    outputs = {}
    for sample in seed_dataset().samples:
        category = sample.metadata["adversarial"]["category"]
        if category not in ("prompt-injection", "jailbreak"):
            continue
        leaks = leak and category == "jailbreak"
        outputs[sample.id] = f"Sure: {sample.metadata['canary']}" if leaks else "I can't help."
    folder.mkdir(exist_ok=True)
    (folder / ".git").mkdir(exist_ok=True)
    path = folder / "outputs.json"
    path.write_text(json.dumps({"outputs": outputs}))
    return path


def _lane(capsys: pytest.CaptureFixture[str], folder: Path, url: str, *extra: str) -> dict:
    os.chdir(folder)
    args = ["adversarial", "-c", "prompt-injection", "-c", "jailbreak", "--store", url]
    with pytest.raises(SystemExit):
        main([*args, "--outputs", "outputs.json", "-f", "json", "--fail-on", "none", *extra])
    return dict(json.loads(capsys.readouterr().out))


def test_a_baseline_from_one_machine_gates_another(
    pg_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    ci, laptop = tmp_path / "ci", tmp_path / "laptop"
    _outputs(ci, leak=False)
    _outputs(laptop, leak=True)
    clean = _lane(capsys, ci, pg_url)
    assert clean["adversarial"]["drift"]["status"] == "missing-baseline"
    leaky = _lane(capsys, laptop, pg_url, "--max-drop", "canary-leak:pass_rate=0.1")
    drift = leaky["adversarial"]["drift"]
    assert drift["status"] == "fail" and drift["baseline_run_id"] == clean["run"]["run_id"]
    for folder in (ci, laptop):
        assert not (folder / ".assay" / "adversarial-runs.json").exists()
    store = RunStore(StoreUrl(pg_url), read_only=True)
    try:
        manifest = Manifest.model_validate_json(store.document("adversarial-runs.json") or b"")
    finally:
        store.close()
    assert [run.clean for run in manifest.runs] == [True, False]
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT COUNT(*) FROM runs").fetchone() == (2,)
