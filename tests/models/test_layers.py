"""The model backends import ``skillwire.core`` and each other only (DESIGN.md, Layout)."""

from __future__ import annotations

import ast
from pathlib import Path

import skillwire.models

PACKAGE = Path(skillwire.models.__file__).parent


def skillwire_imports(path: Path) -> set[str]:
    """Every skillwire module ``path`` imports, lazily or not, TYPE_CHECKING included."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {name for name in found if name.split(".")[0] == "skillwire"}


def test_models_import_core_and_models_only() -> None:
    files = sorted(PACKAGE.rglob("*.py"))
    assert PACKAGE / "registry.py" in files
    strays = {
        f"{path.relative_to(PACKAGE)}: {name}"
        for path in files
        for name in skillwire_imports(path)
        if not name.startswith(("skillwire.core", "skillwire.models"))
    }
    assert strays == set()
