"""``assay cache stats`` and ``assay cache clear`` on a real cache file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assay.cli import main
from assay.providers.cache import CACHE_FILE, ProviderCache


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        main(list(args))
    captured = capsys.readouterr()
    return (0 if info.value.code is None else int(info.value.code)), captured.out, captured.err


@pytest.fixture
def filled(tmp_path: Path) -> Path:
    cache = ProviderCache(tmp_path / CACHE_FILE)
    cache.put_many(
        [
            ("k1", "chat", "gpt-4o-mini", b"{}"),
            ("k2", "chat", "gpt-4o-mini", b"{}"),
            ("k3", "embedding", "text-embedding-3-small", b"\x00" * 16),
        ]
    )
    cache.close()
    return tmp_path


def test_stats(filled: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "cache", "stats", "--cache-dir", str(filled), "--format", "json")
    assert code == 0
    data = json.loads(out)
    assert data["entries"] == [
        {"kind": "chat", "model": "gpt-4o-mini", "count": 2, "bytes": 4},
        {"kind": "embedding", "model": "text-embedding-3-small", "count": 1, "bytes": 16},
    ]
    code, out, _ = run(capsys, "cache", "stats", "--cache-dir", str(filled))
    assert "gpt-4o-mini" in out and code == 0


def test_clear_by_kind_then_all(filled: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "cache", "clear", "--cache-dir", str(filled), "--kind", "embedding")
    assert code == 0 and "removed 1 entry" in out
    assert [row[0] for row in ProviderCache(filled / CACHE_FILE).stats()] == ["chat"]
    code, out, _ = run(capsys, "cache", "clear", "--cache-dir", str(filled))
    assert "removed 2 entries" in out
    assert ProviderCache(filled / CACHE_FILE).stats() == []


def test_bad_kind_and_missing_cache(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "cache", "clear", "--cache-dir", str(tmp_path), "--kind", "vectors")
    assert code == 2 and "--kind must be chat or embedding" in err
    code, out, _ = run(capsys, "cache", "clear", "--cache-dir", str(tmp_path / "none"))
    assert code == 0 and "nothing to clear" in out
