"""pytest fixtures for stores on both backends: a SQLite file and a real PostgreSQL database.

``pg_server`` is the server `.ci/run` started (``ASSAY_TEST_PG_URL``), else one started here
from the binaries on this machine (tests/pg_server.py), else the PostgreSQL variants skip.
Each test that asks gets a database of its own, dropped afterwards.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

import pg_server
from pg_server import PgServer


@pytest.fixture(scope="session")
def pg_server_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PgServer]:
    url = os.environ.get("ASSAY_TEST_PG_URL")
    if url:
        data = Path(os.environ.get("ASSAY_TEST_PG_DATA", "/nonexistent"))
        bindir = Path(os.environ.get("ASSAY_TEST_PG_BIN") or pg_server.find_bindir() or "/")
        yield PgServer(url, data, bindir, int(urlsplit(url).port or 5432))
        return
    if pg_server.find_bindir() is None:
        pytest.skip("no PostgreSQL binaries on this machine (initdb, pg_ctl)")
    base = Path(f"/tmp/assay-pg-{uuid.uuid4().hex[:8]}")  # short: a socket path has a limit
    server = pg_server.start(base)
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(base, ignore_errors=True)


def _admin(server: PgServer, sql: str) -> None:
    import psycopg

    with psycopg.connect(server.url, autocommit=True) as conn:
        conn.execute(sql)


@pytest.fixture
def pg_url(pg_server_session: PgServer) -> Iterator[str]:
    """The URL of a new, empty database on the test server."""
    name = f"t_{uuid.uuid4().hex[:12]}"
    _admin(pg_server_session, f"CREATE DATABASE {name}")
    yield pg_server_session.url_for(database=name)
    _admin(pg_server_session, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture(params=["sqlite", "postgresql"])
def store_place(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A new store on each backend: a SQLite file's path, or a PostgreSQL database's URL."""
    if request.param == "sqlite":
        return str(tmp_path / "runs.db")
    return str(request.getfixturevalue("pg_url"))
