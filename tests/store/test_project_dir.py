"""The project directory: ``.assay/`` found by walking up like git, or named by ASSAY_HOME."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from assay.store.project import project_dir, project_root
from engine.procs import run_assay

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "quickstart"


def test_the_nearest_marker_decides(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ASSAY_HOME", raising=False)
    deep = tmp_path / "repo" / "pkg" / "evals" / "deeper"
    deep.mkdir(parents=True)
    assert project_root(deep) is None
    assert project_dir(deep) == deep / ".assay"

    (tmp_path / "repo" / ".git").mkdir()
    assert project_dir(deep) == tmp_path / "repo" / ".assay"
    (tmp_path / "repo" / "pkg" / "pyproject.toml").write_text("", encoding="utf-8")
    assert project_dir(deep) == tmp_path / "repo" / "pkg" / ".assay"
    # An existing .assay/ nearer than any marker wins, as a nearer .git would for git.
    (tmp_path / "repo" / "pkg" / "evals" / ".assay").mkdir()
    assert project_dir(deep) == tmp_path / "repo" / "pkg" / "evals" / ".assay"
    # A file named .assay is not a project directory.
    (deep / ".assay").write_text("", encoding="utf-8")
    assert project_root(deep) == tmp_path / "repo" / "pkg" / "evals"


def test_the_working_directory_root_gives_a_relative_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ASSAY_HOME", raising=False)
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path)
    assert project_dir() == Path(".assay")
    monkeypatch.chdir(tmp_path / "sub")
    assert project_dir() == tmp_path / ".assay"
    monkeypatch.setenv("ASSAY_HOME", str(tmp_path / "elsewhere"))
    assert project_dir() == tmp_path / "elsewhere"


def _project(tmp_path: Path) -> Path:
    """A project root (pyproject.toml) with the quickstart in evals/quickstart."""
    root = tmp_path / "project"
    (root / "evals").mkdir(parents=True)
    (root / "pyproject.toml").write_text("[project]\nname = 'demo'\n", encoding="utf-8")
    shutil.copytree(EXAMPLE, root / "evals" / "quickstart")
    return root


def test_runs_and_baselines_live_in_the_project_directory_from_any_sub_folder(
    tmp_path: Path,
) -> None:
    root = _project(tmp_path)
    work = root / "evals" / "quickstart"
    args = ["run", "dataset.yml", "--outputs", "outputs.json", "-q", "--run-id", "from-sub"]
    done = run_assay([*args, "-f", "json", "-o", "report.json"], cwd=work)
    assert done.returncode == 0, done.stderr
    assert (root / ".assay" / "runs.db").is_file()
    assert not (work / ".assay").exists()

    elsewhere = root / "evals"
    listing = run_assay(["runs"], cwd=elsewhere)
    assert listing.returncode == 0, listing.stderr
    header, row = listing.stdout.splitlines()
    assert header.split()[0] == "RUN" and row.split()[0] == "from-sub"
    again = run_assay(["report", "from-sub", "-f", "json"], cwd=root)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["run"]["run_id"] == "from-sub"

    pinned = run_assay(["baseline", "set", "quickstart/report.json"], cwd=elsewhere)
    assert pinned.returncode == 0, pinned.stderr
    assert (root / ".assay" / "baselines" / "quickstart.support-assistant.json").is_file()
    shown = run_assay(["baseline", "show"], cwd=work)
    assert shown.returncode == 0 and "quickstart.support-assistant" in shown.stdout
    cache = run_assay(["cache", "stats"], cwd=work)
    assert cache.returncode == 0 and cache.stdout.startswith(str(root / ".assay") + "/")


def test_assay_home_names_the_directory(tmp_path: Path) -> None:
    root = _project(tmp_path)
    work = root / "evals" / "quickstart"
    home = tmp_path / "shared-home"
    env = {"ASSAY_HOME": str(home)}
    args = ["run", "dataset.yml", "--outputs", "outputs.json", "-q", "--run-id", "homed"]
    done = run_assay([*args, "-o", "report.md"], cwd=work, env=env)
    assert done.returncode == 0, done.stderr
    assert (home / "runs.db").is_file() and not (root / ".assay").exists()
    listing = run_assay(["runs"], cwd=tmp_path, env=env)
    assert "homed" in listing.stdout
    # Without ASSAY_HOME the project's own (still empty) directory is used.
    plain = run_assay(["runs"], cwd=work)
    assert "homed" not in plain.stdout
