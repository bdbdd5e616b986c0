"""DESIGN.md's import rules, checked over every import in ``src/skillwire``.

Every ``import`` and ``from ... import`` counts: at module level, inside functions (the
lazy ones) and under ``if TYPE_CHECKING:``. A package may import only the packages its
layer allows, and never another package's private module (``_x.py``): a package's
``__init__.py`` is its API.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "skillwire"

ALLOWED: dict[str, frozenset[str]] = {
    "core": frozenset(),
    "conditions": frozenset({"core"}),
    "skills": frozenset({"core", "conditions"}),
    "policy": frozenset({"core", "conditions", "skills"}),
    "models": frozenset({"core"}),
    "store": frozenset({"core"}),
    "tools": frozenset({"core", "skills"}),
    "testing": frozenset({"core"}),
    "engine": frozenset({"core", "conditions", "skills", "policy"}),
    "sim": frozenset({"core", "conditions", "skills", "policy"}),
    "builder": frozenset({"core", "conditions", "skills", "policy"}),
}
"""Who may import whom (DESIGN.md, "Layout"). Packages not named here (``server``)
and the top-level modules (``cli*.py``, ``assembly.py``, ``config.py``) assemble the
program and may import any package; nothing may import them."""

ASSEMBLERS = frozenset(
    {
        "server",
        "cli",
        "cli_app",
        "cli_call",
        "cli_check",
        "cli_jobs",
        "cli_new",
        "cli_new_dry_run",
        "cli_sim",
        "cli_output",
        "cli_values",
        "cli_db",
        "cli_worker",
        "jobqueue",
        "cli_test",
        "cli_doctor",
        "cli_signing",
        "cli_skills",
        "versioning",
        "doctor",
        "skilltests",
        "assembly",
        "__main__",
    }
)
"""What puts the program together: no package imports these."""

ROOT_CONSTANTS = frozenset({"skillwire.__version__"})
"""What the root package itself holds (it imports nothing): any layer may read it (the
package loader checks ``runtime.minAgentVersion`` against the version)."""

OPEN_TO_ASSEMBLY = frozenset({"config"})
"""Top-level modules only the assembling code may import (``config`` is read by
``assembly``, ``server`` and the CLI, never by a package)."""


@dataclass(frozen=True)
class Import:
    """One imported module name, where it is written."""

    module: str
    file: Path
    line: int

    def __str__(self) -> str:
        return f"{self.file.relative_to(SRC.parent)}:{self.line}: {self.module}"


def _module_name(path: Path) -> list[str]:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    return parts[:-1] if parts[-1] == "__init__" else parts


def imports_of(path: Path, text: str | None = None) -> list[Import]:
    """Every skillwire module ``path`` imports, lazy and ``TYPE_CHECKING`` ones included.

    ``from skillwire.x import y`` counts as importing both ``skillwire.x`` and
    ``skillwire.x.y`` (``y`` may be a module); relative imports are resolved. ``text``
    stands in for the file's contents."""
    source = path.read_text(encoding="utf-8") if text is None else text
    tree = ast.parse(source, str(path))
    here = _module_name(path)
    package = here if path.name == "__init__.py" else here[:-1]
    found: list[Import] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [Import(alias.name, path, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            found.append(Import(module, path, node.lineno))
            found += [Import(f"{module}.{a.name}", path, node.lineno) for a in node.names]
    return [i for i in found if i.module == "skillwire" or i.module.startswith("skillwire.")]


def _top(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _is_package(name: str) -> bool:
    return (SRC / name).is_dir()


SOURCES = sorted(SRC.rglob("*.py"))


def test_the_rules_name_every_package() -> None:
    """A new package gets its line in ALLOWED (and DESIGN.md) when it is born."""
    packages = {p.name for p in SRC.iterdir() if (p / "__init__.py").is_file()}
    assert packages - ALLOWED.keys() - ASSEMBLERS == set()


def test_the_walk_sees_lazy_and_type_checking_imports() -> None:
    """The checker itself: imports inside functions, under ``TYPE_CHECKING`` and
    relative ones count (read as if the text stood in ``core/``)."""
    text = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from skillwire.engine import Runtime\n"
        "def f():\n    import skillwire.store._rows\n"
        "from ..policy import gate\n"
    )
    modules = {i.module for i in imports_of(SRC / "core" / "probe.py", text)}
    assert {"skillwire.engine", "skillwire.store._rows", "skillwire.policy.gate"} <= modules


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(SRC)))
def test_imports_follow_the_layers(path: Path) -> None:
    me = _top(".".join(_module_name(path)))
    wrong: list[str] = []
    for imp in imports_of(path):
        target = _top(imp.module)
        if not target or target == me or imp.module in ROOT_CONSTANTS:
            continue
        if target in ASSEMBLERS or target in OPEN_TO_ASSEMBLY:
            if me not in ASSEMBLERS:
                wrong.append(f"{imp} ({me} may not import {target})")
        elif me in ALLOWED and target not in ALLOWED[me]:
            wrong.append(f"{imp} ({me} may import only {sorted(ALLOWED[me]) or 'nothing'})")
    assert wrong == []


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(SRC)))
def test_no_private_module_of_another_package(path: Path) -> None:
    me = _top(".".join(_module_name(path)))
    wrong = []
    for imp in imports_of(path):
        parts = imp.module.split(".")
        if len(parts) < 3 or parts[1] == me or not _is_package(parts[1]):
            continue
        if any(p.startswith("_") and not p.startswith("__") for p in parts[2:]):
            wrong.append(str(imp))
    assert wrong == []
