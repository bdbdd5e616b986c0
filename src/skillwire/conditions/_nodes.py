"""The closures a compiled condition is made of: values, logic, relations, selection.

Each builder takes compiled subexpressions (:class:`Expr`) and returns the one that
combines them (functions, methods, macros and arithmetic are in
:mod:`skillwire.conditions._calls`). A closure takes the environment (the variables by
name, and the elements macros bind by slot number) and returns a value, or an
:class:`~skillwire.conditions._values.Unsure` where CEL raises an evaluation error; it
raises :class:`~skillwire.conditions._values.GiveUp` on a value it does not read and
``KeyError`` for a name without a value. Where the compiler knows more (a constant
operand, a chain of selections from a name), the builders choose a closure that does
less work, with the same answers.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from skillwire.conditions._values import (
    INT_MAX,
    INT_MIN,
    CelType,
    Unsure,
    contains,
    equal,
    fail,
    kind,
    order,
    shown,
    truth,
    unequal,
)

__all__ = [
    "NONE",
    "OPERATORS",
    "Env",
    "Expr",
    "Node",
    "conditional",
    "conjunction",
    "constant",
    "disjunction",
    "first_error",
    "indexing",
    "list_of",
    "map_of",
    "negation",
    "presence",
    "reads_of",
    "relation",
    "selection",
    "variable",
]

Env = Mapping[Any, Any]
"""The variables by name, and the elements macros bind by slot number (then a dict)."""
Node = Callable[[Env], Any]
"""A compiled subexpression: its value in an environment."""

NONE: Final = object()
"""Not a constant (distinct from every value a literal can have)."""
_ORDERS: dict[str, Callable[[Any, Any], bool]] = {
    "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
}  # fmt: skip
OPERATORS: Final[dict[str, Callable[[Any, Any], bool]]] = {
    **_ORDERS, "==": operator.eq, "!=": operator.ne,
}  # fmt: skip
"""The comparison operators, by their CEL spelling."""
_FLIPPED = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}


@dataclass(slots=True)
class Expr:
    """A compiled subexpression and what the compiler knows of it."""

    run: Node
    constant: Any = NONE
    """The value, when it is known at load."""
    path: tuple[Any, tuple[str, ...]] | None = None
    """A variable (or macro slot) and the map keys read from it: walked in one closure."""
    select: tuple[Expr, str] | None = None
    """The receiver and field when this is a field selection (the argument of ``has``)."""
    reads: frozenset[str] = frozenset()
    """The variables every evaluation reads (not those behind ``&&``, ``||``, ``?``)."""


def reads_of(parts: Sequence[Expr]) -> frozenset[str]:
    """The variables every evaluation of all of ``parts`` reads."""
    return frozenset().union(*(part.reads for part in parts))


def first_error(values: Sequence[Any]) -> Unsure | None:
    """The first error among ``values`` (checking each is a value the evaluator reads)."""
    for value in values:
        if kind(value) is None:
            return value  # type: ignore[no-any-return]
    return None


def variable(key: str | int) -> Expr:
    """A variable by name, or the element a macro binds by its slot number."""
    reads = frozenset({key}) if isinstance(key, str) else frozenset()
    return Expr(operator.itemgetter(key), path=(key, ()), reads=reads)


def constant(value: Any) -> Expr:
    """A value known at load."""
    return Expr(lambda env: value, constant=value)


def map_of(keys: Sequence[Expr], values: Sequence[Expr]) -> Expr:
    """``{k: v, ...}``: keys are strings or whole numbers; a repeated key keeps the last
    value (as the package does)."""
    pairs = tuple((key.run, value.run) for key, value in zip(keys, values, strict=True))

    def make_map(env: Env) -> Any:
        found: dict[Any, Any] = {}
        for key_of, value_of in pairs:
            key = key_of(env)
            of = kind(key)
            if of is None:
                return key
            if of not in ("string", "int"):
                return fail(f"a {of} cannot be a map key here (text or a whole number)")
            value = value_of(env)
            if kind(value) is None:
                return value
            found[key] = value
        return found

    return Expr(make_map, reads=reads_of([*keys, *values]))


def list_of(items: Sequence[Expr]) -> Expr:
    """``[a, b, ...]``: an error if an element is one."""
    if all(item.constant is not NONE for item in items):
        return constant(tuple(item.constant for item in items))
    runs = tuple(item.run for item in items)

    def make_list(env: Env) -> Any:
        values = [run(env) for run in runs]
        error = first_error(values)
        return values if error is None else error

    return Expr(make_list, reads=reads_of(items))


# logic ---------------------------------------------------------------------------------


def conjunction(left: Expr, right: Expr) -> Expr:
    """``left && right``: false when either side is false, whatever the other gives."""
    return _junction(left, right, decides=False)


def disjunction(left: Expr, right: Expr) -> Expr:
    """``left || right``: true when either side is true, whatever the other gives."""
    return _junction(left, right, decides=True)


def _junction(left: Expr, right: Expr, *, decides: bool) -> Expr:
    """``&&`` (``decides`` False) or ``||`` (True): either side giving ``decides`` is the
    answer, whatever the other gives (CEL's are commutative over errors)."""
    first_of, second_of = left.run, right.run

    def junction(env: Env) -> Any:
        first = first_of(env)
        if first is decides:
            return decides
        second = second_of(env)
        if second is decides:
            truth(first)  # gives up on a value the evaluator does not read
            return decides
        if first is (not decides) and second is (not decides):
            return not decides
        found = truth(first)
        return found if type(found) is Unsure else truth(second)

    return Expr(junction, reads=left.reads)


def negation(operand: Expr) -> Expr:
    """``!operand``."""
    run = operand.run

    def negate(env: Env) -> Any:
        value = run(env)
        if value is True:
            return False
        if value is False:
            return True
        return truth(value)

    return Expr(negate, reads=operand.reads)


def conditional(condition: Expr, yes: Expr, no: Expr) -> Expr:
    """``condition ? yes : no``."""
    test, if_true, if_false = condition.run, yes.run, no.run

    def choice(env: Env) -> Any:
        value = test(env)
        if value is True:
            return if_true(env)
        if value is False:
            return if_false(env)
        return truth(value)

    return Expr(choice, reads=condition.reads)


# relations -----------------------------------------------------------------------------


def relation(op: str, left: Expr, right: Expr) -> Expr:
    """``left op right`` for a comparison operator or ``in``."""
    reads = left.reads | right.reads
    if op == "in":
        return Expr(_membership(left, right), reads=reads)
    if left.constant is not NONE and right.constant is NONE:
        op, left, right = _FLIPPED[op], right, left
    if right.constant is not NONE:
        return Expr(_against(op, left, right.constant), reads=reads)
    first, second = left.run, right.run
    if op in ("==", "!="):
        compare = equal if op == "==" else unequal
        return Expr(lambda env: compare(first(env), second(env)), reads=reads)
    ordering = _ORDERS[op]
    return Expr(lambda env: order(ordering, first(env), second(env)), reads=reads)


def _against(op: str, operand: Expr, value: Any) -> Node:
    """``operand op value``: Python's operator when the operand is plainly of the kind of
    ``value`` (a string, an int, a type), the rules of :mod:`~skillwire.conditions._values`
    otherwise."""
    compare = OPERATORS[op]
    general: Callable[[Any, Any], Any]
    if op in _ORDERS:
        general = lambda left, right: order(compare, left, right)  # noqa: E731
    else:
        general = equal if op == "==" else unequal
    run = operand.run
    name = operand.path[0] if operand.path is not None and not operand.path[1] else None
    of = type(value)
    if of is str:

        def against_text(env: Env) -> Any:
            found = run(env) if name is None else env[name]
            if type(found) is str and found.isascii():
                return compare(found, value)
            return general(found, value)

        return against_text
    if of is int:

        def against_int(env: Env) -> Any:
            found = run(env) if name is None else env[name]
            if type(found) is int and INT_MIN <= found <= INT_MAX:
                return compare(found, value)
            return general(found, value)

        return against_int
    if of is CelType and op in ("==", "!="):

        def against_type(env: Env) -> Any:
            found = run(env)
            if type(found) is CelType:
                return compare(found, value)  # one instance per type
            return general(found, value)

        return against_type
    return lambda env: general(run(env), value)


def _membership(item: Expr, collection: Expr) -> Node:
    elements, run = collection.constant, item.run
    if type(elements) is tuple and elements and all(type(e) is str for e in elements):
        texts = frozenset(elements)

        def among_texts(env: Env) -> Any:
            found = run(env)
            if type(found) is str and found.isascii():
                return found in texts
            return contains(elements, found)

        return among_texts
    receiver = collection.run
    return lambda env: _contains_of(receiver(env), run(env))


def _contains_of(collection: Any, item: Any) -> Any:
    if type(collection) is Unsure:
        return collection
    return contains(collection, item)


# selection -----------------------------------------------------------------------------


def selection(receiver: Expr, name: str, *, field: bool = True) -> Expr:
    """``receiver.name``, or ``receiver['name']`` when not ``field``: a map's entry."""
    select = (receiver, name) if field else None
    missing = fail(f"no such key: {name!r}")
    if receiver.path is not None:
        key, names = receiver.path
        path = (key, (*names, name))
        return Expr(_walk(key, path[1]), path=path, select=select, reads=receiver.reads)
    inner = receiver.run

    def get(env: Env) -> Any:
        value = inner(env)
        return value.get(name, missing) if type(value) is dict else _no_fields(value)

    return Expr(get, select=select, reads=receiver.reads)


def _walk(key: Any, names: tuple[str, ...]) -> Node:
    """The entries ``names`` read in turn from the variable (or slot) ``key``."""
    if len(names) == 1:
        first = names[0]
        missing = fail(f"no such key: {first!r}")

        def get(env: Env) -> Any:
            value = env[key]
            return value.get(first, missing) if type(value) is dict else _no_fields(value)

        return get

    def walk(env: Env) -> Any:
        value = env[key]
        for name in names:
            if type(value) is not dict:
                return _no_fields(value)
            value = value.get(name, _MISSING)
            if value is _MISSING:
                return fail(f"no such key: {name!r}")
        return value

    return walk


_MISSING = object()


def _no_fields(value: Any) -> Any:
    """The error of selecting a field of ``value``, which is not a map."""
    of = kind(value)
    return value if of is None else fail(f"a {of} has no fields")


def indexing(receiver: Expr, index: Expr) -> Expr:
    """``receiver[index]``: an element of a list by position, a map's value by key."""
    collection_of, at_of = receiver.run, index.run

    def item(env: Env) -> Any:
        collection, at = collection_of(env), at_of(env)
        of, by = kind(collection), kind(at)
        if of is None:
            return collection
        if by is None:
            return at
        if of == "list":
            if by != "int":
                return fail(f"a list is indexed by an int, not a {by}")
            if 0 <= at < len(collection):
                return collection[at]
            return fail(f"index out of bounds: {at}")
        if of == "map":
            if by not in ("string", "int") or at not in collection:
                return fail(f"no such key: {shown(at) if by == 'double' else repr(at)}")
            return collection[at]
        return fail(f"a {of} cannot be indexed")

    return Expr(item, reads=receiver.reads | index.reads)


def presence(argument: Expr) -> Expr | None:
    """``has(argument)``; None unless the argument is a field selection."""
    if argument.select is None:
        return None
    receiver, name = argument.select
    run = receiver.run

    def has(env: Env) -> Any:
        value = run(env)
        return name in value if type(value) is dict else _no_fields(value)

    return Expr(has, reads=receiver.reads)
