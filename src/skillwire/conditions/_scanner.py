"""A hand-written scanner for CEL tokens, with the mistakes authors make named and explained.

The scanner walks the text one character at a time. It knows CEL's literals (decimal and
hex integers, ``u`` unsigned integers, doubles, single, double and triple-quoted strings,
raw ``r''`` and bytes ``b''`` strings with their escapes) and ``//`` comments, so a word
inside a string or a comment never reaches the rewriter.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from skillwire.core.errors import ConditionSyntaxError

__all__ = ["Token", "TokenKind", "tokenize"]

TokenKind = Literal["name", "int", "uint", "float", "string", "bytes", "op", "end"]

_OPERATORS_2 = frozenset({"==", "!=", "<=", ">=", "&&", "||"})
_OPERATORS_1 = frozenset("<>=!+-*/%?:.,()[]{}")
_MISSPELLED: dict[str, tuple[str, str]] = {
    "===": ("`===` is not an operator", "write `==`"),
    "!==": ("`!==` is not an operator", "write `!=`"),
    ">>": ("`>>` is not an operator", "write `>` (greater than) or `>=` (greater or equal)"),
    "<<": ("`<<` is not an operator", "write `<` (less than) or `<=` (less or equal)"),
    "=>": ("`=>` is not an operator", "write `>=` (greater or equal)"),
    "=<": ("`=<` is not an operator", "write `<=` (less or equal)"),
    "<>": ("`<>` is not an operator", "write `!=` (not equal)"),
    "**": ("there is no power operator", "multiply instead: `x * x`"),
    "&": ("`&` is not an operator", "write `&&` or `and`"),
    "|": ("`|` is not an operator", "write `||` or `or`"),
}
_STRING_PREFIXES = frozenset({"r", "R", "b", "B", "br", "bR", "Br", "BR"})
_SIMPLE_ESCAPES = frozenset("abfnrtv\\'\"`?")
_HEX_ESCAPES = {"x": 2, "X": 2, "u": 4, "U": 8}
_DIGITS = frozenset("0123456789")
_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")
_OCTAL_DIGITS = frozenset("01234567")
_CURLY_QUOTES = frozenset("‘’‚‛“”„‟")


@dataclass(frozen=True, slots=True)
class Token:
    """One token of a condition, with its place in the author's text."""

    kind: TokenKind
    text: str
    """The token exactly as written (a string keeps its quotes and prefix)."""
    start: int
    """0-based offset of the first character in the condition text."""
    end: int
    """0-based offset just past the last character."""
    space: bool
    """Whitespace or a comment separates it from the token before."""


def tokenize(source: str) -> list[Token]:
    """Split ``source`` into tokens, ending with one ``end`` token.

    Raises :class:`~skillwire.core.conditions.ConditionSyntaxError` for a character CEL
    does not know, an unclosed string, a bad escape, or a misspelled operator such as
    ``>>``, ``=>`` or a single ``&``.
    """
    return _Scanner(source).run()


