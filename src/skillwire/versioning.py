"""Skill versions for the command line: keep a version in the store, start on the
operator's pinned version, resume a job on the version it started on.

An assembling module (it opens stores): packages do not import it. The server does
the same through the server's skill book.
"""

from __future__ import annotations

import tempfile
from functools import cache
from pathlib import Path

from skillwire.core.errors import NotFoundError, UsageError
from skillwire.core.job import JobRecord
from skillwire.core.store import JobStore, SkillVersion, SkillVersionStore
from skillwire.skills.model import Skill
from skillwire.skills.versions import load_version, version_of

__all__ = ["find_version", "keep", "skill_for_job", "starting_skill", "version_dir"]


@cache
def version_dir() -> Path:
    """A folder of this process where kept versions are written to be loaded again."""
    return Path(tempfile.mkdtemp(prefix="skillwire-versions-"))


def _kept_by(store: JobStore | SkillVersionStore) -> SkillVersionStore | None:
    return store if isinstance(store, SkillVersionStore) else None


async def keep(store: JobStore, skill: Skill) -> None:
    """Keep ``skill``'s version in ``store`` (nothing for a store without versions)."""
    kept_by, version = _kept_by(store), version_of(skill)
    if kept_by is not None and version is not None:
        await kept_by.put_skill_version(version)


async def starting_skill(store: JobStore, skill: Skill) -> tuple[Skill, str | None]:
    """The skill a new job starts on: ``skill`` (kept in the store), or the version the
    operator pinned, with a note saying so."""
    await keep(store, skill)
    kept_by = _kept_by(store)
    if kept_by is None:
        return skill, None
    pinned = next((v for v in await kept_by.skill_versions(skill.id) if v.pinned), None)
    if pinned is None or pinned.version == skill.version_hash:
        return skill, None
    note = f"skill {skill.id} is pinned to version {pinned.version}: starting on it"
    return load_version(pinned, version_dir()), note


async def skill_for_job(store: JobStore, record: JobRecord, current: Skill | None) -> Skill | None:
    """The skill a stored job resumes on: ``current`` when it is the version the job
    started on (or the job recorded none), else that version as kept in the store.
    Raises :class:`NotFoundError` when the version is kept nowhere."""
    wanted = str(record.state.get("skill_version") or "")
    if not wanted or (current is not None and current.version_hash == wanted):
        return current
    kept_by = _kept_by(store)
    if kept_by is not None:
        for kept in await kept_by.skill_versions(record.skill_id):
            if kept.version == wanted:
                return load_version(kept, version_dir())
    raise NotFoundError(
        f"job {record.id} started on version {wanted} of skill '{record.skill_id}', which "
        "this store does not keep and its source no longer is"
    )


async def find_version(
    store: JobStore | SkillVersionStore, skill_id: str, text: str
) -> SkillVersion:
    """The kept version of ``skill_id`` that is ``text`` or starts with it."""
    kept_by = _kept_by(store)
    if kept_by is None:
        raise UsageError("this job store keeps no skill versions")
    versions = await kept_by.skill_versions(skill_id)
    if not versions:
        raise NotFoundError(f"no versions of skill '{skill_id}' in this store")
    exact = [v for v in versions if v.version == text]
    found = exact or [v for v in versions if text and v.version.startswith(text)]
    if len(found) == 1:
        return found[0]
    if not found:
        raise NotFoundError(f"skill '{skill_id}' has no version {text!r}")
    raise UsageError(f"version {text!r} of '{skill_id}' is ambiguous: give more of it")
