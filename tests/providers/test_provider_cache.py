"""The SQLite provider cache: WAL, modes, and keys that change with every request parameter."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from assay.providers.cache import CACHE_FILE, ProviderCache, cache_key, close_all, open_cache

BASE = {
    "kind": "chat",
    "provider": "openai-compatible",
    "base_url": "http://127.0.0.1:1/v1",
    "model": "m",
    "messages": [{"role": "user", "content": "hi"}],
    "params": {"temperature": 0, "seed": 42},
    "template_version": "llm-as-judge.v1:abc",
}


def test_round_trip_and_wal(tmp_path: Path) -> None:
    cache = ProviderCache(tmp_path / "c.sqlite3")
    cache.put("k1", "chat", "m", b"one")
    cache.put_many([("k2", "embedding", "e", b"two"), ("k3", "embedding", "e", b"three")])
    assert cache.get("k1") == b"one"
    assert cache.get_many(["k2", "k3", "missing"]) == {"k2": b"two", "k3": b"three"}
    assert cache.count() == 3
    cache.close()
    mode = sqlite3.connect(tmp_path / "c.sqlite3").execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"


def test_modes(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    ProviderCache(path).put("k", "chat", "m", b"v")
    refresh = ProviderCache(path, mode="refresh")
    assert refresh.get("k") is None  # refresh never reads...
    refresh.put("k", "chat", "m", b"new")  # ...but writes
    assert ProviderCache(path).get("k") == b"new"
    off = ProviderCache(tmp_path / "off.sqlite3", mode="off")
    off.put("k", "chat", "m", b"v")
    assert off.get("k") is None
    assert not (tmp_path / "off.sqlite3").exists()  # off never even creates the file


def test_open_cache_reuses_one_object_per_directory_and_mode(tmp_path: Path) -> None:
    first = open_cache(tmp_path, "use")
    assert open_cache(tmp_path, "use") is first
    assert open_cache(tmp_path, "refresh") is not first
    assert first.path == tmp_path / CACHE_FILE
    close_all()


def test_key_is_independent_of_mapping_order() -> None:
    reordered = dict(reversed(list(BASE.items())))
    reordered["params"] = {"seed": 42, "temperature": 0}
    assert cache_key(reordered) == cache_key(BASE)


@settings(max_examples=100, deadline=None)
@given(
    field=st.sampled_from(sorted(BASE)),
    value=st.one_of(
        st.text(max_size=20),
        st.integers(),
        st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
    ),
)
def test_changing_any_keyed_field_changes_the_key(field: str, value: object) -> None:
    changed = {**BASE, field: value}
    if changed[field] == BASE[field]:
        return
    assert cache_key(changed) != cache_key(BASE)
