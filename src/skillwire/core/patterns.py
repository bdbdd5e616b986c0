"""The one pattern engine for every regular expression a skill gives.

A tool input's ``pattern`` and ``patternProperties``, an entity's or a required input's
``pattern``, the shell ``denyPatterns`` and CEL's ``matches()`` all compile here, so the
gate, input validation and the offline extractor agree on every value.

What a pattern means, as JSON Schema users expect (ECMA-262):

* it is *searched* in the value, not implicitly anchored: ``[0-9]+`` matches ``"a1"``;
* ``^`` and ``$`` anchor at the start and the end of the whole value only (no multi-line
  mode unless the pattern asks with ``(?m)``), and ``$`` does not match before a final
  newline: ``^ORD-[0-9]{5}$`` rejects ``"ORD-12345\\n"``;
* the syntax is RE2's, which covers what JSON Schema patterns use; the ECMA-262 escape
  ``\\uXXXX`` (a surrogate pair written as two of them included) is read as the
  character it names; ``\\d``, ``\\w`` and ``\\b`` are ASCII, ``\\pL`` and the other
  Unicode classes are there for the rest; a value is text, matched character by
  character. Where RE2 still differs from ECMA-262: ``\\s`` is ASCII whitespace only,
  and ``.`` excludes only ``\\n``.

Patterns run on RE2 (the ``google-re2`` package), whose matching time is linear in the
value's length whatever the pattern (and which releases the GIL while it matches): no
pattern can hang the event loop. RE2 cannot run look-ahead, look-behind or
backreferences; such a pattern, and any other the engine rejects, raises
:class:`PatternError` with the reason, so a skill that holds one fails to load.

Compiled patterns are cached by their text (:func:`compile_pattern`), refusals too.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Final

from skillwire.core.errors import PatternError

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = [
    "CACHE_SIZE",
    "MAX_LENGTH",
    "Pattern",
    "PatternError",
    "SchemaProblem",
    "Span",
    "cache_info",
    "compile_pattern",
    "schema_pattern_problem",
    "strip_anchors",
]

Span = tuple[int, int]
"""Where a match starts and ends in the value, in characters (as ``str`` slices count)."""

CACHE_SIZE: Final = 512
"""Compiled patterns kept. RE2 gives each at most 8 MiB (its default budget); most use
a few kilobytes."""

MAX_LENGTH: Final = 4096
"""Longest pattern accepted, in characters: compiling one this long takes up to about
0.15 s, and a pattern from the data is compiled on the event loop."""

SchemaProblem = tuple[str, tuple[str, ...]]
"""What is wrong, and the path inside the schema where it is."""

_CONTINUATION = bytes(range(0x80, 0xC0))
_SUBSCHEMA = frozenset(
    {
        *("items", "contains", "additionalProperties", "propertyNames", "not", "if", "then"),
        *("else", "unevaluatedItems", "unevaluatedProperties", "contentSchema"),
    }
)
_SCHEMA_MAP = frozenset({"properties", "patternProperties", "$defs", "definitions"})
_SCHEMA_MAP |= {"dependentSchemas"}
_SCHEMA_LIST = frozenset({"allOf", "anyOf", "oneOf", "prefixItems", "items"})
_MAX_SCHEMA_DEPTH = 200
_MAX_COUNT = 1000
_LOOKAROUND = {
    "(?=": "a look-ahead `(?=`",
    "(?!": "a negative look-ahead `(?!`",
    "(?<=": "a look-behind `(?<=`",
    "(?<!": "a negative look-behind `(?<!`",
}
_LOOKAROUND_HINT = (
    "the linear-time engine has no look-around; describe the value itself "
    "(`^[0-9]{5}$`, not `(?<=#)[0-9]{5}`)"
)
_BACKREFERENCE_HINT = "the linear-time engine has no backreferences; spell the repeat out"


class Pattern:
    """A compiled skill pattern. Build one with :func:`compile_pattern`; instances are
    immutable and may be shared between threads and jobs."""

    __slots__ = ("_regex", "expression", "source")

    def __init__(self, source: str, expression: str, regex: Any) -> None:
        self.source = source
        """The pattern as the skill author wrote it."""
        self.expression = expression
        """The RE2 text that runs (``\\uXXXX`` escapes rewritten)."""
        self._regex = regex

    def search(self, value: str, start: int = 0, *, group: int = 0) -> Span | None:
        """Where the pattern first matches in ``value`` at or after ``start``, or None.

        ``group`` picks a capturing group's span instead of the whole match (None when
        that group took no part). A lone surrogate in ``value`` counts as one character
        (``.`` and negated classes match it, no letter or digit class does) and the text
        around it is searched as usual, so a deny pattern still finds ``rm -rf`` next to
        one. To *validate* a value, use :meth:`accepts`.
        """
        start = max(start, 0)
        if value.isascii():
            encoded = value.encode("ascii")
            offset = start
        else:
            encoded = value.encode("utf-8", "surrogatepass")
            offset = len(value[:start].encode("utf-8", "surrogatepass"))
        if offset > len(encoded):
            return None
        spans = self._regex.Match(_unanchored(), encoded, offset, len(encoded))
        if spans[0][0] < 0 or not 0 <= group < len(spans) or spans[group][0] < 0:
            return None
        begin, end = spans[group]
        if len(encoded) == len(value):
            return begin, end
        return _characters(encoded, begin), _characters(encoded, end)

    def accepts(self, value: str) -> bool:
        """Whether ``value`` satisfies the pattern as a JSON Schema ``pattern``: it is
        text (no lone surrogate, which is not Unicode text) and the pattern matches in it."""
        if value.isascii():  # the common case, as search() does it, without the spans
            encoded = value.encode("ascii")
            begin: int = self._regex.Match(_unanchored(), encoded, 0, len(encoded))[0][0]
            return begin >= 0
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return False
        return self.search(value) is not None

    def __repr__(self) -> str:
        return f"Pattern({self.source!r})"


def compile_pattern(source: str) -> Pattern:
    """Compile a skill pattern; compiled once per text (and refused once: a pattern the
    engine cannot take is remembered too, so one from the data costs its compile once).

    Raises :class:`PatternError` for a pattern the engine cannot take: a syntax error,
    look-around, a backreference, a lone surrogate, a repetition count above 1000, one
    longer than :data:`MAX_LENGTH`, or one too large for RE2's memory budget.
    """
    found = _compiled(source)
    if isinstance(found, PatternError):  # a fresh one: a raised error keeps its traceback
        raise PatternError(found.source, found.reason, found.offset, found.hint)
    return found


def cache_info() -> Any:
    """Hits, misses and size of the cache of compiled patterns (``functools``' figures)."""
    return _compiled.cache_info()


@functools.lru_cache(maxsize=CACHE_SIZE)
def _compiled(source: str) -> Pattern | PatternError:
    if not isinstance(source, str):
        return PatternError(repr(source), f"a pattern is text, not {type(source).__name__}")
    if len(source) > MAX_LENGTH:
        return PatternError(
            source[:40] + "...", f"it is {len(source)} characters long; at most {MAX_LENGTH}"
        )
    try:
        if not source.isascii():
            for at, char in enumerate(source):
                if "\ud800" <= char <= "\udfff":
                    raise PatternError(source, "it holds a lone surrogate, which is not text", at)
        expression = "".join(_translate(source, keep_anchors=True))
        return Pattern(source, expression, _compile(source, expression))
    except PatternError as exc:
        return exc


def strip_anchors(source: str) -> str:
    """The RE2 text of ``source`` without its anchors (``^``, ``$``, ``\\A``, ``\\z``
    outside character classes): the pattern as it may appear *inside* a longer text.

    The offline extractor finds an entity's value in a message with it, then checks the
    value with the whole pattern. Raises :class:`PatternError` as :func:`compile_pattern`.
    """
    compile_pattern(source)  # the same errors, whatever the anchors
    return "".join(_translate(source, keep_anchors=False))


def schema_pattern_problem(schema: object) -> SchemaProblem | None:
    """The first place in a JSON Schema where a pattern would not run on this engine.

    That is a ``pattern`` or a ``patternProperties`` name it cannot take; or a part
    ``jsonschema`` would check with Python's ``re`` whatever validator it is given: a
    ``$schema`` below the root (``jsonschema`` switches to that dialect's own validator
    there) and ``unevaluatedProperties`` in a schema with ``patternProperties`` (it
    matches those names itself). The last two are found anywhere in the document, data
    included, since a ``$ref`` can point anywhere in it.
    """
    found = _pattern_in_schema(schema, (), set())
    if found is not None:
        return found
    has: dict[str, tuple[str, ...]] = {}
    stack: list[tuple[object, tuple[str, ...]]] = [(schema, ())]
    seen: set[int] = set()  # a part shared by YAML aliases is looked at once
    while stack:
        node, path = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, dict):
            if path and isinstance(node.get("$schema"), str):
                return (
                    "`$schema` below the root: skillwire checks the whole schema as Draft "
                    "2020-12 with its own pattern engine; remove it here",
                    (*path, "$schema"),
                )
            for keyword in ("patternProperties", "unevaluatedProperties"):
                if keyword in node:
                    has.setdefault(keyword, (*path, keyword))
            stack.extend((value, (*path, str(key))) for key, value in node.items())
        elif isinstance(node, list):
            stack.extend((value, (*path, str(i))) for i, value in enumerate(node))
    if len(has) == 2:
        return (
            "unevaluatedProperties cannot be checked in a schema with patternProperties "
            "(jsonschema would match those names with a backtracking engine); use "
            "additionalProperties",
            has["unevaluatedProperties"],
        )
    return None


