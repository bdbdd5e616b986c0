"""A recursive-descent parse of CEL plus the spoken dialect, emitting plain CEL pieces.

Each rule returns a :class:`_Frag`: the output pieces (each remembering the offset in the
author's text it came from) and whether it is a primary or postfix expression that may
take ``.method()`` without parentheses. Precedence follows CEL: ternary, ``||``, ``&&``,
relations (with ``in``, ``contains``, ``starts with``, ``ends with``), ``+ -``,
``* / %``, unary ``! -`` (and ``not``, which negates a whole relation), member access.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass, replace

from skillwire.conditions._scanner import Token
from skillwire.conditions.access import AccessBuilder
from skillwire.core.errors import ConditionSyntaxError

__all__ = ["Grammar", "Piece"]

_RELATIONS = frozenset({"==", "!=", "<", "<=", ">", ">=", "="})
_SPOKEN_RELATIONS = frozenset({"in", "contains", "starts", "ends"})
_DIALECT_WORDS = ("and", "or", "not", "in", "contains", "starts with", "ends with")
_MACROS = frozenset({"all", "exists", "exists_one", "map", "filter"})
_LITERAL_KINDS = frozenset({"int", "uint", "float", "string", "bytes"})
_OPERAND_OPS = frozenset({"(", "[", "{", "!", "-"})
_RESERVED = frozenset(
    {"as", "break", "const", "continue", "else", "for", "function", "if", "import", "let"}
    | {"loop", "package", "namespace", "return", "var", "void", "while"}
)
_SPOKEN_HINTS = {
    "is": "==", "equals": "==", "eq": "==", "ne": "!=", "gt": ">", "ge": ">=", "gte": ">=",
    "lt": "<", "le": "<=", "lte": "<=", "startswith": "starts with",
    "startsWith": "starts with", "endswith": "ends with", "endsWith": "ends with",
    "includes": "contains", "has": "contains",
}  # fmt: skip
_WHOLE_LIMIT = 2**53


@dataclass(slots=True)
class Piece:
    """A run of output text and the offset in the author's text it stands for."""

    text: str
    origin: int
    space: bool
    verbatim: bool = False
    decimal: str | None = None
    """The double spelling of a whole-number literal, used when the expression computes."""


@dataclass(slots=True)
class _Frag:
    pieces: list[Piece]
    simple: bool = False
    literal: Piece | None = None
    node: AccessBuilder | None = None
    """How the value is read, when the fragment is a chain of selections of a name."""


def _verbatim(token: Token) -> Piece:
    return Piece(token.text, token.start, token.space, verbatim=True)


def _lead(frag: _Frag, space: bool) -> list[Piece]:
    """The fragment's pieces with the first one's leading space set to ``space``."""
    first, *rest = frag.pieces
    return [replace(first, space=space), *rest]


