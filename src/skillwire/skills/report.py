"""The load report: per skill and per file, ok, warnings, errors.

A skill that fails never stops the others from loading; the report says what each
file holds, so an author sees every problem at once.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from skillwire.core.issues import Severity, SkillIssue

__all__ = ["LoadReport", "SkillReport", "Status"]

Status = Literal["ok", "warnings", "errors"]


def _status(issues: Iterable[SkillIssue]) -> Status:
    worst: Status = "ok"
    for issue in issues:
        if issue.severity is Severity.ERROR:
            return "errors"
        if issue.severity is Severity.WARNING:
            worst = "warnings"
    return worst


@dataclass
class SkillReport:
    """What loading one skill found, file by file."""

    source: str
    """The file or folder the skill came from."""
    format: str
    """``yaml``, ``json`` or ``package``."""
    skill_id: str | None = None
    """The skill's id, once known."""
    files: dict[str, list[SkillIssue]] = field(default_factory=dict)
    """Findings per file (display name), in file order."""
    loaded: bool = False
    """Whether the skill is usable."""

    def add(self, file: str, issues: Iterable[SkillIssue]) -> None:
        """Record findings for ``file`` (the file is listed even with none)."""
        self.files.setdefault(file, []).extend(issues)

    @property
    def issues(self) -> list[SkillIssue]:
        """Every finding, across files."""
        return [i for found in self.files.values() for i in found]

    @property
    def errors(self) -> list[SkillIssue]:
        """The errors."""
        return [i for i in self.issues if i.severity is Severity.ERROR]

    @property
    def warnings(self) -> list[SkillIssue]:
        """The warnings."""
        return [i for i in self.issues if i.severity is Severity.WARNING]

    @property
    def status(self) -> Status:
        """``errors`` if any, else ``warnings`` if any, else ``ok``."""
        return _status(self.issues)

    def file_status(self, file: str) -> Status:
        """The status of one file."""
        return _status(self.files.get(file, []))

    def to_dict(self) -> dict[str, object]:
        """JSON-ready form."""
        return {
            "skill_id": self.skill_id,
            "source": self.source,
            "format": self.format,
            "status": self.status,
            "loaded": self.loaded,
            "files": [
                {
                    "file": name,
                    "status": self.file_status(name),
                    "issues": [i.to_dict() for i in found],
                }
                for name, found in self.files.items()
            ],
        }


@dataclass
class LoadReport:
    """What loading a set of skills found."""

    skills: list[SkillReport] = field(default_factory=list)
    """One entry per skill source."""

    @property
    def ok(self) -> bool:
        """No errors anywhere (warnings allowed)."""
        return all(s.status != "errors" for s in self.skills)

    @property
    def error_count(self) -> int:
        """Errors across all skills."""
        return sum(len(s.errors) for s in self.skills)

    @property
    def warning_count(self) -> int:
        """Warnings across all skills."""
        return sum(len(s.warnings) for s in self.skills)

    def to_dict(self) -> dict[str, object]:
        """JSON-ready form, as ``skillwire check --json`` prints it."""
        return {
            "ok": self.ok,
            "errors": self.error_count,
            "warnings": self.warning_count,
            "skills": [s.to_dict() for s in self.skills],
        }
