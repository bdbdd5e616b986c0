"""Finding and loading skills under paths, with failure isolation.

``load_paths`` walks files and folders, loads each skill on its own (a broken one
never stops the others), then applies the rules that need every skill at once:
duplicate skill ids (rule 2) and duplicate tool names (rule 3).

In a folder, a skill is a package folder (its ``skill.json`` has a ``schemaVersion``)
or a file named ``domain.yaml``, ``skill.yaml``, ``*.skill.yaml`` (or ``.yml``), or a
single-file ``skill.json``. A file named on the command line loads whatever its name.
"""

from __future__ import annotations

import gc
import json
import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from skillwire.core.errors import SkillError, UsageError
from skillwire.core.issues import Severity, SkillIssue
from skillwire.core.location import SourceLocation
from skillwire.skills.base_policy import BasePolicy
from skillwire.skills.loader_package import is_package_manifest, load_package
from skillwire.skills.loader_single import load_single_file
from skillwire.skills.model import Skill
from skillwire.skills.report import LoadReport, SkillReport
from skillwire.skills.signing import SIGNATURE_FILE, TrustPolicy, verify_folder
from skillwire.skills.source import read_skill_bytes
from skillwire.skills.versions import capture

__all__ = ["LoadResult", "discover", "load_paths", "load_skill"]

_SKIP_DIRS = frozenset({".git", ".venv", "node_modules", "__pycache__", ".mypy_cache"})
_SINGLE_NAMES = frozenset({"domain.yaml", "domain.yml", "skill.yaml", "skill.yml"})


@dataclass
class LoadResult:
    """Usable skills by id, and the report of everything found."""

    skills: dict[str, Skill] = field(default_factory=dict)
    report: LoadReport = field(default_factory=LoadReport)


def _is_file(path: Path) -> bool:
    """``path.is_file()``; False for a path that cannot be looked at (too long, no access)."""
    try:
        return path.is_file()
    except (OSError, ValueError):
        return False


def _is_dir(path: Path) -> bool:
    """``path.is_dir()``; False for a path that cannot be looked at."""
    try:
        return path.is_dir()
    except (OSError, ValueError):
        return False


def _exists(path: Path) -> bool:
    """``path.exists()``; False for a path that cannot be looked at."""
    try:
        return path.exists()
    except (OSError, ValueError):
        return False


def _is_package_dir(folder: Path) -> bool:
    manifest = folder / "skill.json"
    if not _is_file(manifest):
        return False
    if _is_file(folder / "tools.json"):
        return True
    try:  # read as the loader reads it: inside the folder, a regular file, bounded
        raw = read_skill_bytes(manifest, folder, str(manifest))
        return is_package_manifest(json.loads(raw.decode("utf-8-sig")))
    except (SkillError, ValueError, RecursionError):  # the loader reports what is wrong
        return False


def _is_skill_file(path: Path) -> bool:
    name = path.name.lower()
    return (
        name in _SINGLE_NAMES
        or name.endswith((".skill.yaml", ".skill.yml"))
        or (name == "skill.json" and not _is_package_dir(path.parent))
    )


def discover(paths: Iterable[Path]) -> Iterator[tuple[str, Path]]:
    """``("package" | "single" | "missing" | "outside", path)`` for every skill under
    ``paths``, sorted. A folder named is read wherever it leads; inside it, a folder or
    skill file that is a link leading out of it is ``"outside"`` and not followed. (A
    single file is read only from inside the folder holding it: see ``SkillFolder``.)"""
    for root in paths:
        if not _exists(root):
            yield "missing", root
        elif not _is_dir(root):  # a file, or a FIFO or device the reader refuses
            if root.name == "skill.json" and _is_package_dir(root.parent):
                yield "package", root.parent
            else:
                yield "single", root
        elif _is_package_dir(root):
            yield "package", root
        else:
            yield from _walk(root)


