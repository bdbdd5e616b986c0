"""Loading a JSON skill package (spec 003): a folder with ``skill.json`` and its files.

Each file is checked on its own (schema version, shape, ``skillId``), then the files
are checked together (namespaced tool names, references, rules 4 to 9). A package with
errors yields no skill, and the report lists every file with its findings.
"""

from __future__ import annotations

import errno
import os
import re
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any, TypeVar

from pydantic import BaseModel

from skillwire import __version__
from skillwire.core.errors import SkillError
from skillwire.core.issues import Severity, SkillIssue
from skillwire.core.location import FieldPath, SourceLocation
from skillwire.skills._validation import validate_document, walk_extras
from skillwire.skills.base_policy import BasePolicy
from skillwire.skills.loader_single import build_skill
from skillwire.skills.model import DomainFile, PackageInfo, Skill, SkillManifest
from skillwire.skills.model_package import (
    SCHEMA_VERSIONS,
    CredentialsFile,
    GuardrailsFile,
    PackageFiles,
    PrerequisitesFile,
    TestsFile,
    ToolsFile,
)
from skillwire.skills.package_intent import implicit_intent, implicit_intent_finding
from skillwire.skills.package_lifecycle import lifecycle_findings
from skillwire.skills.package_rules import (
    check_access_plan,
    check_credentials,
    check_prerequisites,
    check_tests,
    check_widenings,
)
from skillwire.skills.report import SkillReport
from skillwire.skills.semantics import check_domain
from skillwire.skills.source import Document, SkillFolder, read_document

__all__ = ["is_package_manifest", "load_package"]

M = TypeVar("M", bound=BaseModel)

_PLAIN_NAME = re.compile(r"[^/\\:\x00]+")
"""A file name without folder parts, drive or NUL (the usual case: nothing to resolve)."""
_SKILLWIRE_ADDITIONS = frozenset(DomainFile.model_fields) - {"id", "name", "description", "version"}


def is_package_manifest(data: Any) -> bool:
    """Whether parsed JSON is a package's ``skill.json`` (told apart by ``schemaVersion``)."""
    return isinstance(data, dict) and "schemaVersion" in data


class _Files:
    """The package's documents, read once, with their display names. Every file is read
    from inside the package folder, and all of them together within one budget."""

    def __init__(self, folder: Path, display: str, report: SkillReport) -> None:
        self.folder = folder
        self.display = display
        self.report = report
        self.skill_folder = SkillFolder(folder)

    def name(self, file: str) -> str:
        return f"{self.display}/{file}"

    def read(self, file: str, kind: str, *, required: bool) -> Document | None:
        """Read a package file and check its ``schemaVersion`` (rule 1)."""
        path = self.folder / file
        shown = self.name(file)
        if not _present(path):
            if required:
                self.report.add(
                    shown,
                    [
                        SkillIssue(
                            Severity.ERROR,
                            f"missing {kind} file '{file}'",
                            SourceLocation(shown),
                            code="missing-file",
                        )
                    ],
                )
            return None
        try:
            doc = read_document(path, shown, folder=self.skill_folder)
        except SkillError as exc:
            self.report.add(shown, exc.issues)
            return None
        accepted = SCHEMA_VERSIONS[kind]
        version = doc.data.get("schemaVersion") if isinstance(doc.data, dict) else None
        if not isinstance(doc.data, dict):
            self.report.add(
                shown,
                [
                    SkillIssue(
                        Severity.ERROR,
                        "expected a JSON object",
                        SourceLocation(shown, 1, 1),
                        code="not-a-mapping",
                    )
                ],
            )
            return None
        if version not in accepted:
            where = ("schemaVersion",)
            what = "missing" if version is None else f"unknown schemaVersion {version!r}"
            self.report.add(
                shown,
                [
                    SkillIssue(
                        Severity.ERROR,
                        f"{what}: rejected (rule 1)",
                        doc.locate(where),
                        where,
                        code="unknown-schema-version",
                        hint=f"expected one of {', '.join(accepted)}",
                    )
                ],
            )
            return None
        self.report.add(shown, [])
        return doc

    def validate(self, model: type[M], doc: Document) -> M | None:
        obj, issues = validate_document(model, doc.data, doc)
        self.report.add(doc.file, issues)
        if obj is not None:
            self.report.add(doc.file, walk_extras(obj, doc))
        return obj

    def check_skill_id(self, doc: Document, obj: Any, skill_id: str) -> bool:
        if obj.skillId == skill_id:
            return True
        self.report.add(
            doc.file,
            [
                SkillIssue(
                    Severity.ERROR,
                    f"skillId {obj.skillId!r} does not match skill.json id {skill_id!r}",
                    doc.locate(("skillId",)),
                    ("skillId",),
                    code="skill-id-mismatch",
                )
            ],
        )
        return False


