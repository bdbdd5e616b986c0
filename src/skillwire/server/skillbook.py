"""The skills a server offers, reloaded in place with last-known-good.

A reload loads every path again. A skill whose new version fails to load keeps its
previous good version (and the report says so); a skill whose file is gone is no longer
offered for new jobs, but stays known so that its paused jobs can still be resumed.

Every version loaded stays known by its content hash, and is kept in the store
(:meth:`SkillBook.keep_versions`): a job resumes on the version it started on, after a
reload or a restart (:meth:`SkillBook.prepare` loads a version back from the store). An
operator's pin (``skillwire skills pin``) makes new jobs start on the pinned version.
"""

from __future__ import annotations

import asyncio
import logging
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from skillwire.core.errors import NotFoundError, SkillError, UsageError
from skillwire.core.job import JobRecord
from skillwire.core.store import JobStore, SkillVersionStore
from skillwire.skills import BasePolicy, LoadReport, Skill, load_paths
from skillwire.skills.signing import TrustPolicy
from skillwire.skills.versions import load_version, version_of

log = logging.getLogger("skillwire.server")

__all__ = ["ReloadOutcome", "SkillBook", "failures"]


@dataclass
class ReloadOutcome:
    """What a load or reload did."""

    report: LoadReport
    """The loader's report for this load."""
    loaded: list[str] = field(default_factory=list)
    """Skills offered now in their new version."""
    kept: list[str] = field(default_factory=list)
    """Skills whose new version failed: the previous good version is still offered."""
    removed: list[str] = field(default_factory=list)
    """Skills no longer found (their jobs can still be resumed)."""
    kept_from: dict[str, str] = field(default_factory=dict)
    """The source of each kept skill (a broken file may not even say its id)."""
    at: str = ""
    """When the load finished (UTC, ISO 8601)."""

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "ok": self.report.ok,
            "at": self.at,
            "loaded": self.loaded,
            "kept": self.kept,
            "removed": self.removed,
            "report": self.report.to_dict(),
        }


