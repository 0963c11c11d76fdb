"""Named baselines kept in the run store: ``assay baseline set REPORT --name main``.

A name (a branch, usually) points at one report, kept whole as its JSON, so CI on ``main``
sets what every pull request compares against (``--compare baseline:main``) from any machine
that reaches the store. Setting a name again replaces what it pointed at.
"""

from __future__ import annotations

from dataclasses import dataclass

from assay.errors import UsageError
from assay.store.backend import Connection, has_table
from assay.store.location import StoreName

MAX_NAME: int = 200


@dataclass(frozen=True)
class NamedBaseline:
    """A name's baseline: when it was set, from where, and the report's JSON."""

    name: str
    set_at: str
    source: str
    report: bytes


def check_name(name: str) -> str:
    """A baseline name as given, or a UsageError: 1 to 200 printable characters."""
    if not name or len(name) > MAX_NAME or not name.isprintable() or name != name.strip():
        raise UsageError(
            f"--name {name!r}: a baseline name is 1 to {MAX_NAME} printable characters "
            "with no leading or trailing space (a branch name, say)"
        )
    return name


class NamedBaselines:
    """The ``baselines`` table of a run store (``db``: its open connection)."""

    db: Connection
    path: StoreName

    def set_named_baseline(self, name: str, *, set_at: str, source: str, report: bytes) -> None:
        """Point ``name`` at ``report`` (its JSON), replacing what it pointed at."""
        self.db.execute(
            "INSERT OR REPLACE INTO baselines VALUES (?, ?, ?, ?)",
            (check_name(name), set_at, source, report),
        )

    def named_baseline(self, name: str) -> NamedBaseline | None:
        """The baseline ``name`` points at; None when it is not set."""
        if not has_table(self.db, "baselines"):  # a store from before named baselines
            return None
        row = self.db.execute(
            "SELECT name, set_at, source, report FROM baselines WHERE name = ?", (name,)
        ).fetchone()
        return None if row is None else NamedBaseline(row[0], row[1], row[2], bytes(row[3]))

    def baseline_names(self) -> list[tuple[str, str, str]]:
        """Every named baseline: (name, set at, source), by name."""
        if not has_table(self.db, "baselines"):
            return []
        rows = self.db.execute("SELECT name, set_at, source FROM baselines ORDER BY name")
        return [(str(n), str(s), str(f)) for n, s, f in rows]
