"""A pure-Python evaluator for the common shapes of conditions, compiled once at load.

The CEL extension converts every value it is given on every call, which costs more than
most conditions take to decide. :func:`compile_fast_path` parses the CEL that runs
(:attr:`Rewrite.expression <skillwire.conditions.dialect.Rewrite.expression>`) into a tree
of closures (:mod:`skillwire.conditions._nodes`) when the expression stays inside this
subset:

* literals: ints (decimal or hex, within 64 bits), doubles, strings (quoted,
  triple-quoted or raw, with the one-letter escapes such as ``\\n``, ``\\\\``, ``\\'``),
  ``true``, ``false``, ``null``, and lists;
* names, including those a macro binds; field selection ``a.b.c``; indexing with a
  string (``counts['refund']``) or into a list (``history[0]``);
* ``== != < <= > >= in``, ``&& || !``, ``c ? a : b`` and parentheses;
* ``size()``, ``has()``, ``type()``, and ``startsWith``, ``endsWith``, ``contains``,
  ``matches`` (on :mod:`skillwire.core.patterns`, as CEL runs it here too);
* the macros ``exists``, ``all`` and ``exists_one`` over a list.

Anything else (arithmetic, other functions and macros, map literals, uint and bytes
literals, CEL type names such as ``list``) gets no fast path: the parser declines and CEL
evaluates, as it always did.

The fast path returns exactly the boolean the ``cel`` package returns for the same
values, or None when that is not certain; :mod:`skillwire.conditions._values` holds the
rules for values, each checked against the package. ``&&`` and ``||`` are commutative over
errors (``a.missing && false`` is false); ``exists`` and ``all`` take the elements in
order, and an error before the deciding element is the answer, as in the package (the CEL
specification would absorb it).

Values are read only as far as the answer needs (the fields selected, the elements up to
the deciding one), and the fast path gives up on any value it reads that is not plainly
JSON-like. What it does not read is taken to be a value the extension can convert, as
narrowing (:mod:`skillwire.conditions.access`) also takes it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping
from typing import Any

from skillwire.conditions import _nodes as nodes
from skillwire.conditions._nodes import Expr
from skillwire.conditions._scanner import Token, tokenize
from skillwire.conditions._values import (
    INT_MAX,
    INT_MIN,
    UNSURE,
    GiveUp,
    is_text,
    size_of,
    type_of,
)
from skillwire.conditions.dialect import Rewrite
from skillwire.conditions.functions import HELPERS, RUNS_KEY, Runs
from skillwire.conditions.provenance import PROVENANCE_KEY, Provenance
from skillwire.core.errors import ConditionSyntaxError, ControlFlowSignal

__all__ = ["FastPath", "FastValue", "compile_fast_path", "compile_fast_value", "string_value"]

FastPath = Callable[[Mapping[str, Any]], bool | None]
"""Evaluates a condition on the caller's variables; None: ask CEL (a name may be missing)."""

_CONSTANTS: dict[str, Any] = {"true": True, "false": False, "null": None}
_JOB: dict[str, tuple[str, str]] = {
    "untrusted": (PROVENANCE_KEY, "untrusted"),
    "origin": (PROVENANCE_KEY, "origins"),
    "latest": (RUNS_KEY, "latest"),
}
_HOLDERS: dict[str, type] = {PROVENANCE_KEY: Provenance, RUNS_KEY: Runs}
_FUNCTIONS = {"size": size_of, "type": type_of}
_ESCAPES = {
    "a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v",
    "\\": "\\", "'": "'", '"': '"', "`": "`", "?": "?",
}  # fmt: skip


FastValue = Callable[[Mapping[str, Any]], Any]
"""Evaluates an expression to its value; UNSURE: ask CEL."""

_PLAIN = (dict, list, str, int, float, bool, type(None))


def compile_fast_value(rewritten: Rewrite, required: Collection[str]) -> FastValue | None:
    """The fast path of an expression that gives a value (a fact): None when the
    expression leaves the subset or computes. The function returned gives the value as
    the inputs hold it, or UNSURE (a missing name or field, a value it does not read, a
    value that is not plainly JSON)."""
    if rewritten.arithmetic:
        return None
    names = tuple(required)
    try:
        parser = _Parser(tokenize(rewritten.expression), frozenset(names))
        root = parser.parse().run
    except (_Decline, ConditionSyntaxError):
        return None

    def fast_value(variables: Mapping[str, Any]) -> Any:
        try:
            value = root({name: variables[name] for name in names})
        except (KeyError, GiveUp):
            return UNSURE
        if type(value) is tuple:
            value = list(value)
        return value if type(value) in _PLAIN else UNSURE

    return fast_value


