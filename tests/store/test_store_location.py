"""Choosing a store by URL or path, and the one-line errors before any work."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from assay.errors import StoreError
from assay.store.location import StoreUrl, redacted, store_location
from assay.store.runs import RunStore

from .helpers import assay, write_project


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://ci:s3cret@db:5432/evals", "postgresql://ci:***@db:5432/evals"),
        ("postgresql://ci@db/evals", "postgresql://ci@db/evals"),
        (
            "postgres://db/evals?password=s3cret&sslmode=require",
            "postgres://db/evals?password=%2A%2A%2A&sslmode=require",
        ),
    ],
)
def test_a_url_is_shown_without_its_password(url: str, shown: str) -> None:
    assert redacted(url) == shown
    assert "s3cret" not in str(store_location(url))


def test_paths_and_urls_are_told_apart(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert store_location("postgresql://u@h/db") == StoreUrl("postgresql://u@h/db")
    assert store_location(tmp_path / "runs.db") == tmp_path / "runs.db"
    assert store_location("./mysql:/x.db") == Path("mysql:/x.db")
    for url in ("mysql://u:hunter2@h/db", "sqlite:///x.db", "http://h/x", "redis://h"):
        with pytest.raises(StoreError, match="assay serves postgresql://") as caught:
            store_location(url)
        assert "hunter2" not in str(caught.value)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ASSAY_STORE", raising=False)
    monkeypatch.delenv("ASSAY_HOME", raising=False)
    (tmp_path / "assay.toml").write_text('store = "postgresql://team@db/evals"\n')
    assert store_location(None) == StoreUrl("postgresql://team@db/evals")
    monkeypatch.setenv("ASSAY_STORE", "elsewhere.db")
    assert store_location(None) == Path("elsewhere.db")


def test_an_unknown_scheme_is_never_a_file(tmp_path: Path) -> None:
    write_project(tmp_path, 3)
    done = assay(
        "run",
        "big.jsonl",
        "--outputs",
        "outputs.json",
        "--metric",
        "exact-match",
        "--store",
        "mysql://u:pw@localhost/db",
        cwd=tmp_path,
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "mysql" in done.stderr and ":pw@" not in done.stderr
    assert not (tmp_path / "mysql:").exists()


def _one_line_error(tmp_path: Path, url: str) -> str:
    write_project(tmp_path, 3)
    for args in (
        ["run", "big.jsonl", "--outputs", "outputs.json", "--metric", "exact-match"],
        ["runs"],
        ["report", "latest"],
    ):
        done = (
            assay(*args, "--store", url, "-q", cwd=tmp_path)
            if args[0] == "run"
            else assay(*args, "--store", url, cwd=tmp_path)
        )
        assert done.returncode == 2, (args, done.stderr)
        assert done.stderr.count("\n") == 1, done.stderr
        assert done.stdout == ""
        assert "Traceback" not in done.stderr
    return done.stderr


def test_refused_connection_is_one_line(tmp_path: Path) -> None:
    err = _one_line_error(tmp_path, "postgresql://assay:topsecret@127.0.0.1:1/assay")
    assert "refused" in err and "topsecret" not in err and "***" in err


def test_wrong_password_and_missing_database_are_one_line(pg_url: str, tmp_path: Path) -> None:
    wrong = pg_url.replace(":assay-test-pw@", ":not-the-password@")
    err = _one_line_error(tmp_path, wrong)
    assert "password authentication failed" in err and "not-the-password" not in err
    missing = pg_url.rsplit("/", 1)[0] + "/no_such_db"
    err = _one_line_error(tmp_path / "b", missing)
    assert "does not exist" in err and "assay-test-pw" not in err


def test_a_newer_schema_is_refused_before_any_work(store_place: str, tmp_path: Path) -> None:
    RunStore(store_place).close()
    if store_place.startswith("postgresql"):
        with psycopg.connect(store_place, autocommit=True) as conn:
            conn.execute("UPDATE meta SET value = 'assay.store.v99' WHERE key = 'schema_version'")
    else:
        import sqlite3

        with sqlite3.connect(store_place) as db:
            db.execute("UPDATE meta SET value = 'assay.store.v99' WHERE key = 'schema_version'")
    err = _one_line_error(tmp_path, store_place)
    assert "assay.store.v99" in err and "newer assay" in err
    assert "assay-test-pw" not in err
