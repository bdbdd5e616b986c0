"""Skill versions: a content hash over a skill's files, the files themselves, loading a
version again from them, and a readable difference between two versions.

The loader gives every skill it loads its version (:func:`capture`): a package's every
file (``__pycache__`` and the signature file left out), or a single-file skill's file
and the modules of its ``python`` tools found beside it. The version is the first 16
hex digits of a SHA-256 over the files' paths and digests, so the same files are the
same version wherever they lie. A job records the version it started on; the store
keeps the files (:class:`~skillwire.core.store.SkillVersion`), and :func:`load_version`
loads that version again after the files on disk changed.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from skillwire.core.errors import SkillError, UsageError
from skillwire.core.store import SkillVersion
from skillwire.skills.model import Skill
from skillwire.skills.model_tools import PythonExecutor

__all__ = [
    "MAX_VERSION_BYTES",
    "capture",
    "content_version",
    "diff_skills",
    "load_version",
    "version_of",
]

MAX_VERSION_BYTES = 20_000_000
"""The most bytes of files a version keeps; a larger skill gets a version, no files."""

_SKIPPED = frozenset({"__pycache__", "SKILLWIRE-SIGNATURE.json"})


def content_version(files: Mapping[str, bytes]) -> str:
    """The version of these files: 16 hex digits of a SHA-256 over paths and digests."""
    digest = hashlib.sha256()
    for name in sorted(files):
        digest.update(name.encode("utf-8", "surrogateescape") + b"\0")
        digest.update(hashlib.sha256(files[name]).digest())
    return digest.hexdigest()[:16]


def capture(skill: Skill, kind: str, path: Path) -> None:
    """Give ``skill`` (just loaded from ``path``, a ``package`` folder or a ``single``
    file) its version and files. A file that cannot be read leaves the skill without a
    version (its jobs then resume on whatever is loaded)."""
    try:
        files = _package_files(path) if kind == "package" else _single_files(skill, path)
    except OSError:
        return
    private = skill.__pydantic_private__
    if private is None:  # pragma: no cover - pydantic sets it on every instance
        return
    private["_version"] = content_version(files)
    if sum(len(data) for data in files.values()) <= MAX_VERSION_BYTES:
        private["_files"] = files


def version_of(skill: Skill) -> SkillVersion | None:
    """The :class:`SkillVersion` of a loaded skill to keep in a store (None for a skill
    without one: built in code, or too large to keep)."""
    files = skill.version_files()
    if not skill.version_hash or files is None:
        return None
    return SkillVersion(skill.id, skill.version_hash, skill.origin, skill.format, files)


def _package_files(folder: Path) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    pending = [folder]
    while pending:
        current = pending.pop()
        for entry in sorted(os.scandir(current), key=lambda e: e.name):
            if entry.name in _SKIPPED or entry.is_symlink():
                continue
            if entry.is_dir(follow_symlinks=False):
                pending.append(Path(entry.path))
            elif stat.S_ISREG(entry.stat(follow_symlinks=False).st_mode):
                rel = Path(entry.path).relative_to(folder).as_posix()
                files[rel] = Path(entry.path).read_bytes()
    return files


def _single_files(skill: Skill, file: Path) -> dict[str, bytes]:
    root = file.parent
    files = {file.name: file.read_bytes()}
    for tool in skill.tools:
        if isinstance(tool.executor, PythonExecutor):
            module = tool.executor.callable.partition(":")[0].split(".")
            for candidate in (
                Path(*module).with_suffix(".py"),
                Path(*module, "__init__.py"),
            ):
                real = root / candidate
                if real.is_file() and not real.is_symlink():
                    files[candidate.as_posix()] = real.read_bytes()
    return files


def load_version(version: SkillVersion, under: Path) -> Skill:
    """Load ``version`` again from its files, written below the folder ``under`` (kept:
    its ``python`` tools are imported from there). Raises :class:`SkillError` when it
    does not load and :class:`UsageError` for files that are not a skill's."""
    from skillwire.skills.loader_package import load_package
    from skillwire.skills.loader_single import load_single_file

    name = Path(version.source).name if version.format == "package" else None
    folder_name = name or Path(version.source).parent.name or "skill"
    folder = under / version.skill_id / version.version / folder_name
    for rel, data in version.files.items():
        parts = PurePosixPath(rel).parts
        if not parts or PurePosixPath(rel).is_absolute() or ".." in parts:
            raise UsageError(f"skill {version.skill_id} {version.version}: bad file name {rel!r}")
        target = folder.joinpath(*parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.exists():
            target.write_bytes(data)
    if version.format == "package":
        skill, report = load_package(folder)
        kind, path = "package", folder
    else:
        path = folder / Path(version.source).name
        skill, report = load_single_file(path)
        kind = "single"
    if skill is None or report.errors:
        raise SkillError(report.errors)
    capture(skill, kind, path)
    if skill.version_hash != version.version:
        raise UsageError(
            f"skill {version.skill_id}: the files kept as version {version.version} are "
            f"version {skill.version_hash}"
        )
    return skill


def diff_skills(old: Skill, new: Skill) -> list[str]:
    """What changed from ``old`` to ``new``, one line each, by rule, tool and policy (not
    by text): tools added, removed or changed (description, inputs, policy, executor),
    guardrails, approvals, workflows, required inputs, the output contract, intents, the
    prompt and the engine settings."""
    lines: list[str] = []
    old_tools = {t.name: t for t in old.tools}
    new_tools = {t.name: t for t in new.tools}
    for name in sorted(new_tools.keys() - old_tools.keys()):
        lines.append(f"+ tool {name}")
    for name in sorted(old_tools.keys() - new_tools.keys()):
        lines.append(f"- tool {name}")
    for name in sorted(old_tools.keys() & new_tools.keys()):
        a, b = old_tools[name], new_tools[name]
        for part, before, after in (
            ("description", a.description, b.description),
            ("inputs", a.input_schema(), b.input_schema()),
            ("policy", _dump(a.policy), _dump(b.policy)),
            ("executor", _dump(a.executor), _dump(b.executor)),
        ):
            if before != after:
                lines.append(f"~ tool {name}: {part} {_short(before)} -> {_short(after)}")
    guard_a, guard_b = old.policy.guardrails, new.policy.guardrails
    for kind in ("never", "always"):
        before = [_rule_text(r) for r in getattr(guard_a, kind)]
        after = [_rule_text(r) for r in getattr(guard_b, kind)]
        lines += [f"+ guardrail {kind}: {r}" for r in after if r not in before]
        lines += [f"- guardrail {kind}: {r}" for r in before if r not in after]
    for label, before_items, after_items in (
        ("approval", old.policy.approvals, new.policy.approvals),
        ("workflow", old.policy.workflows, new.policy.workflows),
        ("required input", old.required_inputs, new.required_inputs),
        ("intent", old.intents.supported, new.intents.supported),
    ):
        before = [_short(_dump(x)) for x in before_items]
        after = [_short(_dump(x)) for x in after_items]
        lines += [f"+ {label} {x}" for x in after if x not in before]
        lines += [f"- {label} {x}" for x in before if x not in after]
    for label, before_value, after_value in (
        ("output contract", _dump(old.output_contract), _dump(new.output_contract)),
        ("engine", _dump(old.engine), _dump(new.engine)),
        ("allowed state changes", old.allowed_state_changes, new.allowed_state_changes),
    ):
        if before_value != after_value:
            lines.append(f"~ {label}: {_short(before_value)} -> {_short(after_value)}")
    if old.prompt != new.prompt:
        lines.append(
            f"~ prompt (skill.md): {len(old.prompt.splitlines())} -> "
            f"{len(new.prompt.splitlines())} lines"
        )
    return lines


def _dump(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    return dump(mode="json", exclude_defaults=True) if callable(dump) else value


def _rule_text(rule: Any) -> str:
    return rule if isinstance(rule, str) else _short(_dump(rule))


def _short(value: Any, limit: int = 160) -> str:
    import json

    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."
