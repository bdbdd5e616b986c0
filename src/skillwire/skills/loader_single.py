"""Loading a single-file skill definition (``domain.yaml``, ``skill.yaml``, ``skill.json``).

YAML and JSON of the same shape are accepted. Every problem is reported with file,
line and column; a file with errors yields no skill but a full report.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from skillwire.core.errors import SkillError
from skillwire.core.issues import Severity, SkillIssue
from skillwire.core.location import SourceLocation
from skillwire.skills._validation import validate_document, walk_extras
from skillwire.skills.model import DomainFile, Skill
from skillwire.skills.report import SkillReport
from skillwire.skills.semantics import check_domain
from skillwire.skills.source import Document, read_document

__all__ = ["build_skill", "derive_id", "load_single_file"]

_SLUG = re.compile(r"[^a-z0-9]+")


def derive_id(path: Path) -> str:
    """An id for a skill without one: its folder's name for ``domain.yaml``, else the stem."""
    stem = path.stem
    if stem in {"domain", "skill"} and path.parent.name:
        stem = path.parent.name
    return _SLUG.sub("-", stem.lower()).strip("-") or "skill"


def build_skill(domain: DomainFile, **extra: Any) -> Skill:
    """A :class:`Skill` from an already validated definition, without validating again."""
    values = {name: getattr(domain, name) for name in DomainFile.model_fields}
    values.update(extra)
    fields_set = set(domain.model_fields_set) | set(extra)
    skill = Skill.model_construct(_fields_set=fields_set, **values)
    return skill


def load_single_file(path: Path, display: str | None = None) -> tuple[Skill | None, SkillReport]:
    """Load one single-file definition. Never raises for a bad file: read the report."""
    name = display or str(path)
    fmt = "json" if path.suffix.lower() == ".json" else "yaml"
    report = SkillReport(source=name, format=fmt)
    try:
        doc = read_document(path, name)
    except SkillError as exc:
        report.add(name, exc.issues)
        return None, report
    skill = skill_from_document(doc, report, default_id=derive_id(path), fmt=fmt)
    if skill is not None:
        skill._origin = name
        # The folder that holds the file as named: the file was read from inside it.
        skill._root = path.parent.resolve()
    return skill, report


_REQUIRED: tuple[tuple[tuple[str, ...], str], ...] = (
    (("problem", "statement"), "the problem statement (the goal the answer is checked against)"),
    (("intents", "supported"), "at least one supported intent (what messages are classified into)"),
    (("tools",), "at least one tool"),
)
"""The parts spec 000 section 3.2 marks required, with what each is for."""


def required_parts(doc: Document) -> list[SkillIssue]:
    """One error per part spec 000 section 3.2 requires that ``doc`` lacks (absent,
    null or empty). Nothing when ``doc`` is not a mapping (a shape error says so)."""
    if not isinstance(doc.data, dict):
        return []
    issues = []
    for path, purpose in _REQUIRED:
        node: Any = doc.data
        for part in path:
            node = node.get(part) if isinstance(node, dict) else None
        if node is None or (isinstance(node, str | list | dict) and not node):
            state = "missing" if node is None else "empty"
            issues.append(
                SkillIssue(
                    Severity.ERROR,
                    f"required part {state}: spec 000 section 3.2 requires {purpose}",
                    doc.locate(path),
                    path,
                    code="required-part",
                    hint=_REQUIRED_HINTS[path[-1]],
                )
            )
    return issues


_REQUIRED_HINTS = {
    "statement": 'add `problem:` with `statement: "what the skill solves, in one sentence"`',
    "supported": "add `intents:` with `supported:` and at least one `- id: ...` with a "
    "description and examples",
    "tools": "add `tools:` with at least one `- name: ...`",
}


def skill_from_document(
    doc: Document, report: SkillReport, *, default_id: str, fmt: str
) -> Skill | None:
    """Validate a parsed document as a skill, adding every finding to ``report``."""
    name = doc.file
    if not isinstance(doc.data, dict):
        what = "empty" if doc.data is None else f"a {type(doc.data).__name__}"
        report.add(
            name,
            [
                SkillIssue(
                    Severity.ERROR,
                    f"a skill definition must be a mapping of fields, this file is {what}",
                    SourceLocation(name, 1, 1),
                    code="not-a-mapping",
                )
            ],
        )
        return None
    domain, issues = validate_document(DomainFile, doc.data, doc)
    report.add(name, issues)
    report.add(name, required_parts(doc))
    if domain is None:
        return None
    report.add(name, walk_extras(domain, doc))
    skill_id = domain.id or default_id
    report.skill_id = skill_id
    skill = build_skill(domain, id=skill_id, format=fmt)
    semantic, compiled = check_domain(skill, doc.locate, doc.locate_value)
    report.add(name, semantic)
    if report.status == "errors":
        return None
    skill._conditions = compiled
    skill._locator = doc.locate
    report.loaded = True
    return skill
