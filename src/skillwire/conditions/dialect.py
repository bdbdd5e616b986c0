"""The spoken dialect of conditions: a scanner for CEL tokens and a rewriter to plain CEL.

Skill authors write ``file_path ends with '.lock' or not force``; CEL reads
``file_path.endsWith('.lock') || !force``. The rewrite works on tokens produced by a
hand-written scanner and on a small recursive-descent parse of CEL's grammar, so a word
inside a string is never touched and every operand is exactly the one CEL would see.

Spellings (see ``docs/conditions.md`` for the author's table):

* ``and`` / ``or`` become ``&&`` / ``||``; a single ``=`` becomes ``==``;
* ``not x`` becomes ``!(x)``, negating the whole comparison that follows, as in Python;
* ``x contains y`` is a substring test on a string and a membership test otherwise;
* ``x starts with y`` / ``x ends with y`` become ``x.startsWith(y)`` / ``x.endsWith(y)``;
* ``x not in y``, ``x not contains y``, ``x not starts with y`` negate the relation;
* the whole conditions ``always`` / ``never`` become ``true`` / ``false``.

The spoken relations bind like ``in``: their operands are whole arithmetic expressions.
When the expression computes (binary ``+ - * / %``), whole-number literals are written
as doubles so that ``amount * 2 > total`` works whichever number is whole; literals in an
index (``history[0]``), map keys and ``%`` operands stay whole.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Mapping
from dataclasses import dataclass, field

from skillwire.conditions._grammar import Grammar, Piece
from skillwire.conditions._scanner import Token, TokenKind, tokenize
from skillwire.conditions.access import Access
from skillwire.core.errors import ConditionSyntaxError

__all__ = ["MAX_DEPTH", "MAX_TOKENS", "Rewrite", "Token", "TokenKind", "rewrite", "tokenize"]

MAX_TOKENS = 1000
"""Longest condition accepted, in tokens (deeper CEL trees can exhaust the native stack)."""

MAX_DEPTH = 40
"""Deepest nesting of brackets, ternaries and ``not`` accepted."""

_CONSTANT_CONDITIONS = {"always": "true", "never": "false"}


@dataclass(frozen=True, slots=True)
class _Span:
    start: int
    end: int
    origin: int
    verbatim: bool


@dataclass(frozen=True, slots=True)
class Rewrite:
    """A condition rewritten to plain CEL, with the way back to the author's columns."""

    source: str
    """The text as the author wrote it."""
    expression: str
    """The CEL text that runs."""
    names: Mapping[str, int]
    """Free top-level identifiers the expression reads, each with its first offset in ``source``."""
    calls: Mapping[str, int]
    """Functions and methods the author calls, each with its first offset in ``source``."""
    bound: frozenset[str]
    """Names bound by comprehension macros (the ``x`` in ``xs.exists(x, x > 1)``)."""
    arithmetic: bool
    """True when the expression computes, so numbers are evaluated as doubles."""
    spans: tuple[_Span, ...]
    """Where each run of :attr:`expression` came from in :attr:`source`."""
    access: Mapping[str, Access] = field(default_factory=dict)
    """How the expression reads each free name (:mod:`skillwire.conditions.access`)."""

    def original_offset(self, offset: int) -> int:
        """Map a 0-based offset in :attr:`expression` to a 0-based offset in :attr:`source`."""
        if not self.spans:
            return 0
        index = max(bisect_right([span.start for span in self.spans], offset) - 1, 0)
        span = self.spans[index]
        if offset < span.end:
            return span.origin + (offset - span.start if span.verbatim else 0)
        if index + 1 < len(self.spans):
            return self.spans[index + 1].origin
        return span.origin + (span.end - span.start if span.verbatim else 0)


def rewrite(source: str) -> Rewrite:
    """Rewrite a condition in the spoken dialect (or plain CEL) to plain CEL.

    Raises :class:`~skillwire.core.conditions.ConditionSyntaxError` with the 1-based
    ``column`` of the problem in ``source`` and a suggested spelling.
    """
    stripped = source.strip()
    if not stripped:
        raise ConditionSyntaxError(
            "the condition is empty",
            column=1,
            hint="write an expression such as `amount > 500`, or `always` / `never`",
        )
    constant = _CONSTANT_CONDITIONS.get(stripped.lower())
    if constant is not None:
        origin = source.index(stripped[0])
        span = _Span(0, len(constant), origin, verbatim=False)
        return Rewrite(source, constant, {}, {}, frozenset(), False, (span,))
    tokens = tokenize(source)
    if len(tokens) > MAX_TOKENS:
        raise ConditionSyntaxError(
            f"the condition is too long ({len(tokens)} tokens; at most {MAX_TOKENS})",
            column=tokens[MAX_TOKENS].start + 1,
            hint="split it into several rules",
        )
    grammar = Grammar(tokens, max_depth=MAX_DEPTH)
    pieces = grammar.parse()
    expression, spans = _render(pieces, decimal=grammar.arithmetic)
    return Rewrite(
        source=source,
        expression=expression,
        names=dict(grammar.free),
        calls=dict(grammar.calls),
        bound=frozenset(grammar.bound),
        arithmetic=grammar.arithmetic,
        spans=spans,
        access={name: builder.build() for name, builder in grammar.access.items()},
    )


def _render(pieces: list[Piece], *, decimal: bool) -> tuple[str, tuple[_Span, ...]]:
    parts: list[str] = []
    spans: list[_Span] = []
    position = 0
    for index, piece in enumerate(pieces):
        if index and piece.space:
            parts.append(" ")
            position += 1
        text = piece.decimal if decimal and piece.decimal is not None else piece.text
        verbatim = piece.verbatim and text == piece.text
        spans.append(_Span(position, position + len(text), piece.origin, verbatim))
        parts.append(text)
        position += len(text)
    return "".join(parts), tuple(spans)
