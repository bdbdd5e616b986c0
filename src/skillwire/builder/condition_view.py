"""A condition the author types, checked and shown back the way ``check --explain`` shows
it: the author's words and the CEL that runs."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from skillwire.conditions import RUNTIME_NAMES, ConditionSyntaxError, compile_condition

__all__ = ["ConditionView", "view_condition"]


@dataclass(frozen=True, slots=True)
class ConditionView:
    """A typed condition: what runs, or why it cannot."""

    written: str
    """As the author typed it."""
    expression: str | None
    """The CEL that runs (``runs`` in ``check --explain``), or None when it does not
    compile."""
    error: str = ""
    """Why it does not compile, with the column."""
    hint: str = ""
    """What to write instead."""

    @property
    def ok(self) -> bool:
        """Whether it compiles."""
        return self.expression is not None

    def __str__(self) -> str:
        if self.expression is not None:
            return f"when: {self.written}\n  runs: {self.expression}"
        where = f"{self.error}"
        return f"when: {self.written}\n  error: {where}" + (
            f"\n  fix: {self.hint}" if self.hint else ""
        )


def view_condition(text: str, arguments: Collection[str] | None = None) -> ConditionView:
    """Compile ``text`` (the spoken dialect or CEL); with ``arguments`` (the names of the
    tool's inputs), a name that is neither one of them nor a runtime name is an error
    with a "did you mean"."""
    known = None if arguments is None else {*arguments, *RUNTIME_NAMES}
    try:
        compiled = compile_condition(text, known_names=known)
    except ConditionSyntaxError as exc:
        at = f" (column {exc.column})" if exc.column else ""
        return ConditionView(text, None, f"{exc.message}{at}", exc.hint)
    return ConditionView(text, compiled.expression)
