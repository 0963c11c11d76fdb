"""``--promote-failures``: failed and errored samples become a valid golden dataset."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

from assay.cli import main
from assay.data.loading import load_dataset

from .test_lane_cli import EXAMPLE

DATASET = {
    "name": "support",
    "metrics": ["exact-match"],
    "samples": [
        {
            "id": "ok",
            "input": {"q": "capital of France?"},
            "expected_output": "Paris",
            "metadata": {"tags": ["geo"]},
        },
        {
            "id": "007",
            "input": {"q": "2+2?"},
            "expected_output": "4",
            "metadata": {"owner": "math", "assay": {"note": "kept"}},
        },
        {"id": "broken", "input": {"q": "list?"}, "expected_output": ["not", "a", "string"]},
    ],
}


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(EXAMPLE))
    for name in list(os.environ):
        if name.startswith("ASSAY_"):
            monkeypatch.delenv(name)


def run(capsys: pytest.CaptureFixture[str], *args: str) -> int:
    with pytest.raises(SystemExit) as info:
        main(list(args))
    capsys.readouterr()
    return int(info.value.code or 0)


def setup(tmp_path: Path, answers: dict[str, str]) -> tuple[Path, Path]:
    dataset = tmp_path / "support.yml"
    dataset.write_text(yaml.safe_dump(DATASET))
    outputs = tmp_path / "outputs.json"
    outputs.write_text(json.dumps({"outputs": answers}))
    return dataset, outputs


def test_run_promotes_failed_and_errored_samples(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    secret = "SECRET-ANSWER-TEXT"
    dataset, outputs = setup(tmp_path, {"ok": "Paris", "007": secret, "broken": "x"})
    target = tmp_path / "promoted" / "failures.yml"
    code = run(
        capsys,
        "run",
        str(dataset),
        "--outputs",
        str(outputs),
        "--no-store",
        "--promote-failures",
        str(target),
    )
    assert code == 1  # the errored sample is a captured failure
    promoted = load_dataset(target)  # a valid dataset
    assert promoted.name == "support.failures"
    assert [s.id for s in promoted.samples] == ["007", "broken"]
    first = promoted.samples[0]
    assert first.input == {"q": "2+2?"} and first.expected_output == "4"
    assert first.metadata["owner"] == "math"
    provenance = first.metadata["assay"]["promoted_failure"]
    assert first.metadata["assay"]["note"] == "kept"
    assert provenance["source_dataset"] == "support"
    assert provenance["failed_metrics"] == ["exact-match"]
    assert provenance["errored"] == []
    assert promoted.samples[1].metadata["assay"]["promoted_failure"]["errored"] == ["exact-match"]
    text = target.read_text()
    assert secret not in text and "must be a string" not in text  # no answer, no error text
    assert [m.name for m in promoted.metrics] == ["exact-match"]


def run_with_nothing_failed(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, target: Path
) -> int:
    """``assay run --promote-failures target`` over two samples that both pass."""
    data = dict(DATASET, samples=DATASET["samples"][:2])
    dataset = tmp_path / "support.yml"
    dataset.write_text(yaml.safe_dump(data))
    outputs = tmp_path / "outputs.json"
    outputs.write_text(json.dumps({"outputs": {"ok": "Paris", "007": "4"}}))
    args = ["run", str(dataset), "--outputs", str(outputs), "--no-store"]
    return run(capsys, *args, "--promote-failures", str(target))


def test_nothing_failed_removes_a_stale_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    target = tmp_path / "failures.yml"
    target.write_text("stale")
    assert run_with_nothing_failed(capsys, tmp_path, target) == 0 and not target.exists()


def test_store_backed_run_and_adversarial_lane_promote(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    target = tmp_path / "adv-failures.yml"
    code = run(
        capsys,
        "adversarial",
        "--sut",
        "larkspur_bot:answer",
        "-f",
        "json",
        "--store",
        str(tmp_path / "runs.db"),
        "--no-history",
        "--promote-failures",
        str(target),
    )
    assert code == 0
    promoted = load_dataset(target)
    categories = {s.metadata["adversarial"]["category"] for s in promoted.samples}
    assert categories == {"prompt-injection"}
    assert all(s.metadata["canary"] in s.input["system"] for s in promoted.samples)
    assert "Maintenance acknowledged" not in target.read_text()


@pytest.mark.parametrize("kind", ["link", "pipe"])
def test_nothing_failed_leaves_a_path_that_is_not_a_regular_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, kind: str
) -> None:
    """Only a stale regular file is removed: a link (or a device, a pipe) stays where it is."""
    target = tmp_path / "failures.yml"
    if kind == "link":
        (tmp_path / "elsewhere.yml").write_text("kept")
        target.symlink_to(tmp_path / "elsewhere.yml")
    else:
        os.mkfifo(target)
    assert run_with_nothing_failed(capsys, tmp_path, target) == 0
    assert target.is_symlink() if kind == "link" else target.exists()
