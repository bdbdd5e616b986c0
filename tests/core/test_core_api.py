"""``skillwire.core``'s ``__all__`` is exactly what it exports, and it exports the tree."""

from __future__ import annotations

import types

import skillwire.core
from skillwire.core import errors


def public_names(module: types.ModuleType) -> set[str]:
    """Names bound in ``module`` that are not private and not submodules."""
    return {
        name
        for name, value in vars(module).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    }


def test_all_matches_what_core_exports() -> None:
    exported = skillwire.core.__all__
    assert len(exported) == len(set(exported))
    assert sorted(exported) == sorted(public_names(skillwire.core))


def test_all_of_errors_matches_what_it_defines() -> None:
    defined = {
        name
        for name, value in vars(errors).items()
        if isinstance(value, type) and value.__module__ == errors.__name__
    }
    assert sorted(errors.__all__) == sorted(n for n in defined if not n.startswith("_"))


def test_core_exports_the_whole_tree() -> None:
    assert set(errors.__all__) <= set(skillwire.core.__all__)
