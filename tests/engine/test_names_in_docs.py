"""The names the package's docstring sends a reader to exist."""

from __future__ import annotations

import importlib
import re

import pytest

import skillwire

NAMED = re.findall(r":(?:func|class|mod):`([\w.]+)`", skillwire.__doc__ or "")


def test_the_docstring_names_something() -> None:
    assert "skillwire.skills.load_skill" in NAMED


@pytest.mark.parametrize("name", NAMED)
def test_each_name_in_the_package_docstring_exists(name: str) -> None:
    module_name, _, attr = name.rpartition(".")
    assert hasattr(importlib.import_module(module_name), attr), name
