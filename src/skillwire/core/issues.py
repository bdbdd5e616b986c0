"""Problems found in a skill, and the exception that carries them.

``SkillIssue`` is one finding (an error or a warning) about a skill author's file.
``SkillError`` is raised when a skill cannot be used; it is a skill author's mistake,
kept apart from job failures. Exception tree::

    SkillwireError
    ├── SkillError          a skill file is wrong (carries SkillIssue values)
    └── UsageError          a caller passed something wrong (bad argument, bad request)
        ├── NotFoundError   no such job (or skill)
        ├── ForbiddenError  the caller's role may not do this (e.g. approve)
        └── ConflictError   the job is not in a state that allows this, or changed meanwhile
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum

from skillwire.core.location import FieldPath, SourceLocation, format_path

__all__ = [
    "ConflictError",
    "ForbiddenError",
    "NotFoundError",
    "Severity",
    "SkillError",
    "SkillIssue",
    "SkillwireError",
    "UsageError",
]


class SkillwireError(Exception):
    """Base of every error skillwire raises on purpose."""


class UsageError(SkillwireError):
    """A caller's mistake: a bad argument, an unknown job, a malformed request."""


class NotFoundError(UsageError):
    """No such job or skill."""


class ForbiddenError(UsageError):
    """The caller's role may not do this (an approval by the wrong role)."""


class ConflictError(UsageError):
    """The job is not in a state that allows this, or it changed meanwhile."""


class Severity(StrEnum):
    """How bad a finding is. ``info`` findings say what is present but not enforced."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


@dataclass(frozen=True, slots=True)
class SkillIssue:
    """One finding about a skill file: where it is, which field, and what is wrong."""

    severity: Severity
    message: str
    location: SourceLocation
    path: FieldPath = ()
    code: str = ""
    hint: str = ""

    def __str__(self) -> str:
        where = str(self.location)
        field_part = f" {format_path(self.path)}:" if self.path else ""
        hint = f" ({self.hint})" if self.hint else ""
        return f"{where}: {self.severity}:{field_part} {self.message}{hint}"

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready form, as ``skillwire check --json`` prints it."""
        return {
            "severity": str(self.severity),
            "code": self.code,
            "message": self.message,
            "hint": self.hint,
            "file": self.location.file,
            "line": self.location.line,
            "column": self.location.column,
            "path": format_path(self.path) if self.path else "",
        }


@dataclass
class SkillError(SkillwireError):
    """A skill cannot be used as written. ``issues`` holds every error found, not just one."""

    issues: list[SkillIssue] = field(default_factory=list)

    def __init__(self, issues: Iterable[SkillIssue]) -> None:
        self.issues = list(issues)
        super().__init__("\n".join(str(i) for i in self.issues))
