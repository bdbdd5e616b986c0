"""The engine and core keep to their layers (DESIGN.md, "Who may import whom").

``core`` imports nothing of skillwire; ``engine`` imports core, conditions, skills and
policy, and reaches tools, models and stores through core's protocols only. Every
import counts: at the top, inside a function, under ``TYPE_CHECKING``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from tests.conftest import ROOT

PACKAGE = ROOT / "src" / "skillwire"

ALLOWED = {
    "core": {"core"},
    "engine": {"core", "conditions", "skills", "policy", "engine"},
}


def imported(path: Path) -> list[tuple[int, str]]:
    """Every skillwire module ``path`` imports, with its line."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
            # ``from skillwire import tools`` imports the package named
            found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
    return [(line, name) for line, name in found if name.split(".")[0] == "skillwire"]


def crossings(package: str) -> list[str]:
    """Imports of ``package``'s modules that leave its allowed layers or reach into
    another package's private module."""
    wrong = []
    for path in sorted((PACKAGE / package).rglob("*.py")):
        where = path.relative_to(PACKAGE.parent)
        for line, name in imported(path):
            parts = name.split(".")
            if len(parts) < 2 or not (PACKAGE / parts[1]).is_dir():
                continue  # skillwire itself, or a name imported from a package
            if parts[1] not in ALLOWED[package]:
                wrong.append(f"{where}:{line} imports {name}")
            elif parts[1] != package and any(p.startswith("_") for p in parts[2:]):
                wrong.append(f"{where}:{line} imports the private {name}")
    return wrong


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_the_package_imports_only_its_layers(package: str) -> None:
    assert crossings(package) == []


def test_the_check_sees_lazy_and_type_checking_imports(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from skillwire.skills.model_tools import Tool\n"
        "def f():\n    import skillwire.tools\n    from skillwire import store\n"
    )
    assert [name for _, name in imported(module)] == [
        "skillwire.skills.model_tools",
        "skillwire.skills.model_tools.Tool",
        "skillwire.tools",
        "skillwire",
        "skillwire.store",
    ]
