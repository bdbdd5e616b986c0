"""The closures of calls: functions, methods, macros and arithmetic.

The companion of :mod:`skillwire.conditions._nodes` (same :class:`Expr`, same
conventions: an error is an :class:`~skillwire.conditions._values.Unsure` value).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final

from skillwire.conditions._compute import ARITHMETIC, as_double, negate
from skillwire.conditions._nodes import NONE, Env, Expr, Node, constant, first_error, reads_of
from skillwire.conditions._values import Unsure, fail, is_text, kind, truth
from skillwire.conditions.functions import HelperError
from skillwire.core.patterns import Pattern, PatternError, compile_pattern

__all__ = [
    "MACROS",
    "TEXT_TESTS",
    "application",
    "arithmetic",
    "as_decimal",
    "helper_call",
    "job_call",
    "macro",
    "minus",
    "pattern_match",
    "text_relation",
]

TEXT_TESTS: Final[dict[str, Callable[[str, str], bool]]] = {
    "startsWith": str.startswith, "endsWith": str.endswith, "contains": str.__contains__,
}  # fmt: skip
"""The string methods, by their CEL name."""


def application(function: Callable[[Any], Any], argument: Expr) -> Expr:
    """``function(argument)`` for a function of one value (``size``, ``type``, ``int``,
    a getter): folded at load when the argument is a constant."""
    if argument.constant is not NONE:
        value = function(argument.constant)
        if type(value) is not Unsure:
            return constant(value)
    run = argument.run

    def apply(env: Env) -> Any:
        value = run(env)
        return value if type(value) is Unsure else function(value)

    return Expr(apply, reads=argument.reads)


def arithmetic(op: str, left: Expr, right: Expr) -> Expr:
    """``left op right`` for ``+ - * / %`` (folded at load when both are constants)."""
    compute = ARITHMETIC[op]
    if left.constant is not NONE and right.constant is not NONE:
        value = compute(left.constant, right.constant)
        if type(value) is not Unsure:
            return constant(tuple(value) if type(value) is list else value)
    first, second = left.run, right.run
    return Expr(lambda env: compute(first(env), second(env)), reads=left.reads | right.reads)


def minus(operand: Expr) -> Expr:
    """``-operand``."""
    return application(negate, operand)


def as_decimal(expr: Expr) -> Expr:
    """``expr`` read as a condition that computes reads data: a whole number as a
    double (:func:`~skillwire.conditions._compute.as_double`)."""
    run = expr.run
    return Expr(lambda env: as_double(run(env)), expr.constant, expr.path, expr.select, expr.reads)


def job_call(holder: type, key: str, method: str, name: str, arguments: Sequence[Expr]) -> Expr:
    """``untrusted(x)``, ``origin(x)``, ``latest(tool, match)``: a method of the value
    the environment holds under ``key`` (``KeyError`` without one)."""
    runs = tuple(argument.run for argument in arguments)
    reads = reads_of(arguments) | {key}
    refused = fail(f"{name}() needs the job's {key.lstrip('$')}")

    def answer(found: Any, values: Sequence[Any]) -> Any:
        error = first_error(values)
        if error is not None:
            return error
        if not isinstance(found, holder):
            return refused
        try:
            return getattr(found, method)(*values)
        except HelperError as exc:
            return fail(str(exc))

    if len(runs) == 1:  # untrusted(x), origin(x): one value, read without a list
        (only,) = runs

        def read_one(env: Env) -> Any:
            found = env[key]
            value = only(env)
            if type(value) is str and value.isascii() and type(found) is holder:
                try:  # plain text: nothing to check first
                    return getattr(found, method)(value)
                except HelperError as exc:
                    return fail(str(exc))
            return answer(found, (value,))

        return Expr(read_one, reads=reads)

    def read_job(env: Env) -> Any:
        found = env[key]
        return answer(found, [run(env) for run in runs])

    return Expr(read_job, reads=reads)


def helper_call(name: str, function: Callable[..., Any], arguments: Sequence[Expr]) -> Expr:
    """``sum(xs)`` and the other pure helpers."""
    runs = tuple(argument.run for argument in arguments)

    def call_helper(env: Env) -> Any:
        values = [run(env) for run in runs]
        error = first_error(values)
        if error is not None:
            return error
        try:
            return function(*values)
        except HelperError as exc:
            return fail(str(exc))
        except TypeError:
            return fail(f"{name}() takes other arguments")

    return Expr(call_helper, reads=reads_of(arguments))


def text_relation(method: str, receiver: Expr, argument: Expr) -> Expr:
    """``receiver.startsWith(argument)`` and the other :data:`TEXT_TESTS`."""
    test, text_of, part_of = TEXT_TESTS[method], receiver.run, argument.run

    def text_test(env: Env) -> Any:
        text, part = text_of(env), part_of(env)
        if type(text) is str and type(part) is str and text.isascii() and part.isascii():
            return test(text, part)
        a, b = kind(text), kind(part)
        if a is None:
            return text
        if b is None:
            return part
        if a == "string" and b == "string":
            return test(text, part)
        return fail(f"no such overload: {a}.{method}({b})")

    return Expr(text_test, reads=receiver.reads | argument.reads)


def pattern_match(receiver: Expr, argument: Expr, known: Pattern | None) -> Expr:
    """``receiver.matches(argument)`` on the skill pattern engine; ``known``: the
    pattern written in the condition, compiled at load (one from the data is compiled
    once and cached by the engine)."""
    text_of, pattern_of = receiver.run, argument.run

    def search(env: Env) -> Any:
        text = text_of(env)
        pattern = known
        source = None if pattern is not None else pattern_of(env)
        a = kind(text)
        if a is None:
            return text
        if pattern is None:
            b = kind(source)
            if b is None:
                return source
            if b != "string":
                return fail(f"matches() takes text and a pattern, not {a} and {b}")
            try:
                pattern = compile_pattern(str(source))
            except PatternError as exc:
                return fail(f"matches(): {exc}")
        if a != "string" or not is_text(text):
            return fail(f"matches() takes text, not {a}")
        return pattern.search(text) is not None

    return Expr(search, reads=receiver.reads | argument.reads)


# macros --------------------------------------------------------------------------------


def _elements(items: Any) -> Any:
    """What a macro ranges over: a list's elements, a map's keys; else an error."""
    of = kind(items)
    if of in ("list", "map"):
        return items
    return items if of is None else fail(f"a macro ranges over a list or a map, not {of}")


def _ranging(decides: bool) -> Callable[[Node, int, Node], Node]:
    """``exists`` (``decides`` True: true at the first element whose body is true) or
    ``all`` (``decides`` False: false at the first element whose body is false)."""

    def build(items_of: Node, slot: int, body: Node) -> Node:
        def ranging(env: Env) -> Any:
            items = _elements(items_of(env))
            if type(items) is Unsure:
                return items
            frame: Any = env
            for item in items:
                frame[slot] = item
                found = body(frame)
                if found is not (not decides):
                    return decides if found is decides else truth(found)
            return not decides

        return ranging

    return build


def _exists_one(items_of: Node, slot: int, body: Node) -> Node:
    def exists_one(env: Env) -> Any:
        items = _elements(items_of(env))
        if type(items) is Unsure:
            return items
        count = 0
        frame: Any = env
        for item in items:
            frame[slot] = item
            found = body(frame)
            if found is True:
                count += 1
            elif found is not False:
                return truth(found)
        return count == 1

    return exists_one


def _filtered(items_of: Node, slot: int, body: Node) -> Node:
    def filtered(env: Env) -> Any:
        items = _elements(items_of(env))
        if type(items) is Unsure:
            return items
        kept = []
        frame: Any = env
        for item in items:
            frame[slot] = item
            found = body(frame)
            if found is True:
                kept.append(item)
            elif found is not False:
                return truth(found)
        return kept

    return filtered


def _mapped(items_of: Node, slot: int, body: Node, only: Node | None = None) -> Node:
    def mapped(env: Env) -> Any:
        items = _elements(items_of(env))
        if type(items) is Unsure:
            return items
        values = []
        frame: Any = env
        for item in items:
            frame[slot] = item
            if only is not None:
                keep = only(frame)
                if keep is False:
                    continue
                if keep is not True:
                    return truth(keep)
            value = body(frame)
            if kind(value) is None:
                return value
            values.append(value)
        return values

    return mapped


_RANGING: dict[str, Callable[[Node, int, Node], Node]] = {
    "exists": _ranging(True), "all": _ranging(False), "exists_one": _exists_one,
    "filter": _filtered, "map": _mapped,
}  # fmt: skip
MACROS: Final = frozenset(_RANGING)
"""The macros: each takes a list (or a map's keys), a bound name and a body."""


def macro(name: str, receiver: Expr, slot: int, body: Expr, only: Expr | None = None) -> Expr:
    """``receiver.name(x, body)``, ``x`` being the element bound in slot ``slot``
    (``receiver.map(x, only, body)`` with a filter).

    The elements are taken in order, as the CEL package does: ``exists`` is true at the
    first element whose body is true and ``all`` false at the first one whose body is
    false; an error before that is the answer.
    """
    if only is not None:
        return Expr(_mapped(receiver.run, slot, body.run, only.run), reads=receiver.reads)
    return Expr(_RANGING[name](receiver.run, slot, body.run), reads=receiver.reads)
