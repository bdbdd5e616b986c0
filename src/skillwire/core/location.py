"""Where a thing stands in a skill's source files.

Every error a skill author can cause, and every compiled rule, carries a
:class:`SourceLocation` so that a message can name the file, line and column.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["FieldPath", "SourceLocation", "format_path"]

FieldPath = tuple[str | int, ...]
"""A path into a document: mapping keys and sequence indexes, outermost first."""


@dataclass(frozen=True, slots=True)
class SourceLocation:
    """A position in a source file. ``line`` and ``column`` count from 1; 0 means unknown."""

    file: str
    line: int = 0
    column: int = 0

    def __str__(self) -> str:
        if self.line <= 0:
            return self.file
        if self.column <= 0:
            return f"{self.file}:{self.line}"
        return f"{self.file}:{self.line}:{self.column}"


def format_path(path: FieldPath) -> str:
    """Render a field path the way an author reads it: ``tools[0].policy.condition``."""
    out: list[str] = []
    for part in path:
        if isinstance(part, int):
            out.append(f"[{part}]")
        elif out:
            out.append(f".{part}")
        else:
            out.append(part)
    return "".join(out) or "(document)"
