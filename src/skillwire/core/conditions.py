"""The ``Condition`` protocol: a compiled, side-effect-free boolean expression.

The implementation (CEL with a documented dialect of spoken words) lives in
:mod:`skillwire.conditions`; everything else reads conditions through this protocol.
Evaluation never guesses: a missing variable or a type mismatch raises
:class:`~skillwire.core.errors.ConditionEvaluationError`, and the caller fails
closed (a deny rule blocks, an approval rule asks).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

__all__ = ["Condition"]


@runtime_checkable
class Condition(Protocol):
    """A condition compiled once at load and evaluated many times."""

    @property
    def source(self) -> str:
        """The text as the skill author wrote it."""
        ...

    @property
    def expression(self) -> str:
        """The CEL expression that actually runs (after the dialect is rewritten)."""
        ...

    @property
    def names(self) -> frozenset[str]:
        """The top-level variable names the expression reads."""
        ...

    def evaluate(self, variables: Mapping[str, Any]) -> bool:
        """True or False; raises :class:`ConditionEvaluationError` when it cannot tell."""
        ...
