"""The closures a condition's fast path is made of (:mod:`skillwire.conditions._fastpath`).

Each builder takes compiled subexpressions (:class:`Expr`) and returns the one that
combines them. A closure takes the environment (the variables by name, and the elements
macros bind by slot number) and returns a value, or :data:`~skillwire.conditions._values.UNSURE`
where CEL raises or the answer is not certain; it raises
:class:`~skillwire.conditions._values.GiveUp` on a value it does not read. Where the
compiler knows more (a constant operand, a chain of selections from a name), the
builders choose a closure that does less work, with the same answers.
"""

from __future__ import annotations

import contextlib
import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, cast

from skillwire.conditions._values import (
    INT_MAX,
    INT_MIN,
    UNSURE,
    CelType,
    contains,
    equal,
    is_text,
    kind,
    order,
    truth,
    unequal,
)
from skillwire.conditions.functions import HelperError
from skillwire.core.patterns import PatternError, compile_pattern

__all__ = [
    "MACROS",
    "NONE",
    "OPERATORS",
    "TEXT_TESTS",
    "Env",
    "Expr",
    "Node",
    "application",
    "conditional",
    "conjunction",
    "constant",
    "disjunction",
    "helper_call",
    "indexing",
    "job_call",
    "list_of",
    "macro",
    "map_of",
    "negation",
    "pattern_match",
    "presence",
    "relation",
    "selection",
    "text_relation",
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
TEXT_TESTS: Final[dict[str, Callable[[str, str], bool]]] = {
    "startsWith": str.startswith, "endsWith": str.endswith, "contains": str.__contains__,
}  # fmt: skip
"""The string methods the fast path knows, by their CEL name."""


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


def variable(key: str | int) -> Expr:
    """A variable by name, or the element a macro binds by its slot number."""
    reads = frozenset({key}) if isinstance(key, str) else frozenset()
    return Expr(operator.itemgetter(key), path=(key, ()), reads=reads)


def constant(value: Any) -> Expr:
    """A value known at load."""
    return Expr(lambda env: value, constant=value)


def map_of(keys: Sequence[str], values: Sequence[Expr]) -> Expr:
    """``{'k': v, ...}`` with text keys: UNSURE if a value is one."""
    runs = tuple(value.run for value in values)
    names = tuple(keys)

    def make_map(env: Env) -> Any:
        found = {}
        for key, run in zip(names, runs, strict=True):
            value = run(env)
            if kind(value) is None:
                return UNSURE
            found[key] = value
        return found

    return Expr(make_map, reads=frozenset().union(*(value.reads for value in values)))


def list_of(items: Sequence[Expr]) -> Expr:
    """``[a, b, ...]``: an error (UNSURE) if an element is one."""
    if all(item.constant is not NONE for item in items):
        return constant(tuple(item.constant for item in items))
    runs = tuple(item.run for item in items)

    def make_list(env: Env) -> Any:
        values = [run(env) for run in runs]
        for value in values:
            if kind(value) is None:
                return UNSURE
        return values

    return Expr(make_list, reads=frozenset().union(*(item.reads for item in items)))


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
            truth(first)  # gives up on a value the fast path does not read
            return decides
        if first is (not decides) and second is (not decides):
            return not decides
        truth(first)
        truth(second)
        return UNSURE

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
    return lambda env: contains(receiver(env), run(env))


# selection and functions ---------------------------------------------------------------


def selection(receiver: Expr, name: str, *, field: bool = True) -> Expr:
    """``receiver.name``, or ``receiver['name']`` when not ``field``: a map's entry."""
    select = (receiver, name) if field else None
    if receiver.path is not None:
        key, names = receiver.path
        path = (key, (*names, name))
        return Expr(_walk(key, path[1]), path=path, select=select, reads=receiver.reads)
    inner = receiver.run

    def get(env: Env) -> Any:
        value = inner(env)
        return value.get(name, UNSURE) if type(value) is dict else _unsure(value)

    return Expr(get, select=select, reads=receiver.reads)


def _walk(key: Any, names: tuple[str, ...]) -> Node:
    """The entries ``names`` read in turn from the variable (or slot) ``key``."""
    if len(names) == 1:
        first = names[0]

        def get(env: Env) -> Any:
            value = env[key]
            return value.get(first, UNSURE) if type(value) is dict else _unsure(value)

        return get

    def walk(env: Env) -> Any:
        value = env[key]
        for name in names:
            if type(value) is not dict:
                return _unsure(value)
            value = value.get(name, UNSURE)  # absent: CEL raises
        return value

    return walk


def _unsure(value: Any) -> Any:
    """UNSURE, after giving up if ``value`` is not one the fast path reads."""
    kind(value)
    return UNSURE


def indexing(receiver: Expr, index: Expr) -> Expr:
    """``receiver[index]`` for a list (a map's string keys are a :func:`selection`)."""
    collection_of, at_of = receiver.run, index.run

    def item(env: Env) -> Any:
        collection, at = collection_of(env), at_of(env)
        if kind(collection) == "list" and kind(at) == "int" and 0 <= at < len(collection):
            return collection[at]
        return UNSURE

    return Expr(item, reads=receiver.reads | index.reads)


def presence(argument: Expr) -> Expr | None:
    """``has(argument)``; None unless the argument is a field selection."""
    if argument.select is None:
        return None
    receiver, name = argument.select
    run = receiver.run

    def has(env: Env) -> Any:
        value = run(env)
        return name in value if type(value) is dict else _unsure(value)

    return Expr(has, reads=receiver.reads)


def application(function: Callable[[Any], Any], argument: Expr) -> Expr:
    """``function(argument)`` for a function of :mod:`~skillwire.conditions._values`."""
    if argument.constant is not NONE:
        value = function(argument.constant)
        if value is not UNSURE:
            return constant(value)
    run = argument.run
    return Expr(lambda env: function(run(env)), reads=argument.reads)


def job_call(holder: type, key: str, method: str, arguments: Sequence[Expr]) -> Expr:
    """``untrusted(x)``, ``origin(x)``, ``latest(tool, match)``: a method of the value
    the environment holds under ``key`` (UNSURE without one, or when it cannot answer)."""
    runs = tuple(argument.run for argument in arguments)

    def read_job(env: Env) -> Any:
        values = [run(env) for run in runs]
        found = env[key]
        if not isinstance(found, holder) or any(kind(value) is None for value in values):
            return UNSURE
        try:
            return getattr(found, method)(*values)
        except HelperError:
            return UNSURE

    reads = frozenset().union(*(argument.reads for argument in arguments))
    return Expr(read_job, reads=reads | {key})


def helper_call(function: Callable[..., Any], arguments: Sequence[Expr]) -> Expr:
    """``sum(xs)`` and the other pure helpers: UNSURE where the helper cannot answer."""
    runs = tuple(argument.run for argument in arguments)

    def call_helper(env: Env) -> Any:
        values = [run(env) for run in runs]
        if any(kind(value) is None for value in values):
            return UNSURE
        try:
            return function(*values)
        except (HelperError, TypeError):
            return UNSURE

    reads = frozenset().union(*(argument.reads for argument in arguments))
    return Expr(call_helper, reads=reads)


def text_relation(method: str, receiver: Expr, argument: Expr) -> Expr:
    """``receiver.startsWith(argument)`` and the other :data:`TEXT_TESTS`."""
    test, text_of, part_of = TEXT_TESTS[method], receiver.run, argument.run

    def text_test(env: Env) -> Any:
        text, part = text_of(env), part_of(env)
        if type(text) is str and type(part) is str and text.isascii() and part.isascii():
            return test(text, part)
        if kind(text) == "string" and kind(part) == "string":
            return test(text, part)
        return UNSURE

    return Expr(text_test, reads=receiver.reads | argument.reads)


def pattern_match(receiver: Expr, argument: Expr) -> Expr:
    """``receiver.matches(argument)`` on the skill pattern engine; a pattern written in
    the condition was compiled at load, one from the data is compiled once and cached."""
    text_of, pattern_of = receiver.run, argument.run
    known = None
    if type(argument.constant) is str:
        # refused at load; were it to get here, every evaluation asks CEL, which fails
        with contextlib.suppress(PatternError):
            known = compile_pattern(argument.constant)

    def search(env: Env) -> Any:
        text = text_of(env)
        if type(text) is not str or not is_text(text):
            return UNSURE  # CEL says what is wrong with it
        pattern = known
        if pattern is None:
            source = pattern_of(env)
            if type(source) is not str:
                return UNSURE
            try:
                pattern = compile_pattern(source)
            except PatternError:
                return UNSURE
        return pattern.search(text) is not None

    return Expr(search, reads=receiver.reads | argument.reads)


# macros --------------------------------------------------------------------------------


def _ranging(decides: bool) -> Callable[[Node, int, Node], Node]:
    """``exists`` (``decides`` True: true at the first element whose body is true) or
    ``all`` (``decides`` False: false at the first element whose body is false)."""

    def build(items_of: Node, slot: int, body: Node) -> Node:
        def ranging(env: Env) -> Any:
            items = items_of(env)
            if type(items) is not list and type(items) is not tuple:
                return _unsure(items)  # a map ranges over its keys in CEL: not done here
            frame = cast("dict[Any, Any]", env)
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
        items = items_of(env)
        if type(items) is not list and type(items) is not tuple:
            return _unsure(items)
        count = 0
        frame = cast("dict[Any, Any]", env)
        for item in items:
            frame[slot] = item
            found = body(frame)
            if found is True:
                count += 1
            elif found is not False:
                return truth(found)
        return count == 1

    return exists_one


_RANGING: dict[str, Callable[[Node, int, Node], Node]] = {
    "exists": _ranging(True), "all": _ranging(False), "exists_one": _exists_one,
}  # fmt: skip
MACROS: Final = frozenset(_RANGING)
"""The macros the fast path knows: each takes a list, a bound name and a body."""


def macro(name: str, receiver: Expr, slot: int, body: Expr) -> Expr:
    """``receiver.name(x, body)``, ``x`` being the element bound in slot ``slot``.

    The elements are taken in order, as the CEL package does: ``exists`` is true at the
    first element whose body is true and ``all`` false at the first one whose body is
    false; an error (or an unsure body) before that is the answer.
    """
    return Expr(_RANGING[name](receiver.run, slot, body.run), reads=receiver.reads)
