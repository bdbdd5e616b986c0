"""The PostgreSQL store's queries of skill versions and pins (``m002_skill_versions``),
the same as the SQLite store's (:mod:`~skillwire.store._skill_versions`), whose ``files``
JSON they share.

The callers give text as PostgreSQL's ``text`` holds it (U+0000 as U+FFFD, see
:mod:`~skillwire.store.postgres`); the ``files`` document is ``json``, which keeps any
file name as written.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from skillwire.core.errors import NotFoundError
from skillwire.core.store import SkillVersion
from skillwire.store._skill_versions import decode_files, encode_files

if TYPE_CHECKING:
    from psycopg import AsyncConnection

__all__ = ["has_version", "pin_skill", "put_version", "read_versions"]


async def put_version(conn: AsyncConnection[Any], version: SkillVersion) -> bool:
    """Insert ``version`` unless kept already; whether it was new."""
    added = await conn.execute(
        "INSERT INTO skill_versions (skill_id, version, created_at, source, format, files) "
        "VALUES (%s, %s, %s, %s, %s, %s::json) ON CONFLICT (skill_id, version) DO NOTHING",
        (
            version.skill_id,
            version.version,
            datetime.now(UTC).isoformat(),
            version.source,
            version.format,
            encode_files(version),
        ),
    )
    return added.rowcount == 1


async def has_version(conn: AsyncConnection[Any], skill_id: str, version: str) -> bool:
    """Whether ``version`` of ``skill_id`` is kept."""
    found = await conn.execute(
        "SELECT 1 FROM skill_versions WHERE skill_id = %s AND version = %s", (skill_id, version)
    )
    return await found.fetchone() is not None


async def read_versions(conn: AsyncConnection[Any], skill_id: str) -> list[SkillVersion]:
    """Every version kept of ``skill_id``, oldest first (by when it was kept), with its
    files and whether it is pinned."""
    found = await conn.execute(
        "SELECT v.version, v.created_at, v.source, v.format, v.files::text, "
        "p.version IS NOT NULL FROM skill_versions v LEFT JOIN skill_pins p "
        "ON p.skill_id = v.skill_id AND p.version = v.version "
        "WHERE v.skill_id = %s ORDER BY v.created_at, v.kept",
        (skill_id,),
    )
    return [
        SkillVersion(
            skill_id,
            version,
            source,
            fmt,
            decode_files(skill_id, version, files),
            created_at,
            bool(pinned),
        )
        for version, created_at, source, fmt, files, pinned in await found.fetchall()
    ]


async def pin_skill(conn: AsyncConnection[Any], skill_id: str, version: str | None) -> None:
    """Pin ``version`` of ``skill_id``, or remove the pin (None). Raises
    :class:`NotFoundError` for a version not kept (versions are never removed, so the
    check holds until the transaction commits)."""
    if version is not None and not await has_version(conn, skill_id, version):
        raise NotFoundError(f"skill {skill_id} has no version {version} in this store")
    if version is None:
        await conn.execute("DELETE FROM skill_pins WHERE skill_id = %s", (skill_id,))
        return
    await conn.execute(
        "INSERT INTO skill_pins (skill_id, version, pinned_at) VALUES (%s, %s, %s) "
        "ON CONFLICT (skill_id) DO UPDATE SET version = excluded.version, "
        "pinned_at = excluded.pinned_at",
        (skill_id, version, datetime.now(UTC).isoformat()),
    )