def _pattern_in_schema(node: object, path: tuple[str, ...], seen: set[int]) -> SchemaProblem | None:
    """The first pattern the engine cannot take, in the schema positions of ``node``
    (never in ``enum``, ``const``, ``default`` or ``examples``, which are data)."""
    if not isinstance(node, dict) or id(node) in seen or len(path) > _MAX_SCHEMA_DEPTH:
        return None
    seen.add(id(node))
    for key, value in node.items():
        where = (*path, str(key))
        if key == "pattern" and isinstance(value, str):
            problem = _problem_of(value)
            if problem is not None:
                return problem, where
        found: SchemaProblem | None = None
        if key in _SCHEMA_MAP and isinstance(value, dict):
            for name, sub in value.items():
                if key == "patternProperties" and isinstance(name, str):
                    problem = _problem_of(name)
                    if problem is not None:
                        return problem, (*where, name)
                found = found or _pattern_in_schema(sub, (*where, str(name)), seen)
        elif key in _SCHEMA_LIST and isinstance(value, list):
            for index, sub in enumerate(value):
                found = found or _pattern_in_schema(sub, (*where, str(index)), seen)
        elif key in _SUBSCHEMA:
            found = _pattern_in_schema(value, where, seen)
        if found is not None:
            return found
    return None


