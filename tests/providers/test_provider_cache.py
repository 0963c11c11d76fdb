"""The SQLite provider cache: WAL, modes, and keys that change with every request parameter."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
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


def test_a_value_that_is_not_a_blob_is_a_miss_and_is_replaced(tmp_path: Path) -> None:
    """A cache edited by hand (a value stored as TEXT, a number or NULL) is asked again, never
    a crash of every row that reads it."""
    cache = ProviderCache(tmp_path / "c.sqlite3")
    cache.put_many([(key, "chat", "m", b"ok") for key in ("text", "number", "null", "kept")])
    cache.close()
    with sqlite3.connect(tmp_path / "c.sqlite3") as db:
        db.execute("UPDATE entries SET value = 'a text' WHERE key = 'text'")
        db.execute("UPDATE entries SET value = 7 WHERE key = 'number'")
    cache = ProviderCache(tmp_path / "c.sqlite3")
    assert cache.get_many(["text", "number", "kept"]) == {"kept": b"ok"}
    cache.put("text", "chat", "m", b"again")
    assert cache.get("text") == b"again"
    cache.close()


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


def _rows_on_disk(path: Path) -> int:
    """Committed rows, read through a second connection (what another process would see)."""
    with sqlite3.connect(path) as conn:
        return int(conn.execute("SELECT COUNT(*) FROM entries").fetchone()[0])


def test_deferred_rows_are_read_back_at_once_and_committed_in_batches(tmp_path: Path) -> None:
    from assay.providers import cache as cache_module

    path = tmp_path / "c.sqlite3"
    cache = ProviderCache(path)
    cache.put("first", "chat", "m", b"1")  # an immediate put commits
    cache.put("k0", "chat", "m", b"v0", defer=True)
    assert cache.get("k0") == b"v0" and cache.get_many(["k0", "first"]) == {
        "k0": b"v0",
        "first": b"1",
    }
    assert _rows_on_disk(path) == 1  # not yet committed
    for i in range(1, cache_module.DEFER_ROWS):
        cache.put(f"k{i}", "chat", "m", b"v", defer=True)
    assert _rows_on_disk(path) == 1 + cache_module.DEFER_ROWS  # the 64th row sent the batch
    cache.put("late", "chat", "m", b"v", defer=True)
    assert cache.count() == 2 + cache_module.DEFER_ROWS  # count commits what is pending
    cache.put("last", "chat", "m", b"v", defer=True)
    cache.close()
    assert _rows_on_disk(path) == 3 + cache_module.DEFER_ROWS
    assert ProviderCache(path).get("last") == b"v"


def test_a_deferred_row_waits_at_most_half_a_second(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from assay.providers import cache as cache_module

    clock = [100.0]
    monkeypatch.setattr(cache_module.time, "monotonic", lambda: clock[0])
    path = tmp_path / "c.sqlite3"
    cache = ProviderCache(path)
    cache.put("a", "chat", "m", b"1", defer=True)
    clock[0] += 0.4
    cache.put("b", "chat", "m", b"2", defer=True)
    assert not path.exists()  # nothing committed yet: the file is not even created
    clock[0] += 0.1  # the oldest deferred row is now 0.5 s old
    cache.put("c", "chat", "m", b"3", defer=True)
    assert _rows_on_disk(path) == 3
    cache.close()


def test_deferred_rows_respect_the_mode(tmp_path: Path) -> None:
    off = ProviderCache(tmp_path / "off.sqlite3", mode="off")
    off.put("k", "chat", "m", b"v", defer=True)
    off.close()
    assert not (tmp_path / "off.sqlite3").exists()
    refresh = ProviderCache(tmp_path / "r.sqlite3", mode="refresh")
    refresh.put("k", "chat", "m", b"v", defer=True)
    assert refresh.get("k") is None  # refresh never reads, pending rows included
    refresh.close()
    assert ProviderCache(tmp_path / "r.sqlite3").get("k") == b"v"
