"""One exception tree: every exception class skillwire defines is a ``SkillwireError``,
lives in ``core/errors.py`` unless it is private to one package, and is drawn in the
tree of that module's docstring."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from functools import cache

import pytest

import skillwire
from skillwire.core import errors
from skillwire.core.errors import (
    BudgetExhausted,
    ConditionEvaluationError,
    ConditionSyntaxError,
    ControlFlowSignal,
    ModelError,
    ParseFailure,
    ScriptError,
    SkillwireError,
    VersionConflict,
)

PRIVATE_SIGNALS = {
    "skillwire.conditions._values.GiveUp",
    "skillwire.conditions.functions.HelperError",
    "skillwire.skills._yaml_tree.RejectedNodeError",
    "skillwire.skills.source._DuplicateKeyError",
    "skillwire.skills.source._NonFiniteConstantError",
}
"""The signals that stay beside the code that raises and catches them."""

FRAMEWORK_ADAPTERS = {"skillwire.server.limits.BodyTooLargeError": "RequestTooLargeError"}
"""Core errors that must also be a web framework's exception where they are raised
(FastAPI answers 400 for anything but Starlette's HTTPException raised in a body read)."""


@cache
def exception_classes() -> dict[str, type[BaseException]]:
    """Every exception class defined in a module of skillwire, by qualified name."""
    found: dict[str, type[BaseException]] = {}
    for info in pkgutil.walk_packages(skillwire.__path__, "skillwire."):
        if info.name.endswith("__main__"):  # runs the command line when imported
            continue
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if (
                inspect.isclass(value)
                and issubclass(value, BaseException)
                and value.__module__ == info.name
            ):
                found[f"{info.name}.{name}"] = value
    return found


def test_the_walk_finds_classes_in_every_layer() -> None:
    """The walk reaches the modules that define exceptions, so the test below bites."""
    found = exception_classes()
    assert {"skillwire.core.errors.ModelError", *PRIVATE_SIGNALS} <= set(found)
    assert len(found) >= 30


def test_every_exception_skillwire_defines_is_a_skillwire_error() -> None:
    strays = [
        name for name, cls in exception_classes().items() if not issubclass(cls, SkillwireError)
    ]
    assert strays == []


def test_every_exception_lives_in_core_errors_unless_private_to_a_package() -> None:
    elsewhere = {n for n in exception_classes() if not n.startswith("skillwire.core.errors.")}
    assert elsewhere == PRIVATE_SIGNALS | FRAMEWORK_ADAPTERS.keys()
    for name, core_name in FRAMEWORK_ADAPTERS.items():
        assert issubclass(exception_classes()[name], getattr(errors, core_name)), name
    for name in PRIVATE_SIGNALS:
        assert issubclass(exception_classes()[name], ControlFlowSignal), name


def test_the_docstring_draws_every_class() -> None:
    drawn = set(re.findall(r"\b_?[A-Z][A-Za-z]+\b", errors.__doc__ or ""))
    defined = {n.rsplit(".", 1)[1] for n in exception_classes()}
    assert defined - drawn == set()


@pytest.mark.parametrize(
    ("cls", "builtin"),
    [
        (ConditionSyntaxError, ValueError),
        (ConditionEvaluationError, RuntimeError),
        (ScriptError, AssertionError),
    ],
)
def test_classes_keep_the_builtin_their_callers_catch(
    cls: type[Exception], builtin: type[Exception]
) -> None:
    assert issubclass(cls, SkillwireError) and issubclass(cls, builtin)


def test_signals_are_apart_from_failures() -> None:
    for signal in (VersionConflict, BudgetExhausted, ParseFailure):
        assert issubclass(signal, ControlFlowSignal)
    assert not issubclass(ModelError, ControlFlowSignal)
    assert not issubclass(ScriptError, ControlFlowSignal)
