"""The queries of skill versions and pins (``m006_skill_versions``)."""

from __future__ import annotations

import base64
import json
import sqlite3
from datetime import UTC, datetime

from skillwire.core.errors import UsageError
from skillwire.core.store import SkillVersion

__all__ = [
    "FILES_SCHEMA",
    "decode_files",
    "encode_files",
    "has_version",
    "pin_skill",
    "put_version",
    "read_versions",
]

FILES_SCHEMA = 1
"""The version of the ``files`` JSON of a ``skill_versions`` row."""


def encode_files(version: SkillVersion) -> str:
    """The ``files`` JSON of ``version``'s row (shared by the PostgreSQL store)."""
    files = {
        "schema": FILES_SCHEMA,
        "files": {
            name: base64.b64encode(data).decode("ascii") for name, data in version.files.items()
        },
    }
    return json.dumps(files, separators=(",", ":"), sort_keys=True)


def decode_files(skill_id: str, version: str, text: str) -> dict[str, bytes]:
    """The files of a row's ``files`` JSON; :class:`UsageError` for a newer format."""
    data = json.loads(text)
    if data.get("schema") != FILES_SCHEMA:
        raise UsageError(
            f"skill {skill_id} version {version}: files stored in a newer format "
            f"({data.get('schema')}); upgrade skillwire"
        )
    return {name: base64.b64decode(item) for name, item in data["files"].items()}


def put_version(db: sqlite3.Connection, version: SkillVersion, outcome: list[bool]) -> None:
    """Insert ``version`` unless kept already; ``outcome`` gets whether it was new."""
    cursor = db.execute(
        "INSERT OR IGNORE INTO skill_versions "
        "(skill_id, version, created_at, source, format, files) VALUES (?, ?, ?, ?, ?, ?)",
        (
            version.skill_id,
            version.version,
            datetime.now(UTC).isoformat(),
            version.source,
            version.format,
            encode_files(version),
        ),
    )
    outcome.append(cursor.rowcount == 1)


def has_version(db: sqlite3.Connection, skill_id: str, version: str) -> bool:
    """Whether ``version`` of ``skill_id`` is kept."""
    return bool(
        db.execute(
            "SELECT 1 FROM skill_versions WHERE skill_id = ? AND version = ?", (skill_id, version)
        ).fetchall()
    )


def read_versions(db: sqlite3.Connection, skill_id: str) -> list[SkillVersion]:
    """Every version kept of ``skill_id``, oldest first (by when it was kept)."""
    pins = db.execute("SELECT version FROM skill_pins WHERE skill_id = ?", (skill_id,)).fetchall()
    pinned = pins[0][0] if pins else None
    rows = db.execute(
        "SELECT version, created_at, source, format, files FROM skill_versions "
        "WHERE skill_id = ? ORDER BY created_at, rowid",
        (skill_id,),
    ).fetchall()
    found = []
    for version, created_at, source, fmt, files in rows:
        found.append(
            SkillVersion(
                skill_id,
                version,
                source,
                fmt,
                decode_files(skill_id, version, files),
                created_at,
                version == pinned,
            )
        )
    return found


def pin_skill(db: sqlite3.Connection, skill_id: str, version: str | None) -> None:
    """Pin ``version`` of ``skill_id`` (the caller checked it is kept), or remove the pin
    (None)."""
    if version is None:
        db.execute("DELETE FROM skill_pins WHERE skill_id = ?", (skill_id,))
        return
    db.execute(
        "INSERT INTO skill_pins (skill_id, version, pinned_at) VALUES (?, ?, ?) "
        "ON CONFLICT (skill_id) DO UPDATE SET version = excluded.version, "
        "pinned_at = excluded.pinned_at",
        (skill_id, version, datetime.now(UTC).isoformat()),
    )
