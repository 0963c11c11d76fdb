"""Over-deep YAML and JSON are refused before any recursive parser sees them.

The issue's reproducers made ``assay validate`` die with a segmentation fault (exit 139); now
every reader of outside data answers with its own InputError, and the CLI with exit 2 and one
line naming the file.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.calibration.loaders import load_labels
from assay.compare.baseline import load_report
from assay.data.bounded import MAX_DEPTH, json_depth_problem, loads_json, yaml_depth_problem
from assay.data.loading import load_dataset, load_outputs
from assay.errors import InputError
from assay.tez.session import load_expectations, load_session
from engine.procs import run_assay

DEEP_YAML_MAPS = "a: " + "{b: " * 50_000 + "1" + "}" * 50_000
DEEP_FLOW_LISTS = "[" * 30_000 + "]" * 30_000
DEEP_BLOCK_LISTS = "- " * 30_000 + "1\n"


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("maps.yml", DEEP_YAML_MAPS),
        ("lists.yml", DEEP_FLOW_LISTS),
        ("block.yaml", DEEP_BLOCK_LISTS),
        ("lists.json", DEEP_FLOW_LISTS),
        ("lists.jsonl", DEEP_FLOW_LISTS + "\n"),
        ("maps.txt", DEEP_YAML_MAPS),
    ],
    ids=["maps.yml", "lists.yml", "block.yaml", "lists.json", "lists.jsonl", "maps.txt"],
)
def test_validate_refuses_deep_documents_with_exit_2(tmp_path: Path, name: str, text: str) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    done = run_assay(["validate", str(path)], cwd=tmp_path)
    assert done.returncode == 2, done.stderr[-500:]
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and str(path) in lines[0]
    assert f"nested more than {MAX_DEPTH} levels deep" in lines[0]


LOADERS: dict[str, Callable[[Path], Any]] = {
    "dataset": load_dataset,
    "outputs": load_outputs,
    "labels": load_labels,
    "session": load_session,
    "expectations": load_expectations,
    "report": load_report,
}


@pytest.mark.parametrize("loader", sorted(LOADERS))
@pytest.mark.parametrize(
    ("suffix", "text"), [(".yml", DEEP_YAML_MAPS), (".json", DEEP_FLOW_LISTS)], ids=["yml", "json"]
)
def test_every_reader_raises_its_input_error(
    tmp_path: Path, loader: str, suffix: str, text: str
) -> None:
    path = tmp_path / f"doc{suffix}"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match="nested more than"):
        LOADERS[loader](path)


def test_huge_integers_and_deep_json_are_input_errors() -> None:
    def fail(message: str) -> InputError:
        return InputError(message, file="x.json")

    with pytest.raises(InputError, match="number is too long"):
        loads_json('{"a": ' + "9" * 5000 + "}", fail)
    with pytest.raises(InputError, match="nested more than"):
        loads_json(b"[" * 200 + b"]" * 200, fail)
    with pytest.raises(InputError, match="not valid UTF-8"):
        loads_json(b"\xff[]", fail)


# -------------------------------------------------------------------------- the depth scan is exact


def depth(value: Any) -> int:
    """Nesting depth of containers, computed the obvious recursive way (small values only)."""
    if isinstance(value, dict):
        return 1 + max((depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((depth(v) for v in value), default=0)
    return 0


VALUES = st.recursive(
    st.none() | st.integers() | st.text(alphabet='ab[]{}"\\:- \n#', max_size=6),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(st.text(alphabet='ab[]{}"', max_size=3), children, max_size=3)
    ),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(value=VALUES, limit=st.integers(min_value=0, max_value=6))
def test_json_depth_scan_matches_the_real_depth(value: Any, limit: int) -> None:
    problem = json_depth_problem(json.dumps(value), limit)
    assert (problem is not None) == (depth(value) > limit)


def token_scan(text: str, limit: int) -> bool:
    """Over ``limit``? Token by token from the left: a string (to its closing quote, or to the
    end when unterminated) is skipped, an opening bracket counts up, a closing one down."""
    depth, index = 0, 0
    while index < len(text):
        char = text[index]
        if char == '"':
            index += 1
            while index < len(text) and text[index] != '"':
                index += 2 if text[index] == "\\" else 1
        elif char in "[{":
            depth += 1
            if depth > limit:
                return True
        elif char in "]}":
            depth -= 1
        index += 1
    return False


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet='ab[]{}"\\', max_size=40), limit=st.integers(0, 4))
def test_json_depth_scan_of_any_text_matches_a_token_scan(text: str, limit: int) -> None:
    """Invalid JSON too (stray quotes and backslashes, unterminated strings)."""
    assert (json_depth_problem(text, limit) is not None) == token_scan(text, limit)


@settings(max_examples=200, deadline=None)
@given(value=VALUES, limit=st.integers(min_value=0, max_value=6), flow=st.booleans())
def test_yaml_depth_scan_matches_the_real_depth(value: Any, limit: int, flow: bool) -> None:
    text = yaml.safe_dump(value, default_flow_style=flow)
    problem = yaml_depth_problem(text, yaml.SafeLoader, limit)
    assert (problem is not None) == (depth(value) > limit)


def test_a_yaml_integer_past_the_digit_limit_is_an_input_error(tmp_path: Path) -> None:
    # found by the long fuzz run (python -m fuzz --surface dataset, case 9696)
    path = tmp_path / "d.yml"
    path.write_text("name: d\nsamples: [" + "9" * 5000 + "]\n", encoding="utf-8")
    with pytest.raises(InputError, match="number is too long"):
        load_dataset(path)
