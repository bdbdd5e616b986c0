"""The skills a server offers, reloaded in place with last-known-good.

A reload loads every path again. A skill whose new version fails to load keeps its
previous good version (and the report says so); a skill whose file is gone is no longer
offered for new jobs, but stays known so that its paused jobs can still be resumed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from skillwire.core.errors import NotFoundError
from skillwire.skills import LoadReport, Skill, load_paths
from skillwire.skills.signing import TrustPolicy

__all__ = ["ReloadOutcome", "SkillBook"]


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

    def __init__(self, paths: Sequence[Path | str], *, trust: TrustPolicy | None = None) -> None:
        self.paths = [Path(p) for p in paths]
        self.trust = trust
        """The operator's trust policy: a skill it refuses is reported, never offered."""
        self._skills: dict[str, Skill] = {}
        self._retired: dict[str, Skill] = {}
        self._lock = asyncio.Lock()
        self.last = self._load()

    def skills(self) -> list[Skill]:
        """The skills offered for new jobs, by id."""
        return [self._skills[k] for k in sorted(self._skills)]

    def get(self, skill_id: str) -> Skill:
        """The skill offered as ``skill_id``; NotFoundError otherwise."""
        skill = self._skills.get(skill_id)
        if skill is None:
            raise NotFoundError(f"no skill '{skill_id}'")
        return skill

    def known(self, skill_id: str) -> Skill | None:
        """The skill a stored job names: offered now, or retired by a reload."""
        return self._skills.get(skill_id) or self._retired.get(skill_id)

    async def reload(self) -> ReloadOutcome:
        """Load every path again (in a thread), keeping last-known-good versions."""
        async with self._lock:
            self.last = await asyncio.to_thread(self._load)
            return self.last

    def _load(self) -> ReloadOutcome:
        result = load_paths(self.paths, trust=self.trust)
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
            else:
                self._retired[skill_id] = old
                outcome.removed.append(skill_id)
        for skill_id in fresh:
            self._retired.pop(skill_id, None)
        self._skills = fresh
        outcome.at = datetime.now(UTC).isoformat(timespec="seconds")
        return outcome