def load_package(
    folder: Path, display: str | None = None, base: BasePolicy | None = None
) -> tuple[Skill | None, SkillReport]:
    """Load a package folder. Never raises for a bad package: read the report. ``base``
    is the operator's base policy that widenings are judged against (skillwire's default
    when None)."""
    shown = display or str(folder)
    report = SkillReport(source=shown, format="package")
    files = _Files(folder, shown, report)
    mdoc = files.read("skill.json", "skill", required=True)
    if mdoc is None:
        return None, report
    manifest = files.validate(SkillManifest, mdoc)
    if manifest is None:
        return None, report
    report.skill_id = manifest.id
    _warn_additions(manifest, mdoc, report)
    names = manifest.files
    if not _names_inside(names, mdoc, report):
        return None, report
    report.add(mdoc.file, lifecycle_findings(manifest, mdoc, folder, __version__, _present))
    prompt = _read_prompt(files, names.skillDoc)

    tdoc = files.read(names.tools, "tools", required=True)
    tools_file = files.validate(ToolsFile, tdoc) if tdoc else None
    parts: dict[str, tuple[Document, Any]] = {}
    for kind, model in (
        ("guardrails", GuardrailsFile),
        ("credentials", CredentialsFile),
        ("prerequisites", PrerequisitesFile),
        ("tests", TestsFile),
    ):
        doc = files.read(getattr(names, kind), kind, required=False)
        obj = files.validate(model, doc) if doc else None
        if doc is not None and obj is not None and files.check_skill_id(doc, obj, manifest.id):
            parts[kind] = (doc, obj)
    if (
        tdoc is None
        or tools_file is None
        or not files.check_skill_id(tdoc, tools_file, manifest.id)
    ):
        return None, report

    tools = _namespace_tools(tools_file, manifest.id, tdoc, report)
    info = PackageInfo.model_validate({k: getattr(manifest, k) for k in PackageInfo.model_fields})
    intents = manifest.intents
    if not intents.supported:  # spec 003 has no intents: one implicit intent
        intent = implicit_intent(manifest.id, manifest.description or manifest.title, tools)
        intents = intents.model_copy(update={"supported": [intent]})
        report.add(mdoc.file, [implicit_intent_finding(intent, mdoc.locate(("description",)))])
    skill = build_skill(
        manifest,
        id=manifest.id,
        format="package",
        prompt=prompt,
        package=info,
        tools=tools,
        intents=intents,
        name=manifest.name or manifest.title,
        access=parts.get("guardrails", (None, None))[1],
        credentials=parts.get("credentials", (None, None))[1],
        prerequisites=parts.get("prerequisites", (None, None))[1],
        tests_file=parts.get("tests", (None, None))[1],
    )

    others = {
        "access": "guardrails",
        "credentials": "credentials",
        "prerequisites": "prerequisites",
        "tests_file": "tests",
    }

    def document_of(path: FieldPath) -> tuple[Document, FieldPath]:
        """The file a path of the assembled skill was written in, and its path there."""
        if path[:1] == ("tools",):
            return tdoc, path
        part = others.get(str(path[0])) if path else None
        if part is not None and part in parts:
            return parts[part][0], path[1:]
        return mdoc, path

    def locate(path: FieldPath) -> SourceLocation:
        doc, inner = document_of(path)
        return doc.locate(inner)

    def locate_value(path: FieldPath) -> SourceLocation:
        doc, inner = document_of(path)
        return doc.locate_value(inner)

    semantic, compiled = check_domain(skill, locate, locate_value)
    for issue in semantic:
        report.add(issue.location.file, [issue])
    for tool_index, tool in enumerate(tools):
        if tool.inputSchema is None and tool.inputs is None:
            report.add(
                tdoc.file,
                [
                    SkillIssue(
                        Severity.ERROR,
                        f"tool '{tool.name}' has no inputSchema (rule 4)",
                        tdoc.locate(("tools", tool_index)),
                        ("tools", tool_index),
                        code="invalid-schema",
                    )
                ],
            )
        for ci, cred in enumerate(tool.requiresCredentials):
            known = {c.id for c in skill.credentials.credentials} if skill.credentials else set()
            if cred not in known:
                path = ("tools", tool_index, "requiresCredentials", ci)
                report.add(
                    tdoc.file,
                    [
                        SkillIssue(
                            Severity.ERROR,
                            f"tool '{tool.name}' requires unknown credential '{cred}'",
                            tdoc.locate(path),
                            path,
                            code="unknown-credential",
                            hint="declare it in credentials.json",
                        )
                    ],
                )
    _package_rules(skill, parts, report, base or BasePolicy())
    if report.status == "errors":
        return None, report
    skill._conditions = compiled
    skill._locator = locate
    skill._origin = shown
    skill._root = folder.resolve()
    report.loaded = True
    return skill, report


