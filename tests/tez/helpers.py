"""Helpers shared by the tez tests."""

from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def find_tez_data() -> Path | None:
    """``shared/data/tez`` beside the repository root, or ``$ASSAY_TEZ_TEST_DATA``."""
    override = os.environ.get("ASSAY_TEZ_TEST_DATA")
    candidates = [Path(override)] if override else []
    candidates.append(REPO / ".." / "shared" / "data" / "tez")
    for candidate in candidates:
        if (candidate / "test-bundles" / "tip-compliance" / "manifest.json").is_file():
            return candidate.resolve()
    return None


def queries_of(bundles_dir: Path, bundle: str) -> dict[str, str]:
    raw = json.loads((bundles_dir / bundle / "test-queries.json").read_text(encoding="utf-8"))
    rows = raw if isinstance(raw, list) else raw["test_queries"]
    return {row["id"]: row["query"] for row in rows}


def zip_dir(source: Path, target: Path) -> Path:
    """Zip a bundle directory with the bundle root at the archive root."""
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(source.rglob("*")):
            if path.is_file():
                zf.write(path, path.relative_to(source).as_posix())
    return target


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` (or the single file ``root``) with its bytes."""
    if root.is_file():
        return {root.name: root.read_bytes()}
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }
