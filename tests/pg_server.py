"""A real PostgreSQL server for the store tests: initdb + pg_ctl in a temporary folder.

The server runs as an unprivileged user (initdb refuses root) on a free loopback port, with
password authentication (scram-sha-256) so a wrong password is refused as it would be in a
team's server. `.ci/run` starts one with ``python tests/pg_server.py start DIR`` and exports
what it prints; the pytest fixture reuses that server, or starts its own when the binaries are
on this machine, or skips the PostgreSQL variant when they are not.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

USER = "assay"
PASSWORD = "assay-test-pw"
DATABASE = "assay"


@dataclass(frozen=True)
class PgServer:
    """A started server: its URL, data folder and the folder of its binaries."""

    url: str
    data: Path
    bindir: Path
    port: int

    def url_for(self, *, password: str = PASSWORD, database: str = DATABASE) -> str:
        return f"postgresql://{USER}:{password}@127.0.0.1:{self.port}/{database}"

    def ctl(self, *args: str) -> None:
        """Run pg_ctl on this server's data folder (as its owner)."""
        _as_owner(self.data, [str(self.bindir / "pg_ctl"), "-D", str(self.data), "-w", *args])

    def restart(self) -> None:
        self.ctl("-m", "fast", "restart", "-l", str(self.data.parent / "log"))

    def stop(self) -> None:
        self.ctl("-m", "fast", "stop")


def find_bindir() -> Path | None:
    """The folder of initdb and pg_ctl: the PATH's, else Debian's newest packaged version."""
    found = shutil.which("initdb")
    if found and shutil.which("pg_ctl"):
        return Path(found).resolve().parent
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=_version)
    return Path(versions[-1]).parent if versions else None


def _version(path: str) -> float:
    try:
        return float(Path(path).parent.parent.name)
    except ValueError:
        return 0.0


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _as_owner(data: Path, command: list[str]) -> None:
    """Run ``command`` as the owner of ``data`` (root cannot run PostgreSQL)."""
    owner = data.stat().st_uid
    prefix = [] if owner == os.getuid() else ["runuser", "-u", pwd.getpwuid(owner).pw_name, "--"]
    subprocess.run([*prefix, *command], check=True, capture_output=True, timeout=120)


def start(base: Path) -> PgServer:
    """A new cluster in ``base`` with user/database ``assay``, started on a free port."""
    bindir = find_bindir()
    if bindir is None:
        raise RuntimeError("no PostgreSQL binaries (initdb, pg_ctl) on this machine")
    base.mkdir(parents=True, exist_ok=True)
    data = base / "data"
    data.mkdir()
    pwfile = base / "pw"
    pwfile.write_text(PASSWORD + "\n")
    if os.getuid() == 0:  # initdb refuses root: the cluster belongs to 'nobody'
        for path in (base, data, pwfile):
            os.chown(path, pwd.getpwnam("nobody").pw_uid, -1)
    os.chmod(data, 0o700)
    initdb = [str(bindir / "initdb"), "-D", str(data), "-U", USER, "--pwfile", str(pwfile)]
    _as_owner(data, [*initdb, "-A", "scram-sha-256", "-E", "UTF8", "--no-locale"])
    port = _free_port()
    options = f"-p {port} -k {base} -c listen_addresses=127.0.0.1 -c max_connections=200"
    server = PgServer("", data, bindir, port)
    server.ctl("-o", options, "-l", str(base / "log"), "start")
    with open(data / "postgresql.auto.conf", "a") as conf:  # kept across restarts
        conf.write(f"port = {port}\nunix_socket_directories = '{base}'\n")
    env = {**os.environ, "PGPASSWORD": PASSWORD}
    createdb = [str(bindir / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", USER, DATABASE]
    subprocess.run(createdb, check=True, capture_output=True, env=env, timeout=60)
    return PgServer(server.url_for(), data, bindir, port)


def main(argv: list[str]) -> int:
    """``start DIR``: start a server and print shell exports; ``stop DIR``: stop it."""
    if len(argv) != 2 or argv[0] not in ("start", "stop"):
        print("usage: pg_server.py start|stop DIR", file=sys.stderr)
        return 2
    base = Path(argv[1])
    if argv[0] == "stop":
        bindir = find_bindir()
        if bindir is not None and (base / "data").is_dir():
            PgServer("", base / "data", bindir, 0).stop()
        return 0
    server = start(base)
    print(f"export ASSAY_TEST_PG_URL='{server.url}'")
    print(f"export ASSAY_TEST_PG_DATA='{server.data}'")
    print(f"export ASSAY_TEST_PG_BIN='{server.bindir}'")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