def _problem_of(source: str) -> str | None:
    try:
        compile_pattern(source)
    except PatternError as exc:
        return str(exc) + (f" ({exc.hint})" if exc.hint else "")
    return None


def _compile(source: str, expression: str) -> Any:
    import re2  # 20 ms to import: only when a skill has a pattern

    options = re2.Options()
    options.log_errors = False  # RE2 would print each error; we raise it instead
    regex = re2._re2.RE2(expression.encode("utf-8"), options)
    if regex.ok():
        return regex
    raise _rejected(source, regex.error().decode("utf-8", "replace"))


def _rejected(source: str, message: str) -> PatternError:
    """RE2's error message as a :class:`PatternError` an author can act on."""
    if message.startswith("invalid repetition size"):
        return PatternError(
            source,
            f"{message}: a count above 1000 or nested counts that multiply past it, or a "
            "first count above the second",
            hint="write a repeat of at most 1000, or check the length with minLength/maxLength",
        )
    if message.startswith("pattern too large"):
        return PatternError(
            source, "it is too large for the linear-time engine (over 8 MiB compiled)"
        )
    if message.startswith("invalid escape sequence: \\Z"):
        return PatternError(source, message, hint="write `$` (or `\\z`) for the end of the value")
    return PatternError(source, f"not a valid regular expression: {message}")


