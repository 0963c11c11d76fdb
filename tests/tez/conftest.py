"""Fixtures for the tez tests: the CC BY 4.0 test bundles in ../shared/data/tez, and copies."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from tez.helpers import find_tez_data

DATA = Path(__file__).resolve().parent / "data"


@pytest.fixture(scope="session")
def tez_data() -> Path:
    """``shared/data/tez`` next to the repository (skips when the checkout lacks it)."""
    found = find_tez_data()
    if found is None:
        pytest.skip(
            "Tez test data not found: expected ../shared/data/tez beside the repository "
            "(or ASSAY_TEZ_TEST_DATA)"
        )
    return found


@pytest.fixture(scope="session")
def bundles_dir(tez_data: Path) -> Path:
    return tez_data / "test-bundles"


@pytest.fixture(scope="session")
def responses() -> dict[str, Any]:
    """Hand-written responses: bundle -> query id -> kind -> text."""
    return yaml.safe_load((DATA / "responses.yaml").read_text(encoding="utf-8"))


@pytest.fixture
def bundle_copy(bundles_dir: Path, tmp_path: Path):
    """A writable copy of a test bundle directory (name -> path)."""

    def make(name: str = "tip-compliance") -> Path:
        target = tmp_path / name
        suffix = 1
        while target.exists():
            suffix += 1
            target = tmp_path / f"{name}-{suffix}"
        shutil.copytree(bundles_dir / name, target)
        return target

    return make
