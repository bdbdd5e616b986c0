"""Shared fixtures: paths to the examples and a factory for skill folders."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture
def refund_yaml() -> Path:
    """The refund example's domain.yaml."""
    return EXAMPLES / "refund_support" / "domain.yaml"


@pytest.fixture
def refund_pkg(tmp_path: Path) -> Path:
    """A writable copy of the refund package."""
    dest = tmp_path / "refund_support_pkg"
    shutil.copytree(EXAMPLES / "refund_support_pkg", dest)
    return dest


PackageEdit = Callable[[str, Callable[[Any], None]], None]


@pytest.fixture
def edit_package(refund_pkg: Path) -> PackageEdit:
    """Edit one JSON file of the package copy: ``edit("tools.json", fn)``."""

    def edit(name: str, change: Callable[[Any], None]) -> None:
        path = refund_pkg / name
        data = json.loads(path.read_text())
        change(data)
        path.write_text(json.dumps(data, indent=2))

    return edit