def _translate(source: str, *, keep_anchors: bool) -> Iterator[str]:
    """The pattern in RE2's syntax, piece by piece; a small tokenizer, not a regex.

    Rewrites ``\\uXXXX`` to ``\\x{XXXX}``, drops the anchors when asked, and raises
    :class:`PatternError` where RE2 would only say "invalid": look-around,
    backreferences, ``\\C`` (one byte, which could split a character).
    """
    at, end = 0, len(source)
    in_class = False
    while at < end:
        char = source[at]
        if char == "\\":
            piece, at = _escape(source, at, in_class=in_class)
            if keep_anchors or in_class or piece not in ("\\A", "\\z"):
                yield piece
            continue
        if in_class:
            if char == "[" and source.startswith("[:", at):  # a POSIX class: [[:alpha:]]
                close = source.find(":]", at + 2)
                if close >= 0:
                    yield source[at : close + 2]
                    at = close + 2
                    continue
            in_class = char != "]"
            yield char
            at += 1
            continue
        if char == "[":
            in_class = True
            opening = "[^" if source.startswith("[^", at) else "["
            at += len(opening)
            if source.startswith("]", at):  # `[]a]`: a first `]` is a member
                opening += "]"
                at += 1
            yield opening
            continue
        if char == "(" and source.startswith("(?", at):
            for prefix, what in _LOOKAROUND.items():
                if source.startswith(prefix, at):
                    raise PatternError(source, what, at, _LOOKAROUND_HINT)
            if source.startswith("(?P=", at):
                raise PatternError(source, "a backreference `(?P=`", at, _BACKREFERENCE_HINT)
        if char == "{":
            _check_count(source, at)
        if char in "^$" and not keep_anchors:
            at += 1
            continue
        yield char
        at += 1


def _escape(source: str, at: int, *, in_class: bool) -> tuple[str, int]:
    """The escape starting at ``source[at]`` (a backslash) in RE2's syntax, and where the
    text after it starts."""
    letter = source[at + 1 : at + 2]
    if letter == "u":
        code = _hex4(source, at + 2)
        if code is None:
            raise PatternError(source, "`\\u` takes four hexadecimal digits", at)
        if 0xD800 <= code <= 0xDBFF and source.startswith("\\u", at + 6):
            low = _hex4(source, at + 8)
            if low is not None and 0xDC00 <= low <= 0xDFFF:
                paired = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                return f"\\x{{{paired:X}}}", at + 12
        if 0xD800 <= code <= 0xDFFF:
            raise PatternError(source, f"`\\u{code:04X}` is half of a surrogate pair", at)
        return f"\\x{{{code:X}}}", at + 6
    if letter == "Q":  # RE2's literal text up to `\E`: copied as it is
        close = source.find("\\E", at + 2)
        stop = len(source) if close < 0 else close + 2
        return source[at:stop], stop
    if letter.isdigit() and letter != "0" and not in_class:
        raise PatternError(source, f"a backreference `\\{letter}`", at, _BACKREFERENCE_HINT)
    if letter == "k" and not in_class:
        raise PatternError(source, "a backreference `\\k`", at, _BACKREFERENCE_HINT)
    if letter == "C":
        raise PatternError(source, "`\\C` matches one byte, which can split a character", at)
    return source[at : at + 2], at + 2


def _check_count(source: str, at: int) -> None:
    """Refuse a repetition ``{n}``, ``{n,}`` or ``{n,m}`` above RE2's limit of 1000, which
    RE2 would otherwise read as literal text once the number is too long to parse."""
    close = source.find("}", at)
    counts = source[at + 1 : close].split(",") if close > at else []
    if not 1 <= len(counts) <= 2 or not counts[0].isascii() or not counts[0].isdigit():
        return
    if len(counts) == 2 and counts[1] and not (counts[1].isascii() and counts[1].isdigit()):
        return
    if any(len(count.lstrip("0")) > 4 or int(count) > _MAX_COUNT for count in counts if count):
        raise PatternError(
            source,
            f"the repetition {source[at : close + 1]} is above 1000",
            at,
            "write a repeat of at most 1000, or check the length with minLength/maxLength",
        )


def _hex4(source: str, at: int) -> int | None:
    digits = source[at : at + 4]
    if len(digits) != 4 or any(c not in "0123456789abcdefABCDEF" for c in digits):
        return None
    return int(digits, 16)


def _characters(encoded: bytes, offset: int) -> int:
    """The number of characters in ``encoded[:offset]`` (UTF-8, surrogates passed)."""
    return len(encoded[:offset].translate(None, _CONTINUATION))


@functools.cache
def _unanchored() -> Any:
    import re2

    return re2._re2.RE2.Anchor.UNANCHORED
