"""The one parser of conditions: CEL text to a tree of closures, compiled once at load.

:func:`compile_tree` reads the CEL that runs (:attr:`Rewrite.expression
<skillwire.conditions.dialect.Rewrite.expression>`) by recursive descent over CEL's
precedence levels and builds the closures of :mod:`skillwire.conditions._nodes` and
:mod:`skillwire.conditions._calls`. It covers the language skills use:

* literals: ints (decimal or hex, 64 bits), doubles, strings (every quoting and escape),
  ``true``, ``false``, ``null``, lists and maps; CEL's type names (``int``, ``list``, ...);
* names and the names macros bind; fields ``a.b``, indexes ``xs[0]``, ``m['k']``;
* ``== != < <= > >= in``, ``&& || !``, ``c ? a : b``, ``+ - * / %`` and unary ``-``;
* ``size has type int double string dyn timestamp duration``, the helpers
  (:mod:`skillwire.conditions.functions`), ``untrusted origin latest``;
* the methods ``size startsWith endsWith contains matches`` and the getters of
  timestamps and durations; the macros ``exists all exists_one map filter``.

Anything else CEL would accept (``uint`` and bytes literals, ``uint()``, ``bytes()``,
messages, a getter with a time zone) is a
:class:`~skillwire.core.conditions.ConditionSyntaxError` at its column: there is no
second evaluator to fall back on. A pattern written in ``matches('...')`` is compiled
here, once; one the engine cannot take is an error at its column.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from typing import Any

from skillwire.conditions import _calls as calls
from skillwire.conditions import _nodes as nodes
from skillwire.conditions._compute import CONVERSIONS, GETTERS
from skillwire.conditions._nodes import Expr
from skillwire.conditions._scanner import Token, tokenize
from skillwire.conditions._values import INT_MAX, INT_MIN, is_text, size_of, type_named, type_of
from skillwire.conditions.dialect import Rewrite
from skillwire.conditions.functions import HELPERS, RUNS_KEY, Runs
from skillwire.conditions.provenance import PROVENANCE_KEY, Provenance
from skillwire.core.errors import ConditionSyntaxError
from skillwire.core.patterns import PatternError, compile_pattern

__all__ = ["JOB", "Tree", "compile_tree", "string_value"]

JOB: dict[str, tuple[str, str, type]] = {
    "untrusted": (PROVENANCE_KEY, "untrusted", Provenance),
    "origin": (PROVENANCE_KEY, "origins", Provenance),
    "latest": (RUNS_KEY, "latest", Runs),
}
"""Functions that read the job: the key of the value they read, its method and type."""

_CONSTANTS: dict[str, Any] = {"true": True, "false": False, "null": None}
_FUNCTIONS = {"size": size_of, "type": type_of, **CONVERSIONS}
_DECIMAL_HELPERS = frozenset({"sum", "min", "max"})
"""Helpers whose numbers a condition that computes reads as doubles."""
_ESCAPES = {
    "a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v",
    "\\": "\\", "'": "'", '"': '"', "`": "`", "?": "?",
}  # fmt: skip
_HEX = {"x": 2, "X": 2, "u": 4, "U": 8}
_UNSUPPORTED = {
    "uint": "unsigned integers are not supported: write a whole number without `u`",
    "bytes": "bytes are not supported: compare text",
}


class Tree:
    """A compiled expression: its root closure and what it reads."""

    __slots__ = ("frames", "root")

    def __init__(self, root: Expr, frames: bool) -> None:
        self.root = root
        self.frames = frames
        """Macros bind names: each evaluation needs a frame of its own."""


def compile_tree(
    rewritten: Rewrite, required: Collection[str], optional: Collection[str] = ()
) -> Tree:
    """The tree of ``rewritten``'s CEL, which reads the names ``required`` (and the CEL
    type names ``optional``, unless the variables hold them); raises
    :class:`~skillwire.core.conditions.ConditionSyntaxError` for what it does not cover."""
    parser = _Parser(tokenize(rewritten.expression), rewritten, required, optional)
    root = parser.parse()
    return Tree(root, parser.slots > 0)


class _Parser:
    """Recursive descent over CEL's precedence levels."""

    def __init__(
        self,
        tokens: list[Token],
        rewritten: Rewrite,
        required: Collection[str],
        optional: Collection[str],
    ) -> None:
        self._tokens = tokens
        self._at = 0
        self._rewrite = rewritten
        self._decimal = rewritten.arithmetic
        self._required = frozenset(required)
        self._optional = frozenset(optional)
        self._scope: list[tuple[str, int]] = []
        self.slots = 0
        """Names bound by macros so far: each has a numbered slot in the frame."""

    def parse(self) -> Expr:
        """The whole expression."""
        expr = self._expr()
        token = self._peek()
        if token.kind != "end":
            raise self._error(token, f"unexpected `{token.text}`")
        return expr

    # tokens ----------------------------------------------------------------------------

    def _error(self, token: Token, message: str, hint: str = "") -> ConditionSyntaxError:
        column = self._rewrite.original_offset(token.start) + 1
        return ConditionSyntaxError(
            message, column=column, hint=hint or "see docs/conditions.md for the syntax"
        )

    def _peek(self) -> Token:
        return self._tokens[self._at]

    def _take(self) -> Token:
        token = self._tokens[self._at]
        if token.kind != "end":
            self._at += 1
        return token

    def _is(self, text: str) -> bool:
        token = self._tokens[self._at]
        return token.kind == "op" and token.text == text

    def _expect(self, text: str) -> None:
        if not self._is(text):
            raise self._error(self._peek(), f"expected `{text}`")
        self._at += 1

    # precedence levels -----------------------------------------------------------------

    def _expr(self) -> Expr:
        condition = self._or()
        if not self._is("?"):
            return condition
        self._at += 1
        yes = self._or()
        self._expect(":")
        return nodes.conditional(condition, yes, self._expr())

    def _or(self) -> Expr:
        left = self._and()
        while self._is("||"):
            self._at += 1
            left = nodes.disjunction(left, self._and())
        return left

    def _and(self) -> Expr:
        left = self._relation()
        while self._is("&&"):
            self._at += 1
            left = nodes.conjunction(left, self._relation())
        return left

    def _relation(self) -> Expr:
        left = self._additive()
        while True:
            token = self._peek()
            if token.kind == "op" and token.text in nodes.OPERATORS:
                op = token.text
            elif token.kind == "name" and token.text == "in":
                op = "in"
            else:
                return left
            self._at += 1
            left = nodes.relation(op, left, self._additive())

    def _additive(self) -> Expr:
        left = self._multiplicative()
        while self._is("+") or self._is("-"):
            op = self._take().text
            left = calls.arithmetic(op, left, self._multiplicative())
        return left

    def _multiplicative(self) -> Expr:
        left = self._unary()
        while self._is("*") or self._is("/") or self._is("%"):
            op = self._take().text
            left = calls.arithmetic(op, left, self._unary())
        return left

    def _unary(self) -> Expr:
        if self._is("!"):
            self._at += 1
            return nodes.negation(self._unary())
        if self._is("-"):
            self._at += 1
            token = self._peek()
            if token.kind in ("int", "float") and not self._follows_member(1):
                self._at += 1
                return nodes.constant(self._number(token, negative=True))
            return calls.minus(self._unary())
        return self._member()

    def _follows_member(self, ahead: int) -> bool:
        after = self._tokens[min(self._at + ahead, len(self._tokens) - 1)]
        return after.kind == "op" and after.text in (".", "[")

    def _member(self) -> Expr:
        expr, data = self._primary()
        while True:
            if self._is("."):
                self._at += 1
                name = self._take()
                if name.kind != "name":
                    raise self._error(name, "a field or method name must follow `.`")
                if self._is("("):
                    self._at += 1
                    expr = self._method(expr, name)
                    data = False
                else:
                    expr = nodes.selection(expr, name.text)
                    data = True
            elif self._is("["):
                self._at += 1
                index = self._expr()
                self._expect("]")
                if type(index.constant) is str:
                    expr = nodes.selection(expr, index.constant, field=False)
                else:
                    expr = nodes.indexing(expr, index)
                data = True
            else:
                return calls.as_decimal(expr) if data and self._decimal else expr

    def _method(self, receiver: Expr, name: Token) -> Expr:
        """``receiver.name(...)``, its opening parenthesis taken."""
        word = name.text
        if word in calls.MACROS:
            return self._macro(receiver, name)
        args = self._arguments()
        if word == "size" and not args:
            return calls.application(size_of, receiver)
        if word in calls.TEXT_TESTS and len(args) == 1:
            return calls.text_relation(word, receiver, args[0])
        if word == "matches" and len(args) == 1:
            return calls.pattern_match(receiver, args[0], self._pattern(args[0]))
        if word in GETTERS:
            if args:
                raise self._error(
                    name, f"`{word}()` takes no time zone here", "getters read the time in UTC"
                )
            return calls.application(GETTERS[word], receiver)
        raise self._error(name, f"`{word}` is not a method taking {len(args)} argument(s)")

    def _pattern(self, argument: Expr) -> Any:
        if type(argument.constant) is not str:
            return None
        try:
            return compile_pattern(argument.constant)
        except PatternError as exc:
            literal = self._tokens[self._at - 2]
            raise self._error(
                literal,
                f"matches(): {exc}",
                exc.hint or "see docs/conditions.md for what a pattern may use",
            ) from None

    def _macro(self, receiver: Expr, name: Token) -> Expr:
        binder = self._take()
        if binder.kind != "name" or not self._is(","):
            raise self._error(binder, f"`{name.text}` takes a name, then an expression")
        self._at += 1
        slot = self.slots
        self.slots += 1
        self._scope.append((binder.text, slot))
        body = self._expr()
        only = None
        if name.text == "map" and self._is(","):
            self._at += 1
            only, body = body, self._expr()
        self._scope.pop()
        self._expect(")")
        return calls.macro(name.text, receiver, slot, body, only)

    def _arguments(self) -> list[Expr]:
        """Comma-separated expressions up to ``)``, the opening parenthesis taken."""
        args: list[Expr] = []
        while not self._is(")"):
            args.append(self._expr())
            if not self._is(","):
                break
            self._at += 1
        self._expect(")")
        return args

    def _primary(self) -> tuple[Expr, bool]:
        """The primary expression, and whether it reads data (a name, a job's value)."""
        token = self._take()
        if token.kind in ("int", "float"):
            return nodes.constant(self._number(token, negative=False)), False
        if token.kind == "string":
            return nodes.constant(self._text(token)), False
        if token.kind == "name":
            return self._name(token)
        if token.kind == "op" and token.text == "(":
            inner = self._expr()
            self._expect(")")
            return Expr(inner.run, inner.constant, None, None, inner.reads), False
        if token.kind == "op" and token.text == "[":
            items: list[Expr] = []
            while not self._is("]"):
                items.append(self._expr())
                if not self._is(","):
                    break
                self._at += 1
            self._expect("]")
            return nodes.list_of(items), False
        if token.kind == "op" and token.text == "{":
            return self._map_literal(), False
        if token.kind == "uint":
            raise self._error(token, _UNSUPPORTED["uint"], f"write {token.text[:-1]}")
        if token.kind == "bytes":
            raise self._error(token, _UNSUPPORTED["bytes"])
        raise self._error(token, f"unexpected `{token.text}`")

    def _map_literal(self) -> Expr:
        """``{key: value, ...}``."""
        keys: list[Expr] = []
        values: list[Expr] = []
        while not self._is("}"):
            keys.append(self._expr())
            self._expect(":")
            values.append(self._expr())
            if not self._is(","):
                break
            self._at += 1
        self._expect("}")
        return nodes.map_of(keys, values)

    def _name(self, token: Token) -> tuple[Expr, bool]:
        word = token.text
        if self._is("("):
            self._at += 1
            return self._call(token)
        if self._is("{"):
            raise self._error(token, "messages are not supported", "write a map: {'key': value}")
        if word in _CONSTANTS:
            return nodes.constant(_CONSTANTS[word]), False
        for bound, slot in reversed(self._scope):
            if bound == word:
                return nodes.variable(slot), True
        if word in self._required:
            return nodes.variable(word), True
        if word in self._optional:
            return _type_or_variable(word), False
        raise self._error(token, f"`{word}` is not a name here")

    def _call(self, token: Token) -> tuple[Expr, bool]:
        """``word(...)``, its opening parenthesis taken."""
        word = token.text
        if word in _UNSUPPORTED:
            raise self._error(token, _UNSUPPORTED[word])
        args = self._arguments()
        if word in JOB:
            key, method, holder = JOB[word]
            return calls.job_call(holder, key, method, word, args), True
        if word in HELPERS:
            return calls.helper_call(word, HELPERS[word], args), word in _DECIMAL_HELPERS
        if len(args) != 1:
            raise self._error(token, f"`{word}` takes one value")
        if word in _FUNCTIONS:
            return calls.application(_FUNCTIONS[word], args[0]), False
        if word == "has":
            found = nodes.presence(args[0])
            if found is None:
                raise self._error(token, "has() takes a field: `has(args.coupon)`")
            return found, False
        raise self._error(token, f"unknown function `{word}`")

    def _number(self, token: Token, *, negative: bool) -> int | float:
        text = token.text
        if token.kind == "float":
            value = float(text)
            if not math.isfinite(value):
                raise self._error(token, "this number is too large for a double")
            return -value if negative else value
        whole = int(text, 16) if text[:2] in ("0x", "0X") else int(text)
        whole = -whole if negative else whole
        if not INT_MIN <= whole <= INT_MAX:
            raise self._error(
                token,
                "this whole number does not fit in 64 bits",
                "write a larger number as a double: 1e20",
            )
        return whole

    def _text(self, token: Token) -> str:
        found = string_value(token)
        if found is None:
            raise self._error(token, "this string holds a character that is not text")
        return found