def _walk(folder: Path) -> Iterator[tuple[str, Path]]:
    """Depth first, in sorted order, without recursion (folders may nest deeply); a folder
    reached a second time (through a symbolic link) is not walked again, and a link that
    leads out of ``folder`` is reported, not followed."""
    seen: set[tuple[int, int]] = set()
    pending = [_entries(folder, seen)]
    top = _real(folder)
    while pending:
        entry = next(pending[-1], None)
        if entry is None:
            pending.pop()
        elif _is_dir(entry):
            if entry.name in _SKIP_DIRS or entry.name.startswith("."):
                continue
            if _leaves(entry, top):
                yield "outside", entry
            elif _is_package_dir(entry):
                yield "package", entry
            else:
                pending.append(_entries(entry, seen))
        elif _is_skill_file(entry):  # other files are never read: a link among them is left
            yield ("outside" if _leaves(entry, top) else "single"), entry


def _real(path: Path) -> str | None:
    try:
        return os.path.realpath(path)
    except (OSError, ValueError):
        return None


def _leaves(entry: Path, top: str | None) -> bool:
    """Whether ``entry`` is a link that leads out of the folder ``top`` (resolved)."""
    if not os.path.islink(entry):
        return False
    real = _real(entry)
    if top is None or real is None:
        return True
    try:
        return os.path.commonpath([top, real]) != top
    except ValueError:  # another drive
        return True


