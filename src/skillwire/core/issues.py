"""Problems found in a skill: ``SkillIssue``, one finding (an error or a warning).

``SkillError`` (in :mod:`skillwire.core.errors`) is raised when a skill
cannot be used and carries these findings.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from skillwire.core.location import FieldPath, SourceLocation, format_path

__all__ = [
    "Severity",
    "SkillIssue",
]


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