def _type_or_variable(name: str) -> Expr:
    """A CEL type name the skill does not define: the variable when one is given."""
    cel_type = type_named(name)

    def type_or_value(env: Mapping[Any, Any]) -> Any:
        try:
            return env[name]
        except KeyError:
            return cel_type

    return Expr(type_or_value)


def string_value(token: Token) -> str | None:
    """The value of a string literal token (``'a\\n'``, ``r'\\d'``, ``'''x'''``,
    ``'\\u00e9'``), or None when it is not text (a lone surrogate, a lone CR)."""
    text = token.text
    raw = text[0] in "rR"
    if raw:
        text = text[1:]
    quote = text[0] * 3 if text.startswith(text[0] * 3) else text[0]
    body = text[len(quote) : -len(quote)].replace("\r\n", "\n")
    if "\r" in body:
        return None
    if not raw and "\\" in body:
        parts: list[str] = []
        at = 0
        while at < len(body):
            ch = body[at]
            at += 1
            if ch == "\\":
                ch, at = _escape(body, at)
            parts.append(ch)
        body = "".join(parts)
    return body if is_text(body) else None


def _escape(body: str, at: int) -> tuple[str, int]:
    """The character the escape after the backslash at ``at - 1`` stands for (the
    scanner checked its form), and the offset after it."""
    letter = body[at]
    if letter in _ESCAPES:
        return _ESCAPES[letter], at + 1
    if letter in _HEX:
        digits = body[at + 1 : at + 1 + _HEX[letter]]
        return _code_point(int(digits, 16)), at + 1 + len(digits)
    return _code_point(int(body[at : at + 3], 8)), at + 3


def _code_point(number: int) -> str:
    return chr(number) if number <= 0x10FFFF else "\ud800"  # not text: refused
