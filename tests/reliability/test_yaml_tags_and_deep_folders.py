"""Issue 33, defect 5: YAML tags and deeply nested Tez folders end in one typed line.

On a7b0681 ``!!timestamp hello`` gave "unexpected AttributeError" (no file named), ``!!bool
maybe`` "unexpected KeyError", ``!!int abc`` was mislabelled "a number is too long to read",
and a Tez folder bundle 1,500 folders deep "unexpected RecursionError" (Python 3.11's os.walk
recursed per folder).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from assay.cli import main


def nested(root: Path, depth: int) -> Path:
    """``depth`` folders one inside the next under ``root`` (made relative to an open folder,
    so no path passes PATH_MAX); the innermost one."""
    folder = root / "deep"
    folder.mkdir()
    fd = os.open(folder, os.O_RDONLY)
    try:
        for _ in range(depth):
            os.mkdir("d", dir_fd=fd)
            inner = os.open("d", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = inner
        os.close(os.open("f.md", os.O_WRONLY | os.O_CREAT, dir_fd=fd))
    finally:
        os.close(fd)
    return folder


def remove_tree(root: Path) -> None:
    """Remove ``root`` without recursion (Python 3.11's shutil.rmtree recurses per folder)."""
    stack, folders = [str(root)], []
    while stack:
        folder = stack.pop()
        folders.append(folder)
        for entry in os.scandir(folder):
            if entry.is_dir(follow_symlinks=False):
                stack.append(entry.path)
            else:
                os.unlink(entry.path)
    for folder in reversed(folders):
        os.rmdir(folder)


def _assay(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    with pytest.raises(SystemExit) as info:
        main(list(args))
    captured = capsys.readouterr()
    return int(info.value.code or 0), captured.err


@pytest.mark.parametrize(
    ("tagged", "problem"),
    [
        ("!!timestamp hello", "'hello' is not a valid !!timestamp value"),
        ("!!bool maybe", "'maybe' is not a valid !!bool value"),
        ("!!int abc", "'abc' is not a valid !!int value"),
        ("!!float xyz", "'xyz' is not a valid !!float value"),
        ("!!timestamp 2024-13-45", "'2024-13-45' is not a valid !!timestamp value"),
        ("!!map 5", "'5' is not a valid !!map value"),
    ],
)
def test_a_tagged_value_the_safe_loader_cannot_build_names_file_line_and_tag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], tagged: str, problem: str
) -> None:
    path = tmp_path / "d.yml"
    path.write_text(
        "schema_version: assay.dataset.v1\nname: t\nsamples:\n"
        f"  - id: a\n    input: {{q: {tagged}}}\n    expected_output: a\n",
        encoding="utf-8",
    )
    code, err = _assay(capsys, "validate", str(path))
    assert code == 2
    assert err.strip() == f"assay: error: {path}: not valid YAML: {problem} (line 5, column 16)"


def test_an_integer_past_the_digit_limit_is_still_too_long_to_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "d.yml"
    path.write_text("name: " + "9" * 5000 + "\n", encoding="utf-8")
    code, err = _assay(capsys, "validate", str(path))
    assert code == 2 and "a number is too long to read (line 1, column 7)" in err


@pytest.mark.parametrize("command", ["validate", "show"])
def test_a_bundle_folder_1500_deep_is_one_typed_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "manifest.json").write_text("{}", encoding="utf-8")
    nested(bundle, 1500)
    try:
        code, err = _assay(capsys, "tez", command, str(bundle))
    finally:
        remove_tree(bundle)
    assert code == 2 and err.strip() == (
        f"assay: error: {bundle}: folders nested deeper than 64 levels"
    )
    assert not os.path.exists(bundle)