class _Decline(ControlFlowSignal):
    """The expression leaves the subset: it gets no fast path."""


def compile_fast_path(rewritten: Rewrite, required: Collection[str]) -> FastPath | None:
    """The fast path of a condition whose CEL ``rewritten`` reads the names ``required``.

    None when the expression leaves the subset, or computes (its numbers are evaluated
    as doubles then). The function returned answers True or False exactly as the CEL
    package would, or None when it cannot be sure (a missing field, a type mismatch, a
    value it does not read), so that the caller asks CEL, which raises or answers.
    """
    if rewritten.arithmetic:
        return None
    names = tuple(required)
    try:
        parser = _Parser(tokenize(rewritten.expression), frozenset(names))
        expr = parser.parse()
    except (_Decline, ConditionSyntaxError):
        return None
    root = expr.run
    if parser.slots:

        def with_macros(variables: Mapping[str, Any]) -> bool | None:
            try:
                answer = root({name: variables[name] for name in names})  # macros bind in it
            except (KeyError, GiveUp):  # a name without a value: CEL says so
                return None
            return answer if answer is True or answer is False else None

        return with_macros
    unread = tuple(name for name in names if name not in expr.reads)

    def fast_path(variables: Mapping[str, Any]) -> bool | None:
        for name in unread:  # maybe skipped by `&&`, `||` or `?`, yet CEL needs a value
            if name not in variables:
                return None
        try:
            answer = root(variables)
        except (KeyError, GiveUp):
            return None
        return answer if answer is True or answer is False else None

    return fast_path


