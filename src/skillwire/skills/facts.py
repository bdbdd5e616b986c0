"""Checks of a skill's ``facts:`` and of the conditions that read them.

A fact is a named expression (``reservation: "latest('get_reservation',
{'reservation_id': args.reservation_id}).result"``) that every condition may read as
``facts.<name>``. A fact may read the runtime names (``args``, ``history``, ``inputs``,
``now``, ...) and the facts declared before it; a condition may read the facts the
skill declares, each by name.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from skillwire.conditions import RUNTIME_NAMES, CelCondition, compile_expression
from skillwire.core.conditions import Condition
from skillwire.core.errors import ConditionSyntaxError
from skillwire.core.issues import Severity, SkillIssue
from skillwire.core.location import FieldPath, SourceLocation

__all__ = ["check_facts", "facts_read"]

Locate = Callable[[FieldPath], SourceLocation]


def facts_read(condition: Condition) -> frozenset[str] | None:
    """The facts a condition reads by name; None when it reads ``facts`` whole."""
    if not isinstance(condition, CelCondition):
        return frozenset()
    return condition.fields_read("facts")


def check_facts(
    facts: Mapping[str, str], conditions: Mapping[FieldPath, Condition], locate: Locate
) -> Iterator[SkillIssue]:
    """An error for each fact that is not a name or does not compile, that reads a fact
    not declared before it; and for each condition that reads an undeclared fact."""
    declared: list[str] = []
    for name, text in facts.items():
        path: FieldPath = ("facts", name)
        if not name.isidentifier() or not name.isascii():
            yield _error(locate, path, f"fact name {name!r} is not a name", "invalid-fact")
            continue
        try:
            expression = compile_expression(text, known_names=RUNTIME_NAMES)
        except ConditionSyntaxError as exc:
            col = f" (column {exc.column} of the expression)" if exc.column else ""
            yield _error(
                locate,
                path,
                f"fact {name!r} is invalid: {exc.message}{col}",
                "invalid-fact",
                exc.hint,
            )
            continue
        read = facts_read(expression)
        if read is None:
            yield _error(
                locate, path, f"fact {name!r} reads `facts` whole", "invalid-fact", _BY_NAME
            )
        else:
            for other in sorted(read - set(declared)):
                yield _error(
                    locate,
                    path,
                    f"fact {name!r} reads `facts.{other}`, which is not declared before it",
                    "invalid-fact",
                    "a fact may read the facts declared above it",
                )
        declared.append(name)
    for path, condition in conditions.items():
        read = facts_read(condition)
        if read is None:
            yield _error(
                locate, path, "this condition reads `facts` whole", "unknown-fact", _BY_NAME
            )
            continue
        for other in sorted(read - set(facts)):
            known = ", ".join(facts) or "none"
            yield _error(
                locate,
                path,
                f"`facts.{other}` is not a fact of this skill (facts: {known})",
                "unknown-fact",
                "declare it under `facts:` at the top of the skill",
            )


_BY_NAME = "read each fact by name: `facts.total`"


def _error(locate: Locate, path: FieldPath, message: str, code: str, hint: str = "") -> SkillIssue:
    return SkillIssue(Severity.ERROR, message, locate(path), path, code=code, hint=hint)