def _present(path: Path) -> bool:
    """Whether anything is at ``path`` (a file, a FIFO, a dangling link ...): only an
    absent file is "missing"; the reader says what is wrong with any other."""
    try:
        os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return False
    except OSError as exc:  # no access ...: the reader says so; a name too long is absent
        return exc.errno != errno.ENAMETOOLONG
    except ValueError:
        return False
    return True


def _inside(name: str) -> bool:
    """Whether a file name stays inside the package folder: relative, no ``..`` above it,
    no drive, no NUL."""
    if _PLAIN_NAME.fullmatch(name) and name not in (".", ".."):
        return True
    if not name or "\x00" in name or PureWindowsPath(name).anchor:
        return False
    path = PurePosixPath(name.replace("\\", "/"))
    if path.is_absolute():
        return False
    depth = 0
    for part in path.parts:
        depth += -1 if part == ".." else 0 if part == "." else 1
        if depth < 0:
            return False
    return depth > 0


def _names_inside(names: PackageFiles, doc: Document, report: SkillReport) -> bool:
    """Every file ``skill.json`` names lies inside the package: a loader reads nothing else."""
    ok = True
    for kind in PackageFiles.model_fields:
        name = getattr(names, kind)
        if not _inside(name):
            where = ("files", kind)
            report.add(
                doc.file,
                [
                    SkillIssue(
                        Severity.ERROR,
                        f"{name!r} is not a file inside the package folder",
                        doc.locate(where),
                        where,
                        code="file-outside-package",
                        hint="name a file in the package folder, e.g. "
                        f"{PackageFiles.model_fields[kind].default!r}",
                    )
                ],
            )
            ok = False
    return ok


def _warn_additions(manifest: SkillManifest, doc: Document, report: SkillReport) -> None:
    if manifest.schemaVersion != "ayati-skill/v1":
        return
    for key in sorted(_SKILLWIRE_ADDITIONS & set(doc.data)):
        report.add(
            doc.file,
            [
                SkillIssue(
                    Severity.WARNING,
                    f"'{key}' is a skillwire addition to format v1",
                    doc.locate((key,)),
                    (key,),
                    code="skillwire-addition",
                    hint="declare schemaVersion skillwire-skill/v1",
                )
            ],
        )


def _read_prompt(files: _Files, name: str) -> str:
    """The text of ``skill.md`` (a warning when absent, an error when unreadable)."""
    shown = files.name(name)
    path = files.folder / name
    if not _present(path):
        files.report.add(
            shown,
            [
                SkillIssue(
                    Severity.WARNING,
                    "skill.md is missing: the skill has no prompt block",
                    SourceLocation(shown),
                    code="missing-file",
                )
            ],
        )
        return ""
    try:
        raw = files.skill_folder.read(path, shown)
        text = raw.decode("utf-8-sig")
    except SkillError as exc:
        files.report.add(shown, exc.issues)
        return ""
    except ValueError as exc:  # UnicodeDecodeError is a ValueError
        files.report.add(
            shown,
            [
                SkillIssue(
                    Severity.ERROR, f"cannot read: {exc}", SourceLocation(shown), code="unreadable"
                )
            ],
        )
        return ""
    files.report.add(shown, [])
    return text


def _namespace_tools(
    tools_file: ToolsFile, skill_id: str, doc: Document, report: SkillReport
) -> list[Any]:
    """``<skillId>.<toolName>``: check the prefix where authors wrote one, add it otherwise."""
    out = []
    for i, tool in enumerate(tools_file.tools):
        name = tool.name
        if "." in name:
            prefix = name.split(".", 1)[0]
            if prefix != skill_id:
                report.add(
                    doc.file,
                    [
                        SkillIssue(
                            Severity.ERROR,
                            f"tool name '{name}' has prefix '{prefix}', not the skill id "
                            f"'{skill_id}'",
                            doc.locate(("tools", i, "name")),
                            ("tools", i, "name"),
                            code="bad-namespace",
                            hint=f"name it '{skill_id}.{name.split('.', 1)[1]}'",
                        )
                    ],
                )
            out.append(tool)
        else:
            out.append(tool.model_copy(update={"name": f"{skill_id}.{name}"}))
    return out


def _package_rules(
    skill: Skill, parts: dict[str, tuple[Document, Any]], report: SkillReport, base: BasePolicy
) -> None:
    if "guardrails" in parts:
        doc, access = parts["guardrails"]
        report.add(doc.file, check_access_plan(skill, access, doc.locate))
        report.add(doc.file, check_widenings(access, base, doc.locate))
    if "credentials" in parts:
        doc, creds = parts["credentials"]
        report.add(doc.file, check_credentials(skill, creds, doc.locate))
    prereqs = parts.get("prerequisites", (None, None))[1]
    if "prerequisites" in parts:
        doc, found = parts["prerequisites"]
        report.add(doc.file, check_prerequisites(found, doc.locate))
    if "tests" in parts:
        doc, tests = parts["tests"]
        report.add(doc.file, check_tests(tests, prereqs, doc.locate))