class Grammar:
    """Parses one condition's tokens; read :attr:`free`, :attr:`calls`, ... after :meth:`parse`."""

    def __init__(self, tokens: list[Token], *, max_depth: int) -> None:
        self._tokens = tokens
        self._at = 0
        self._depth = 0
        self._max_depth = max_depth
        self._whole = 0
        self._scope: list[str] = []
        self.access: dict[str, AccessBuilder] = {}
        """How the expression reads each free name (see :mod:`skillwire.conditions.access`)."""
        self.free: dict[str, int] = {}
        self.calls: dict[str, int] = {}
        self.bound: set[str] = set()
        self.arithmetic = False

    def parse(self) -> list[Piece]:
        """Parse the whole condition and return the CEL pieces."""
        frag = self._expr()
        token = self._peek()
        if token.kind != "end":
            raise self._expected_operator(token)
        return frag.pieces

    # tokens ------------------------------------------------------------------------

    def _peek(self, ahead: int = 0) -> Token:
        return self._tokens[min(self._at + ahead, len(self._tokens) - 1)]

    def _next(self) -> Token:
        token = self._tokens[self._at]
        self._at = min(self._at + 1, len(self._tokens) - 1)
        return token

    @staticmethod
    def _is(token: Token, *texts: str) -> bool:
        """An operator or a bare word with one of ``texts`` (never a string's contents)."""
        return token.kind in ("op", "name") and token.text in texts

    def _error(self, message: str, at: int, hint: str) -> ConditionSyntaxError:
        return ConditionSyntaxError(message, column=at + 1, hint=hint)

    def _op(self, token: Token, text: str) -> Piece:
        if token.text == text:
            return _verbatim(token)
        return Piece(text, token.start, token.space)

    # precedence levels ---------------------------------------------------------------

    def _expr(self) -> _Frag:
        self._enter()
        condition = self._binary(self._and, ("||", "or"), "||")
        question = self._peek()
        if self._is(question, "?"):
            self._next()
            yes = self._binary(self._and, ("||", "or"), "||")
            colon = self._expect(":", question, hint="write `condition ? value : other`")
            no = self._expr()
            condition = _Frag(
                [*condition.pieces, _verbatim(question), *yes.pieces, _verbatim(colon), *no.pieces]
            )
        self._depth -= 1
        return condition

    def _and(self) -> _Frag:
        return self._binary(self._relation, ("&&", "and"), "&&")

    def _binary(self, operand: Callable[[], _Frag], words: tuple[str, ...], text: str) -> _Frag:
        left = operand()
        while self._is(self._peek(), *words):
            token = self._next()
            right = operand()
            pieces = [*left.pieces, self._op(token, text), *right.pieces]
            left = _Frag(pieces)
        return left

    def _relation(self) -> _Frag:
        left = self._additive()
        while True:
            token = self._peek()
            if token.kind == "op" and token.text in _RELATIONS:
                self._next()
                right = self._additive()
                text = "==" if token.text == "=" else token.text
                pieces = [*left.pieces, self._op(token, text), *right.pieces]
                left = _Frag(pieces)
            elif token.kind == "name" and token.text in ("not", *_SPOKEN_RELATIONS):
                left = self._spoken_relation(left)
            else:
                return left

    def _spoken_relation(self, left: _Frag) -> _Frag:
        word = self._next()
        negation = None
        if word.text == "not":
            negation = word
            word = self._peek()
            if word.kind != "name" or word.text not in _SPOKEN_RELATIONS:
                raise self._error(
                    "`not` here must be followed by `in`, `contains`, `starts with` or `ends with`",
                    negation.start,
                    "to negate a comparison, put `not` in front of it: `not amount > 500`",
                )
            self._next()
        if word.text in ("starts", "ends"):
            if not self._is(self._peek(), "with"):
                raise self._error(
                    f"`{word.text}` must be followed by `with`",
                    word.start,
                    f"write `x {word.text} with 'text'`",
                )
            self._next()
        right = self._additive()
        space = left.pieces[0].space
        origin = word.start
        if word.text == "in":
            pieces = [*left.pieces, _verbatim(word), *right.pieces]
        elif word.text == "contains":
            pieces = self._contains(left, right, origin)
        else:
            method = "startsWith" if word.text == "starts" else "endsWith"
            pieces = [*self._receiver(left, origin), Piece(f".{method}(", origin, False)]
            pieces += [*_lead(right, False), Piece(")", origin, False)]
        pieces[0] = replace(pieces[0], space=space if negation is None else False)
        if negation is None:
            return _Frag(pieces, simple=word.text != "in")
        at = negation.start
        return _Frag([Piece("!(", at, space), *pieces, Piece(")", at, False)])

    def _contains(self, left: _Frag, right: _Frag, origin: int) -> list[Piece]:
        """``x contains y``: a substring test on a string, membership otherwise."""
        return [
            Piece("(type(", origin, False),
            *_lead(left, False),
            Piece(') == type("") ?', origin, False),
            *self._receiver(left, origin, space=True),
            Piece(".contains(", origin, False),
            *_lead(right, False),
            Piece(") :", origin, False),
            *_lead(right, True),
            Piece("in", origin, True),
            *_lead(left, True),
            Piece(")", origin, False),
        ]

    @staticmethod
    def _receiver(frag: _Frag, origin: int, *, space: bool = False) -> list[Piece]:
        if frag.simple:
            return _lead(frag, space)
        return [Piece("(", origin, space), *_lead(frag, False), Piece(")", origin, False)]

    def _additive(self) -> _Frag:
        left = self._multiplicative()
        while self._is(self._peek(), "+", "-"):
            token = self._next()
            right = self._multiplicative()
            self.arithmetic = True
            left = _Frag([*left.pieces, _verbatim(token), *right.pieces])
        return left

    def _multiplicative(self) -> _Frag:
        left = self._unary()
        while self._is(self._peek(), "*", "/", "%"):
            token = self._next()
            right = self._unary()
            self.arithmetic = True
            if token.text == "%":
                for operand in (left, right):
                    if operand.literal is not None:
                        operand.literal.decimal = None
            left = _Frag([*left.pieces, _verbatim(token), *right.pieces])
        return left

    def _unary(self) -> _Frag:
        prefix: list[Piece] = []
        while (token := self._peek()).kind == "op" and token.text in ("!", "-"):
            prefix.append(_verbatim(self._next()))
        token = self._peek()
        if self._is(token, "not") and self._starts_operand(1):
            self._next()
            self._enter()
            operand = self._relation()
            self._depth -= 1
            if operand.simple:
                negated = [Piece("!", token.start, token.space), *_lead(operand, False)]
            else:
                negated = [Piece("!(", token.start, token.space), *_lead(operand, False)]
                negated.append(Piece(")", token.start, False))
            return _Frag([*prefix, *negated])
        frag = self._member()
        if not prefix:
            return frag
        return _Frag([*prefix, *frag.pieces], literal=frag.literal)

    def _starts_operand(self, ahead: int) -> bool:
        token = self._peek(ahead)
        if token.kind == "name":
            return token.text not in ("and", "or", "in")
        return token.kind in _LITERAL_KINDS or (token.kind == "op" and token.text in _OPERAND_OPS)

    def _member(self) -> _Frag:
        frag = self._primary()
        node = frag.node
        while True:
            token = self._peek()
            if self._is(token, "."):
                self._next()
                name = self._next()
                if name.kind != "name":
                    raise self._error(
                        "a field or method name must follow `.`", name.start, "write `args.amount`"
                    )
                pieces = [*frag.pieces, _verbatim(token), _verbatim(name)]
                if self._is(self._peek(), "("):
                    self.calls.setdefault(name.text, name.start)
                    more, _args = self._arguments(macro=name.text in _MACROS, receiver=node)
                    pieces += more
                    node = None
                else:
                    node = None if node is None else node.field(name.text)
                frag = _Frag(pieces, simple=True)
            elif self._is(token, "["):
                if node is not None:
                    node.uses += 1
                node = None
                self._next()
                self._whole += 1
                index = self._expr()
                self._whole -= 1
                close = self._expect("]", token, hint="add `]`")
                frag = _Frag(
                    [*frag.pieces, _verbatim(token), *index.pieces, _verbatim(close)], True
                )
            else:
                if node is not None:  # the chain's value is used as it is
                    node.uses += 1
                    frag.node = node
                return frag

    def _arguments(
        self, *, macro: bool, receiver: AccessBuilder | None = None
    ) -> tuple[list[Piece], list[_Frag]]:
        """A call's arguments; records how the call reads its ``receiver``."""
        opening = self._next()
        pieces = [_verbatim(opening)]
        binder = None
        if macro and self._peek().kind == "name" and self._is(self._peek(1), ","):
            binder = self._next()
            pieces += [_verbatim(binder), _verbatim(self._next())]
            self.bound.add(binder.text)
            self._scope.append(binder.text)
        args: list[_Frag] = []

        def argument() -> list[Piece]:
            args.append(self._expr())
            return args[-1].pieces

        pieces += self._items(")", opening, argument)
        if binder is not None:
            self._scope.pop()
        if receiver is not None:
            receiver.uses += 1
        return pieces, args

    def _items(self, closing: str, opening: Token, item: Callable[[], list[Piece]]) -> list[Piece]:
        """Comma-separated items up to ``closing`` (a trailing comma is allowed)."""
        pieces: list[Piece] = []
        while not self._is(self._peek(), closing):
            pieces += item()
            if not self._is(self._peek(), ","):
                break
            pieces.append(_verbatim(self._next()))
        pieces.append(_verbatim(self._expect(closing, opening, hint=f"add `{closing}`")))
        return pieces

    def _map_entry(self) -> list[Piece]:
        key = self._expr()
        if key.literal is not None:
            key.literal.decimal = None
        colon = self._expect(":", self._peek(), hint="write `{'key': value}`")
        return [*key.pieces, _verbatim(colon), *self._expr().pieces]

    def _primary(self) -> _Frag:
        token = self._peek()
        if token.kind == "name":
            return self._name()
        if token.kind in _LITERAL_KINDS:
            self._next()
            piece = _verbatim(token)
            if token.kind != "int":
                return _Frag([piece], simple=True)
            value = int(token.text, 16) if token.text[:2] in ("0x", "0X") else int(token.text)
            if not self._whole and value <= _WHOLE_LIMIT:
                piece.decimal = repr(float(value))
            return _Frag([piece], simple=True, literal=piece)
        if token.kind == "op" and token.text in ("(", "[", "{"):
            self._next()
            self._enter()
            if token.text == "(":
                grouped = self._expr()
                inner = [*grouped.pieces, _verbatim(self._expect(")", token, hint="add `)`"))]
                self._depth -= 1
                pieces = [_verbatim(token), *inner]
                return _Frag(pieces, simple=True)
            if token.text == "[":
                inner = self._items("]", token, lambda: self._expr().pieces)
            else:
                inner = self._items("}", token, self._map_entry)
            self._depth -= 1
            return _Frag([_verbatim(token), *inner], simple=True)
        raise self._missing_operand(token)

    def _name(self) -> _Frag:
        token = self._next()
        word = token.text
        if word in ("and", "or", "in"):
            raise self._missing_operand(token)
        if word == "not":
            raise self._error("`not` needs a condition after it", token.start, "`not force`")
        if word in _RESERVED:
            raise self._error(
                f"`{word}` is a reserved word in CEL",
                token.start,
                f"read the argument through `args`: `args.{word}`",
            )
        if self._is(self._peek(), "("):
            self.calls.setdefault(word, token.start)
            pieces, _args = self._arguments(macro=False)
            return _Frag([_verbatim(token), *pieces], simple=True)
        if word in ("true", "false", "null"):
            return _Frag([_verbatim(token)], simple=True)
        node: AccessBuilder | None = None
        if word not in self._scope:
            self.free.setdefault(word, token.start)
            node = self.access.get(word)
            if node is None:
                node = self.access[word] = AccessBuilder()
        return _Frag([_verbatim(token)], simple=True, node=node)

    def _enter(self) -> None:
        self._depth += 1
        if self._depth > self._max_depth:
            raise self._error(
                f"the condition is nested too deeply (more than {self._max_depth} levels)",
                self._peek().start,
                "split it into several rules",
            )

    def _expect(self, text: str, opening: Token, *, hint: str) -> Token:
        token = self._peek()
        if self._is(token, text):
            return self._next()
        if token.kind == "end":
            if opening.text in ("(", "[", "{"):
                message = f"`{opening.text}` is not closed"
            else:
                message = f"the condition ends where `{text}` is expected"
            raise self._error(message, opening.start, hint)
        raise self._expected_operator(token)

    # errors ------------------------------------------------------------------------

    def _missing_operand(self, token: Token) -> ConditionSyntaxError:
        hint = "put a value on both sides, e.g. `amount > 500`"
        if token.kind == "end":
            before = self._tokens[self._at - 1] if self._at else token
            if before is token or before.kind == "end":
                return self._error("the condition is empty", 0, "write `amount > 500`")
            if before.text in ("(", "[", "{", ",", ":", "?"):
                hint = "finish the expression and close its brackets"
            return self._error(f"an operand is missing after `{before.text}`", before.end, hint)
        if token.text == ".":
            hint = "write `args.amount`"
        return self._error(f"an operand is missing before `{token.text}`", token.start, hint)

    def _expected_operator(self, token: Token) -> ConditionSyntaxError:
        at = token.start
        if token.kind == "op" and token.text in (")", "]", "}"):
            return self._error(
                f"`{token.text}` has no matching opening bracket", at, "remove it or add its pair"
            )
        if token.kind == "op" and token.text == "!":
            return self._error("`!` cannot follow a value", at, "write `!=` for not equal")
        hint = "join the parts with an operator such as `==`, `and` or `or`"
        if token.kind == "name":
            word = token.text
            close = difflib.get_close_matches(word.lower(), _DIALECT_WORDS, n=1, cutoff=0.6)
            if word != word.lower() and word.lower() in _DIALECT_WORDS:
                hint = f"dialect words are lower case: write `{word.lower()}`"
            elif word in _SPOKEN_HINTS:
                hint = f"write `{_SPOKEN_HINTS[word]}`"
            elif close:
                hint = f"did you mean `{close[0]}`?"
        return self._error(f"expected an operator before `{token.text}`", at, hint)