class SkillBook:
    """The loaded skills by id, and the outcome of the last load."""

    def __init__(
        self,
        paths: Sequence[Path | str],
        *,
        trust: TrustPolicy | None = None,
        enable: Sequence[str] = (),
        base: BasePolicy | None = None,
    ) -> None:
        self.paths = [Path(p) for p in paths]
        self.trust = trust
        """The operator's trust policy: a skill it refuses is reported, never offered."""
        self.enable = frozenset(enable)
        """Skills offered although their package is disabled by default."""
        self.base = base
        """The operator's base policy, that packages' widenings are reported against."""
        self._skills: dict[str, Skill] = {}
        self._retired: dict[str, Skill] = {}
        self._versions: dict[tuple[str, str], Skill] = {}
        self._pins: dict[str, str] = {}
        self._version_dir: Path | None = None
        self._lock = asyncio.Lock()
        self._loads = threading.Condition()
        self.generation = 0
        """How many loads have finished (the first at construction counts 1)."""
        self.last = self._load()

    def skills(self) -> list[Skill]:
        """The skills offered for new jobs, by id (a pinned skill in its pinned version);
        not those disabled by default and not enabled."""
        return [self.get(k) for k in sorted(self._skills) if self.offered(self._skills[k])]

    def offered(self, skill: Skill) -> bool:
        """Whether new jobs may start on ``skill``: not a package that says
        ``enabledByDefault: false``, unless ``[server] enable`` lists it."""
        status = skill.package.status if skill.package is not None else None
        disabled = (
            status is not None
            and "enabledByDefault" in status.model_fields_set
            and not status.enabledByDefault
        )
        return not disabled or skill.id in self.enable

    def get(self, skill_id: str) -> Skill:
        """The skill offered as ``skill_id`` (its pinned version, if pinned and known);
        NotFoundError otherwise (also for a skill disabled by default)."""
        skill = self._skills.get(skill_id)
        if skill is None:
            raise NotFoundError(f"no skill '{skill_id}'")
        if not self.offered(skill):
            raise NotFoundError(
                f"skill '{skill_id}' is disabled by default (status.enabledByDefault: false); "
                "an operator enables it with [server] enable in skillwire.toml"
            )
        pinned = self._pins.get(skill_id)
        if pinned is not None:
            return self._versions.get((skill_id, pinned), skill)
        return skill

    def known(self, skill_id: str, version: str | None = None) -> Skill | None:
        """The skill a stored job names: offered now, or retired by a reload. With
        ``version``, only that version (None when it is not known here)."""
        if version:
            return self._versions.get((skill_id, version))
        return self._skills.get(skill_id) or self._retired.get(skill_id)

    def pinned(self, skill_id: str) -> str | None:
        """The version new jobs of ``skill_id`` start on by the operator's pin, if any."""
        return self._pins.get(skill_id)

    async def keep_versions(self, store: JobStore) -> None:
        """Keep every offered skill's version in ``store`` and read the operator's pins
        from it (a store that keeps no versions: nothing, and a warning)."""
        kept_by = _version_store(store)
        if kept_by is None:
            log.warning("this job store keeps no skill versions: jobs resume on the loaded one")
            return
        pins: dict[str, str] = {}
        for skill in list(self._skills.values()):
            version = version_of(skill)
            if version is not None:
                await kept_by.put_skill_version(version)
            for kept in await kept_by.skill_versions(skill.id):
                if kept.pinned:
                    pins[skill.id] = kept.version
                    if (skill.id, kept.version) not in self._versions:
                        await self._load_kept(kept)
        self._pins = pins

    async def prepare(self, record: JobRecord, store: JobStore) -> None:
        """Make the version ``record`` started on known here, loading it from ``store``
        if need be (after a restart); nothing when it is known or not kept."""
        version = str(record.state.get("skill_version") or "")
        if not version or (record.skill_id, version) in self._versions:
            return
        kept_by = _version_store(store)
        if kept_by is None:
            return
        for kept in await kept_by.skill_versions(record.skill_id):
            if kept.version == version:
                await self._load_kept(kept)
                return

    async def _load_kept(self, kept: Any) -> None:
        if self._version_dir is None:
            self._version_dir = Path(tempfile.mkdtemp(prefix="skillwire-versions-"))
        try:
            skill = await asyncio.to_thread(load_version, kept, self._version_dir)
        except (SkillError, UsageError, OSError) as exc:
            log.error("skill %s version %s cannot be loaded: %s", kept.skill_id, kept.version, exc)
            return
        self._versions[(skill.id, skill.version_hash)] = skill

    async def reload(self) -> ReloadOutcome:
        """Load every path again (in a thread), keeping last-known-good versions."""
        async with self._lock:
            self.last = await asyncio.to_thread(self._load)
            return self.last

    def _load(self) -> ReloadOutcome:
        result = load_paths(self.paths, self.base, trust=self.trust)
        outcome = ReloadOutcome(report=result.report, loaded=sorted(result.skills))
        fresh = dict(result.skills)
        failed_sources = {r.source for r in result.report.skills if not r.loaded}
        failed_ids = {r.skill_id for r in result.report.skills if not r.loaded and r.skill_id}
        for skill_id, old in self._skills.items():
            if skill_id in fresh:
                continue
            if skill_id in failed_ids or old.origin in failed_sources:
                fresh[skill_id] = old
                outcome.kept.append(skill_id)
                outcome.kept_from[old.origin] = skill_id
            else:
                self._retired[skill_id] = old
                outcome.removed.append(skill_id)
        for skill_id in fresh:
            self._retired.pop(skill_id, None)
        for skill in fresh.values():
            if skill.version_hash:
                self._versions.setdefault((skill.id, skill.version_hash), skill)
        self._skills = fresh
        outcome.at = datetime.now(UTC).isoformat(timespec="seconds")
        with self._loads:
            self.last = outcome
            self.generation += 1
            self._loads.notify_all()
        return outcome

    def wait_for_load(self, after: int, timeout: float) -> bool:
        """Block (a thread, not the event loop) until a load past ``after`` finished;
        False when ``timeout`` seconds passed first. For tests and tools that change
        files and wait for a watching server to take them in."""
        with self._loads:
            return self._loads.wait_for(lambda: self.generation > after, timeout)


def _version_store(store: JobStore) -> SkillVersionStore | None:
    """``store`` as a store of skill versions (a wrapper's inner store), or None."""
    for candidate in (store, getattr(store, "inner", None)):
        if isinstance(candidate, SkillVersionStore):
            return candidate
    return None


def failures(outcome: ReloadOutcome) -> list[str]:
    """One line per error of each skill the load could not take: which skill (kept at
    its last good version, or not offered), and the file, line and column."""
    lines = []
    for rep in outcome.report.skills:
        if rep.loaded:
            continue
        who = rep.skill_id or outcome.kept_from.get(rep.source) or rep.source
        state = "kept at its last good version" if who in outcome.kept else "not offered"
        lines += [f"skill {who} ({state}): {issue}" for issue in rep.errors]
    return lines