class _Parser:
    """Recursive descent over CEL's precedence levels, declining what it does not know."""

    def __init__(self, tokens: list[Token], required: frozenset[str]) -> None:
        self._tokens = tokens
        self._at = 0
        self._required = required
        self._scope: list[tuple[str, int]] = []
        self._maps = 0
        """Inside the arguments of a function of the job: map literals are read."""
        self.slots = 0
        """Names bound by macros so far: each has a numbered slot in the environment."""

    def parse(self) -> Expr:
        """The whole expression, or :class:`_Decline`."""
        expr = self._expr()
        if self._peek().kind != "end":
            raise _Decline
        return expr

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
            raise _Decline
        self._at += 1

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
        left = self._unary()
        while True:
            token = self._peek()
            if token.kind == "op" and token.text in nodes.OPERATORS:
                op = token.text
            elif token.kind == "name" and token.text == "in":
                op = "in"
            else:
                return left
            self._at += 1
            left = nodes.relation(op, left, self._unary())

    def _unary(self) -> Expr:
        if self._is("!"):
            self._at += 1
            return nodes.negation(self._unary())
        if self._is("-"):  # a negative number only: `-x` computes
            self._at += 1
            number = self._take()
            if number.kind not in ("int", "float") or self._is(".") or self._is("["):
                raise _Decline
            return nodes.constant(_number(number, negative=True))
        return self._member()

    def _member(self) -> Expr:
        expr = self._primary()
        while True:
            if self._is("."):
                self._at += 1
                name = self._take()
                if name.kind != "name":
                    raise _Decline
                if self._is("("):
                    self._at += 1
                    expr = self._method(expr, name.text)
                else:
                    expr = nodes.selection(expr, name.text)
            elif self._is("["):
                self._at += 1
                index = self._expr()
                self._expect("]")
                if type(index.constant) is str:
                    expr = nodes.selection(expr, index.constant, field=False)
                else:
                    expr = nodes.indexing(expr, index)
            else:
                return expr

    def _method(self, receiver: Expr, name: str) -> Expr:
        """``receiver.name(...)``, its opening parenthesis taken."""
        if name in nodes.MACROS:
            binder = self._take()
            if binder.kind != "name" or not self._is(","):
                raise _Decline
            self._at += 1
            slot = self.slots
            self.slots += 1
            self._scope.append((binder.text, slot))
            body = self._expr()
            self._scope.pop()
            self._expect(")")
            return nodes.macro(name, receiver, slot, body)
        args = self._arguments()
        if name == "size" and not args:
            return nodes.application(size_of, receiver)
        if name in nodes.TEXT_TESTS and len(args) == 1:
            return nodes.text_relation(name, receiver, args[0])
        if name == "matches" and len(args) == 1:
            return nodes.pattern_match(receiver, args[0])
        raise _Decline

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

    def _primary(self) -> Expr:
        token = self._take()
        if token.kind in ("int", "float"):
            return nodes.constant(_number(token, negative=False))
        if token.kind == "string":
            return nodes.constant(_text(token))
        if token.kind == "name":
            return self._name(token.text)
        if token.kind == "op" and token.text == "(":
            inner = self._expr()
            self._expect(")")
            return Expr(inner.run, inner.constant, inner.path)  # `has((a.b))`: declined
        if token.kind == "op" and token.text == "[":
            items: list[Expr] = []
            while not self._is("]"):
                items.append(self._expr())
                if not self._is(","):
                    break
                self._at += 1
            self._expect("]")
            return nodes.list_of(items)
        if token.kind == "op" and token.text == "{" and self._maps:
            return self._map_literal()
        raise _Decline

    def _map_literal(self) -> Expr:
        """``{'key': value, ...}`` with distinct text keys (only as an argument of a
        function of the job, which gets the same dict on either path)."""
        keys: list[str] = []
        values: list[Expr] = []
        while not self._is("}"):
            key = self._take()
            if key.kind != "string":
                raise _Decline
            text = _text(key)
            if text in keys:
                raise _Decline  # CEL refuses a repeated key
            self._expect(":")
            keys.append(text)
            values.append(self._expr())
            if not self._is(","):
                break
            self._at += 1
        self._expect("}")
        return nodes.map_of(keys, values)

    def _name(self, word: str) -> Expr:
        if self._is("("):
            self._at += 1
            self._maps += word in _JOB
            try:
                args = self._arguments()
            finally:
                self._maps -= word in _JOB
            if word in _JOB:
                key, method = _JOB[word]
                return nodes.job_call(_HOLDERS[key], key, method, args)
            if word in HELPERS:
                return nodes.helper_call(HELPERS[word], args)
            if len(args) != 1:
                raise _Decline
            if word in _FUNCTIONS:
                return nodes.application(_FUNCTIONS[word], args[0])
            found = nodes.presence(args[0]) if word == "has" else None
            if found is None:
                raise _Decline
            return found
        if word in _CONSTANTS:
            return nodes.constant(_CONSTANTS[word])
        for bound, slot in reversed(self._scope):
            if bound == word:
                return nodes.variable(slot)
        if word in self._required:
            return nodes.variable(word)
        raise _Decline  # a CEL type name such as `list`, which the caller may shadow


def _number(token: Token, *, negative: bool) -> int | float:
    text = token.text
    if token.kind == "float":
        value = float(text)
        if not math.isfinite(value):
            raise _Decline
        return -value if negative else value
    whole = int(text, 16) if text[:2] in ("0x", "0X") else int(text)
    whole = -whole if negative else whole
    if not INT_MIN <= whole <= INT_MAX:
        raise _Decline
    return whole


def string_value(token: Token) -> str | None:
    """The value of a string literal token, or None when it uses an escape other than
    the one-letter ones (``\\x41``, ``\\u00e9``)."""
    try:
        return _text(token)
    except _Decline:
        return None


def _text(token: Token) -> str:
    """The value of a string literal; declines escapes other than the one-letter ones."""
    text = token.text
    raw = text[0] in "rR"
    if raw:
        text = text[1:]
    quote = text[0] * 3 if text.startswith(text[0] * 3) else text[0]
    body = text[len(quote) : -len(quote)]
    if "\r" in body:  # CEL reads a CR LF in a triple-quoted string as LF
        raise _Decline
    if not raw and "\\" in body:
        parts: list[str] = []
        at = 0
        while at < len(body):
            ch = body[at]
            if ch == "\\":
                ch = _ESCAPES.get(body[at + 1 : at + 2], "")
                if not ch:
                    raise _Decline
                at += 1
            parts.append(ch)
            at += 1
        body = "".join(parts)
    if not is_text(body):
        raise _Decline
    return body
