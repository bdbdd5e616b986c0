"""What ``skillwire db status`` reports of a job database, SQLite or PostgreSQL, read
without changing it: the schema version found and the one this code writes, the
migrations recorded, and how many jobs are in each status."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from skillwire.core.errors import UsageError

__all__ = ["DbStatus", "postgres_status", "sqlite_status"]


@dataclass
class DbStatus:
    """A job database's state."""

    where: str
    """The file, or the URL without its password."""
    kind: str
    """``sqlite`` or ``postgresql``."""
    found: int
    """The schema version recorded (0: none yet)."""
    current: int
    """The schema version this skillwire writes."""
    migrations: list[tuple[int, str, str]] = field(default_factory=list)
    """Each migration recorded: version, name, time applied."""
    jobs: dict[str, int] = field(default_factory=dict)
    """Jobs by status (empty unless the schema is current)."""

    @property
    def state(self) -> str:
        """``current``, ``behind`` (run ``skillwire db migrate``) or ``newer`` (upgrade)."""
        if self.found == self.current:
            return "current"
        return "behind" if self.found < self.current else "newer"


def sqlite_status(path: Path) -> DbStatus:
    """The state of the SQLite file at ``path`` (opened read-only)."""
    from skillwire.store.migrations import SCHEMA_VERSION, schema_version

    if not path.is_file():
        raise UsageError(f"no job database at {path}")
    db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    try:
        status = DbStatus(str(path), "sqlite", schema_version(db), SCHEMA_VERSION)
        if status.found:
            rows = db.execute(
                "SELECT version, name, applied_at FROM schema_migrations ORDER BY version"
            ).fetchall()
            status.migrations = [(int(v), str(n), str(at)) for v, n, at in rows]
        if status.state == "current":
            counted = db.execute("SELECT status, count(*) FROM jobs GROUP BY status").fetchall()
            status.jobs = {str(s): int(n) for s, n in sorted(counted)}
    except sqlite3.DatabaseError as err:
        raise UsageError(f"{path}: not a skillwire job database ({err})") from None
    finally:
        db.close()
    return status


def postgres_status(url: str) -> DbStatus:
    """The state of the PostgreSQL database at ``url``."""
    from skillwire.store import postgres_migrations as pgm
    from skillwire.store.postgres import connect_sync, safe_url

    with connect_sync(url) as db:
        status = DbStatus(
            safe_url(url), "postgresql", pgm.schema_version(db), pgm.PG_SCHEMA_VERSION
        )
        status.migrations = pgm.applied(db)
        if status.state == "current":
            rows = db.execute("SELECT status, count(*) FROM jobs GROUP BY status").fetchall()
            status.jobs = {str(s): int(n) for s, n in sorted(rows)}
    return status
