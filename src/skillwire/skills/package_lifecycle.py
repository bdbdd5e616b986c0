"""What ``skill.json`` says about the package's life, made true at load.

- ``files``: a file ``skill.json`` names explicitly must exist (a package that names
  ``tests.json`` and lacks it is an error, not a package without tests). A file left to
  its default name may be absent (only ``tools.json`` is required).
- ``runtime.minAgentVersion``: a package that needs a newer skillwire is refused, with
  both versions; a version that cannot be read is an error.
- ``runtime.requiredAdapters``: a name that is no executor type skillwire knows is an
  error. Whether this installation can run each adapter is ``skillwire doctor``'s check.
- ``status.state: deprecated``: a warning; ``skillwire check``, the API and the page show
  the state.
- ``status.enabledByDefault: false`` (written so): an info line; ``skillwire serve`` does
  not offer the skill for new jobs unless ``[server] enable`` lists it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from skillwire.core.issues import Severity, SkillIssue
from skillwire.core.location import FieldPath
from skillwire.skills.model import SkillManifest
from skillwire.skills.source import Document

__all__ = ["ADAPTERS", "lifecycle_findings", "parse_version"]

ADAPTERS = frozenset({"python", "simulate", "shell_command", "http_request", "mcp"})
"""The executor types a tool may declare (``tools[].executor.type``)."""


def parse_version(text: str) -> tuple[int, ...] | None:
    """``1.2.3`` (a leading ``v`` or ``>=`` allowed; a suffix such as ``rc1`` or ``-dev``
    on the last part ignored) as numbers, or None when it is not a version."""
    value = text.strip().removeprefix(">=").strip().removeprefix("v")
    parts: list[int] = []
    pieces = value.split(".")
    for index, piece in enumerate(pieces):
        digits = ""
        for ch in piece:
            if not ch.isdigit():
                break
            digits += ch
        if not digits or (len(digits) != len(piece) and index != len(pieces) - 1):
            return None
        parts.append(int(digits))
    return tuple(parts) if parts else None


def lifecycle_findings(
    manifest: SkillManifest,
    doc: Document,
    folder: Path,
    agent_version: str,
    present: Callable[[Path], bool],
) -> list[SkillIssue]:
    """The findings of ``files``, ``runtime`` and ``status`` (errors refuse the package);
    ``present`` says whether anything is at a path (the loader's own test)."""
    found: list[SkillIssue] = []
    names = manifest.files
    where: FieldPath
    for kind in sorted(names.model_fields_set - {"tools"}):  # tools.json: always required
        name = getattr(names, kind)
        if not isinstance(name, str):  # ``"tests": null`` names no file
            continue
        if not present(folder / name):
            where = ("files", kind)
            found.append(
                SkillIssue(
                    Severity.ERROR,
                    f"skill.json names {kind} file '{name}', which is missing",
                    doc.locate(where),
                    where,
                    code="missing-file",
                    hint=f"add {name}, or remove files.{kind} from skill.json",
                )
            )
    runtime = manifest.runtime
    if runtime.minAgentVersion is not None:
        where = ("runtime", "minAgentVersion")
        wanted = parse_version(runtime.minAgentVersion)
        have = parse_version(agent_version)
        if wanted is None:
            found.append(
                SkillIssue(
                    Severity.ERROR,
                    f"minAgentVersion {runtime.minAgentVersion!r} is not a version",
                    doc.locate(where),
                    where,
                    code="min-agent-version",
                    hint="write it as numbers and dots, e.g. '0.1.0'",
                )
            )
        elif have is not None and _padded(have, wanted) < _padded(wanted, have):
            found.append(
                SkillIssue(
                    Severity.ERROR,
                    f"the package needs skillwire {runtime.minAgentVersion} or later; this is "
                    f"{agent_version}",
                    doc.locate(where),
                    where,
                    code="min-agent-version",
                    hint="upgrade skillwire",
                )
            )
    for index, adapter in enumerate(runtime.requiredAdapters):
        if adapter not in ADAPTERS:
            where = ("runtime", "requiredAdapters", index)
            found.append(
                SkillIssue(
                    Severity.ERROR,
                    f"required adapter {adapter!r} is no executor type skillwire knows",
                    doc.locate(where),
                    where,
                    code="unknown-adapter",
                    hint=f"one of {', '.join(sorted(ADAPTERS))}",
                )
            )
    status = manifest.status
    if status.state == "deprecated":
        where = ("status", "state")
        found.append(
            SkillIssue(
                Severity.WARNING,
                "the package is deprecated: it still loads and runs; look for its successor",
                doc.locate(where),
                where,
                code="deprecated",
            )
        )
    if "enabledByDefault" in status.model_fields_set and not status.enabledByDefault:
        where = ("status", "enabledByDefault")
        found.append(
            SkillIssue(
                Severity.INFO,
                "disabled by default: skillwire serve does not offer it for new jobs unless "
                "[server] enable in skillwire.toml lists it",
                doc.locate(where),
                where,
                code="disabled-by-default",
            )
        )
    return found


def _padded(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    return a + (0,) * max(0, len(b) - len(a))