class _Scanner:
    def __init__(self, source: str) -> None:
        self._src = source
        self._tokens: list[Token] = []

    def run(self) -> list[Token]:
        src = self._src
        i = 0
        space = False
        while i < len(src):
            ch = src[i]
            if ch.isspace():
                i += 1
                space = True
            elif src.startswith("//", i):
                newline = src.find("\n", i)
                i = len(src) if newline < 0 else newline
                space = True
            else:
                i = self._token(i, space)
                space = False
        self._tokens.append(Token("end", "", len(src), len(src), space))
        return self._tokens

    def _emit(self, kind: TokenKind, start: int, end: int, space: bool) -> int:
        self._tokens.append(Token(kind, self._src[start:end], start, end, space))
        return end

    def _token(self, i: int, space: bool) -> int:
        src = self._src
        ch = src[i]
        if ch in "'\"":
            return self._emit("string", i, self._string(i, i, raw=False), space)
        if ch in _DIGITS or (ch == "." and src[i + 1 : i + 2] in _DIGITS):
            return self._number(i, space)
        if ch == "_" or (ch.isascii() and ch.isalpha()):
            end = i + 1
            while end < len(src) and _is_name_char(src[end]):
                end += 1
            word = src[i:end]
            if word in _STRING_PREFIXES and src[end : end + 1] in ("'", '"'):
                kind: TokenKind = "bytes" if word[0] in "bB" else "string"
                raw = "r" in word.lower()
                return self._emit(kind, i, self._string(i, end, raw=raw), space)
            return self._emit("name", i, end, space)
        for length in (3, 2, 1):
            candidate = src[i : i + length]
            if candidate in _MISSPELLED and candidate not in _OPERATORS_2:
                if length == 1 and src[i : i + 2] in _OPERATORS_2:
                    continue
                message, hint = _MISSPELLED[candidate]
                raise ConditionSyntaxError(message, column=i + 1, hint=hint)
        if src[i : i + 2] in _OPERATORS_2:
            return self._emit("op", i, i + 2, space)
        if ch in _OPERATORS_1:
            return self._emit("op", i, i + 1, space)
        raise ConditionSyntaxError(
            f"unexpected character `{ch}`", column=i + 1, hint=_character_hint(ch)
        )

    def _number(self, i: int, space: bool) -> int:
        src = self._src
        end = i
        if src.startswith(("0x", "0X"), i) and src[i + 2 : i + 3] in _HEX_DIGITS:
            end = i + 2
            while end < len(src) and src[end] in _HEX_DIGITS:
                end += 1
            return self._integer(i, end, space)
        end = self._digits(end)
        is_float = False
        if src[end : end + 1] == "." and src[end + 1 : end + 2] in _DIGITS:
            end = self._digits(end + 1)
            is_float = True
        if src[end : end + 1] in ("e", "E"):
            exponent = end + 1
            if src[exponent : exponent + 1] in ("+", "-"):
                exponent += 1
            if src[exponent : exponent + 1] in _DIGITS:
                end = self._digits(exponent)
                is_float = True
        if is_float:
            return self._emit("float", i, end, space)
        return self._integer(i, end, space)

    def _integer(self, start: int, end: int, space: bool) -> int:
        if self._src[end : end + 1] in ("u", "U"):
            return self._emit("uint", start, end + 1, space)
        return self._emit("int", start, end, space)

    def _digits(self, i: int) -> int:
        while i < len(self._src) and self._src[i] in _DIGITS:
            i += 1
        return i

    def _string(self, start: int, quote_at: int, *, raw: bool) -> int:
        """Return the offset just past the string whose quote is at ``quote_at``."""
        src = self._src
        quote = src[quote_at]
        closing = quote * 3 if src.startswith(quote * 3, quote_at) else quote
        i = quote_at + len(closing)
        while i < len(src):
            if src.startswith(closing, i):
                return i + len(closing)
            ch = src[i]
            if ch in "\r\n" and len(closing) == 1:
                break
            i = i + 1 if raw or ch != "\\" else self._escape(i)
        raise ConditionSyntaxError(
            "this string is not closed",
            column=start + 1,
            hint=f"end it with {closing} on the same line",
        )

    def _escape(self, i: int) -> int:
        """Check the escape sequence at ``i`` (a backslash); return the offset after it."""
        src = self._src
        ch = src[i + 1 : i + 2]
        if ch in _SIMPLE_ESCAPES and ch:
            return i + 2
        if ch in _HEX_ESCAPES:
            digits = src[i + 2 : i + 2 + _HEX_ESCAPES[ch]]
            if len(digits) == _HEX_ESCAPES[ch] and all(d in _HEX_DIGITS for d in digits):
                return i + 2 + len(digits)
        elif ch in ("0", "1", "2", "3"):
            digits = src[i + 2 : i + 4]
            if len(digits) == 2 and all(d in _OCTAL_DIGITS for d in digits):
                return i + 4
        elif not ch:
            return i + 1
        raise ConditionSyntaxError(
            f"unknown escape `\\{ch}` in a string",
            column=i + 1,
            hint="write `\\\\` for a backslash, or use a raw string such as r'C:\\temp'",
        )


def _is_name_char(ch: str) -> bool:
    return ch == "_" or (ch.isascii() and ch.isalnum())


def _character_hint(ch: str) -> str:
    if ch in _CURLY_QUOTES:
        return "use straight quotes: 'text' or \"text\""
    if ch == "#":
        return "comments start with `//`"
    if ch == ";":
        return "a condition is one expression: join the parts with `and` / `or`"
    if ch in "$@":
        return "write names bare: `amount`, `args.amount`"
    if ch == "`":
        return "quote text with ' or \""
    if ch == "\\":
        return "a backslash belongs inside a string"
    if ch.isalpha():
        return "names use ASCII letters, digits and `_`; put other text in quotes"
    return "remove it"