def _entries(folder: Path, seen: set[tuple[int, int]]) -> Iterator[Path]:
    """The folder's entries, sorted; none if it cannot be listed or was walked already."""
    try:
        stat = folder.stat()
        if (stat.st_dev, stat.st_ino) in seen:
            return iter(())
        seen.add((stat.st_dev, stat.st_ino))
        return iter(sorted(folder.iterdir()))
    except (OSError, ValueError):
        return iter(())


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while skills load, then restore it.

    A load allocates many objects and keeps nearly all of them (the skills); every full
    collection would walk the whole growing heap again, which cost about half of a large
    load. Reference counting still frees what a load drops; the few cycles left (parser
    internals) wait for a later collection. Afterwards, what the load allocated is filed
    with the old objects (``freeze`` then ``unfreeze`` moves every object to the oldest
    generation without walking them) instead of one young collection walking all of it;
    skipped when the application froze objects itself. Left alone if the caller disabled
    the collector."""
    enabled = gc.isenabled()
    if enabled:
        gc.disable()
    try:
        yield
    finally:
        if enabled:
            if gc.get_freeze_count() == 0:
                gc.freeze()
                gc.unfreeze()
            gc.enable()


def load_paths(
    paths: Iterable[Path | str],
    base: BasePolicy | None = None,
    *,
    trust: TrustPolicy | None = None,
) -> LoadResult:
    """Load every skill under ``paths``. Never raises for a bad skill: read the report.
    A package's widenings are judged against ``base``, the operator's base policy
    (skillwire's default when None).

    With ``trust``, a skill in a folder the policy requires signed is loaded only if its
    folder carries a signature by a trusted key that matches every file (else an error
    in its report, code ``signature``; the other skills load as before)."""
    with _collector_paused():
        return _load_paths(paths, base, trust)


def _load_paths(
    paths: Iterable[Path | str], base: BasePolicy | None, trust: TrustPolicy | None = None
) -> LoadResult:
    result = LoadResult()
    owners: dict[str, Skill] = {}
    found = False
    for kind, path in discover(Path(p) for p in paths):
        found = True
        if kind in ("missing", "outside"):
            result.report.skills.append(_not_loaded(kind, path))
            continue
        folder = path if kind == "package" else path.parent
        refusal = _untrusted(folder, trust)
        if refusal is not None:
            result.report.skills.append(_refused(kind, path, folder, refusal))
            continue
        skill, rep = load_package(path, base=base) if kind == "package" else load_single_file(path)
        result.report.skills.append(rep)
        if skill is not None and trust is not None and trust.requires(folder):
            signed_for = verify_folder(folder, skill_id=skill.id, trusted=trust.keys)
            if not signed_for.ok:  # another skill's signature, or changed meanwhile
                rep.add(str(folder / SIGNATURE_FILE), [_signature_issue(folder, signed_for.reason)])
                rep.loaded = False
                continue
        if skill is not None:
            capture(skill, kind, path)
            _admit(skill, rep, result, owners)
    if not found:
        rep = SkillReport(source=", ".join(str(p) for p in paths), format="?")
        rep.add(
            rep.source,
            [
                SkillIssue(
                    Severity.WARNING, "no skill found", SourceLocation(rep.source), code="no-skill"
                )
            ],
        )
        result.report.skills.append(rep)
    return result


def _untrusted(folder: Path, trust: TrustPolicy | None) -> str | None:
    """Why the skill in ``folder`` may not be read under ``trust``, or None. Checked
    before any of its files is parsed."""
    if trust is None or not trust.requires(folder):
        return None
    verdict = verify_folder(folder, trusted=trust.keys)
    return None if verdict.ok else verdict.reason


def _signature_issue(folder: Path, reason: str) -> SkillIssue:
    return SkillIssue(
        Severity.ERROR,
        f"refused by the trust policy: {reason}",
        SourceLocation(str(folder / SIGNATURE_FILE)),
        code="signature",
        hint="sign it with a trusted key (skillwire sign), or leave require_signature off "
        "for this folder in skillwire.toml",
    )


def _refused(kind: str, path: Path, folder: Path, reason: str) -> SkillReport:
    rep = SkillReport(source=str(path), format="package" if kind == "package" else "?")
    rep.add(str(folder / SIGNATURE_FILE), [_signature_issue(folder, reason)])
    return rep


def _not_loaded(kind: str, path: Path) -> SkillReport:
    """The report of a path named but absent, or of a link out of the folder being loaded."""
    rep = SkillReport(source=str(path), format="?")
    if kind == "missing":
        found = SkillIssue(
            Severity.ERROR, "no such file or folder", SourceLocation(str(path)), code="missing-file"
        )
    else:
        found = SkillIssue(
            Severity.ERROR,
            "is a link that leads outside the folder being loaded: not followed",
            SourceLocation(str(path)),
            code="file-outside",
            hint="name the link's target to load the skills there",
        )
    rep.add(str(path), [found])
    return rep


def _admit(skill: Skill, rep: SkillReport, result: LoadResult, owners: dict[str, Skill]) -> None:
    """Rules 2 and 3: a later skill with a taken id or tool name is rejected.

    ``owners`` maps every global tool name of the skills admitted so far to its skill;
    it grows with each admitted skill (kept by the caller, so a load stays linear)."""
    first = result.skills.get(skill.id)
    if first is not None:
        rep.add(
            rep.source,
            [
                SkillIssue(
                    Severity.ERROR,
                    f"duplicate skill id '{skill.id}' (also {first.origin}): rejected (rule 2)",
                    skill.locate(("id",)),
                    ("id",),
                    code="duplicate-skill-id",
                )
            ],
        )
        rep.loaded = False
        return
    clashes = [
        (i, t.name)
        for i, t in enumerate(skill.tools)
        if _global(skill, t.name) and t.name in owners
    ]
    if clashes:
        for i, name in clashes:
            rep.add(
                rep.source,
                [
                    SkillIssue(
                        Severity.ERROR,
                        f"duplicate tool name '{name}' (also in skill "
                        f"'{owners[name].id}'): rejected (rule 3)",
                        skill.locate(("tools", i, "name")),
                        ("tools", i, "name"),
                        code="duplicate-tool",
                    )
                ],
            )
        rep.loaded = False
        return
    result.skills[skill.id] = skill
    owners.update((t.name, skill) for t in skill.tools if _global(skill, t.name))


def _global(skill: Skill, tool_name: str) -> bool:
    """Package tools, and namespaced-looking names, share one global namespace."""
    return skill.format == "package" or "." in tool_name


def load_skill(path: Path | str, *, trust: TrustPolicy | None = None) -> Skill:
    """Load exactly one skill; raise :class:`SkillError` with every error if it fails."""
    result = load_paths([path], trust=trust)
    errors = [i for rep in result.report.skills for i in rep.errors]
    if errors:
        raise SkillError(errors)
    if len(result.skills) != 1:
        raise UsageError(f"{path}: expected one skill, found {len(result.skills)}")
    return next(iter(result.skills.values()))
