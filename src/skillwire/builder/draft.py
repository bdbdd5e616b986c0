"""The draft: the skill being written, checked by the real loader after every answer.

An answer changes the draft's YAML tree; the loader then reads the draft's text exactly
as it reads a file (in memory, no file written). An answer that brings an error the
draft did not have is undone and its errors, each with its fix, are returned: a draft
never holds an error an answer introduced, so the file written at the end loads.
Parts the draft simply lacks yet (spec 000 section 3.2's required parts) are "missing",
not errors of an answer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ruamel.yaml.comments import CommentedMap

from skillwire.builder.yaml_text import (
    diff_text,
    dump_yaml,
    parse_yaml,
    write_text_atomic,
)
from skillwire.core.errors import SkillError, UsageError
from skillwire.core.issues import Severity, SkillIssue
from skillwire.core.location import SourceLocation, format_path
from skillwire.skills import Skill, SkillReport
from skillwire.skills.loader_single import derive_id, skill_from_document
from skillwire.skills.source import load_yaml

__all__ = ["MISSING_CODE", "Draft", "DraftCheck"]

MISSING_CODE = "required-part"
"""The loader's code for a part the draft lacks yet (not an error an answer made)."""

SKILL_FILE = "domain.yaml"
"""The file a new skill is written to."""


@dataclass
class DraftCheck:
    """What the loader says of the draft now."""

    skill: Skill | None
    """The skill, when the draft loads."""
    report: SkillReport
    """Every finding, with its line in the draft's text."""
    policy_findings: list[SkillIssue] = field(default_factory=list)
    """What compiling the rules found (a sentence understood only in part)."""

    @property
    def errors(self) -> list[SkillIssue]:
        """Errors, parts still missing included."""
        return self.report.errors

    @property
    def missing(self) -> list[SkillIssue]:
        """The required parts the draft still lacks."""
        return [i for i in self.report.errors if i.code == MISSING_CODE]

    @property
    def warnings(self) -> list[SkillIssue]:
        """Warnings of the loader and of the rule compiler."""
        return self.report.warnings + [
            i for i in self.policy_findings if i.severity is Severity.WARNING
        ]

    @property
    def loads(self) -> bool:
        """Whether the draft, written now, loads with no error."""
        return self.skill is not None and not self.report.errors


def _identity(issue: SkillIssue) -> tuple[str, str, str]:
    """An issue without its line (an edit moves lines)."""
    return (issue.code, format_path(issue.path) if issue.path else "", issue.message)


class Draft:
    """A skill definition being written in ``folder`` (its ``domain.yaml``)."""

    def __init__(self, folder: Path, file_name: str = SKILL_FILE) -> None:
        self.folder = folder
        self.path = folder / file_name
        self.display = str(self.path)
        try:
            self.on_disk = self.path.read_text(encoding="utf-8") if self.path.is_file() else ""
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"cannot read {self.path}: {exc}") from None
        self.data: CommentedMap = parse_yaml(self.on_disk, self.display)
        self._last = self.check()

    # ------------------------------------------------------------------ reading

    @property
    def exists(self) -> bool:
        """Whether the skill file was there when the draft was opened."""
        return bool(self.on_disk)

    def text(self) -> str:
        """The draft as the YAML text that would be written."""
        return dump_yaml(self.data)

    def check(self) -> DraftCheck:
        """Load the draft's text as the loader loads a file (nothing is written)."""
        return self.check_text(self.text())

    def check_text(self, text: str) -> DraftCheck:
        """Load ``text`` as this draft's file would be loaded (nothing is written)."""
        report = SkillReport(source=self.display, format="yaml")
        try:
            doc = load_yaml(text, self.display)
        except SkillError as exc:
            report.add(self.display, exc.issues)
            return DraftCheck(None, report)
        skill = skill_from_document(doc, report, default_id=derive_id(self.path), fmt="yaml")
        findings: list[SkillIssue] = []
        if skill is not None:
            from skillwire.policy import compile_policy

            skill._root = self.folder.resolve()
            findings = list(compile_policy(skill).findings)
        return DraftCheck(skill, report, findings)

    @property
    def last(self) -> DraftCheck:
        """The check of the draft as it stands."""
        return self._last

    # ------------------------------------------------------------------ changing

    def snapshot(self) -> str:
        """The draft's state, to go back to with :meth:`restore`."""
        return self.text()

    def restore(self, snapshot: str) -> None:
        """Go back to a :meth:`snapshot`."""
        self.data = parse_yaml(snapshot, self.display)
        self._last = self.check()

    def update(self, change: Callable[[CommentedMap], None]) -> list[SkillIssue]:
        """Apply ``change`` to the tree and check the result. When it brings errors the
        draft did not have, undo it and return them (each with its hint); else keep it
        and return nothing."""
        before = self.snapshot()
        known = {_identity(i) for i in self._last.errors}
        try:
            change(self.data)
        except (ValueError, TypeError, KeyError, IndexError) as exc:
            self.restore(before)
            return [
                SkillIssue(
                    Severity.ERROR, f"cannot apply this answer: {exc}", SourceLocation(self.display)
                )
            ]
        found = self.check()
        new = [i for i in found.errors if i.code != MISSING_CODE and _identity(i) not in known]
        if new:
            self.restore(before)
            return new
        self._last = found
        return []

    # ------------------------------------------------------------------ writing

    def diff(self) -> str:
        """What writing now would change in the file, as a unified diff."""
        return diff_text(self.on_disk, self.text(), self.path.name)

    def write_text(self, text: str) -> tuple[DraftCheck, str]:
        """Write ``text`` as the skill's file when it loads; the check, and the diff
        against the file (empty when unchanged). Nothing is written when it does not
        load. The draft then holds ``text``."""
        check = self.check_text(text)
        diff = diff_text(self.on_disk, text, self.path.name)
        if check.loads:
            write_text_atomic(self.path, text)
            self.on_disk = text
            self.data = parse_yaml(text, self.display)
            self._last = check
        return check, diff

    def write(self) -> Path:
        """Write the draft; refused (:class:`SkillError`) while it does not load."""
        check = self.check()
        if not check.loads:
            raise SkillError(check.errors)
        text = self.text()
        write_text_atomic(self.path, text)
        self.on_disk = text
        return self.path
