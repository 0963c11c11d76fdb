"""The [local] extra without surprises: CI's install path takes torch's CPU build, never CUDA.

The resolution check (`pip install --dry-run`) needs a package index, so it runs only when
ASSAY_TEST_PIP_RESOLVE=1; the other checks read files and installed metadata.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from types import SimpleNamespace

import pytest

from assay.providers.local import cuda_build_note

ROOT = Path(__file__).resolve().parents[2]
CPU_PIN = re.compile(r'pip install "torch==([0-9.]+)\+cpu"')


def _ci_lines() -> list[str]:
    return (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()


def test_ci_installs_torch_cpu_build_before_the_local_extra():
    lines = _ci_lines()
    pins = [i for i, line in enumerate(lines) if CPU_PIN.search(line)]
    extra = [i for i, line in enumerate(lines) if "[dev,local]" in line]
    assert pins and extra, "CI must pin torch's +cpu build and then install the local extra"
    assert pins[0] < extra[0]


def test_readme_puts_the_cpu_path_next_to_the_install_command():
    readme = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    at = next(i for i, line in enumerate(readme) if line.startswith("pip install -e '.[local]'"))
    assert "download.pytorch.org/whl/cpu" in readme[at - 1]


def _installed(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def test_an_installed_local_extra_came_without_cuda():
    """Where CI installed the extra (torch present), torch is the CPU build, with no nvidia-*."""
    version = _installed("torch")
    if version is None:
        pytest.skip("torch not installed: the [local] extra is not in this environment")
    nvidia = sorted(
        d.metadata["Name"]
        for d in metadata.distributions()
        if (d.metadata["Name"] or "").lower().startswith("nvidia-")
    )
    assert version.endswith("+cpu") and nvidia == [], (version, nvidia)


@pytest.mark.skipif(os.environ.get("ASSAY_TEST_PIP_RESOLVE") != "1", reason="needs a package index")
def test_pip_resolves_the_ci_path_without_cuda(tmp_path):
    version = CPU_PIN.search("\n".join(_ci_lines())).group(1)
    report = tmp_path / "report.json"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--dry-run",
            "--quiet",
            "--ignore-installed",
            "--report",
            str(report),
            f"torch=={version}+cpu",
            f"{ROOT}[local]",
        ],
        check=True,
        capture_output=True,
        timeout=900,
    )
    names = [item["metadata"]["name"].lower() for item in json.loads(report.read_text())["install"]]
    assert "sentence-transformers" in names
    assert [n for n in names if n.startswith(("nvidia-", "triton", "cuda-"))] == []


def _fake_torch(cuda: str | None, gpu: bool) -> SimpleNamespace:
    return SimpleNamespace(
        __version__="2.13.0",
        version=SimpleNamespace(cuda=cuda),
        cuda=SimpleNamespace(is_available=lambda: gpu),
    )


def test_a_cuda_build_without_a_gpu_is_named_at_load_time():
    note = cuda_build_note(_fake_torch("13.0", gpu=False))
    assert note is not None and "CUDA 13.0 build but no GPU" in note and "whl/cpu" in note
    assert cuda_build_note(_fake_torch("13.0", gpu=True)) is None  # a GPU uses it
    assert cuda_build_note(_fake_torch(None, gpu=False)) is None  # the CPU build


def _readme_semantic_command() -> list[str]:
    """The README's offline-embeddings `assay run` command, joined across its line break."""
    text = (ROOT / "README.md").read_text(encoding="utf-8").replace("\\\n", " ")
    (line,) = [ln for ln in text.splitlines() if "-m bertscore-like" in ln]
    return line.split()[1:]  # without the leading "assay"


def test_the_readme_semantic_command_passes_on_the_quickstart(tmp_path: Path) -> None:
    """README's `-m bertscore-like --embedding-provider local` command, run as written."""
    if _installed("sentence-transformers") is None:
        pytest.skip("the [local] extra is not installed")
    argv = [sys.executable, "-m", "assay", *_readme_semantic_command(), "--no-store", "-q"]
    env = {**os.environ, "ASSAY_HOME": str(tmp_path)}
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "0 errored" in done.stdout


def test_a_metric_on_samples_it_cannot_score_suggests_scoping(tmp_path: Path) -> None:
    """`-m` puts a metric on every sample: the stderr summary says how to scope it."""
    argv = [sys.executable, "-m", "assay", "run", "examples/quickstart/dataset.yml"]
    argv += ["--outputs", "examples/quickstart/outputs.json", "-m", "bertscore-like"]
    argv += ["--embedding-provider", "hashing", "--no-store", "-q", "-f", "json", "-o", os.devnull]
    env = {**os.environ, "ASSAY_HOME": str(tmp_path)}
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 1
    assert "expected_output must be a string for bertscore-like" in done.stderr
    assert "scope it with --tag" in done.stderr
