"""The issues the document layer raises, and parser errors turned into actionable ones.

Hand-written exporters produce the same few mistakes again and again (an unquoted ``*``,
tabs, ``: `` inside a value, an unclosed quote or bracket, a trailing comma, comments in
JSON). For those the issue says what to write instead; anything else keeps the parser's
own words. These functions run on the error path only and never raise.
"""

from __future__ import annotations

import json
import re
import sys
from json import JSONDecodeError
from typing import Any

from skillwire.core.issues import Severity, SkillIssue
from skillwire.core.location import FieldPath, SourceLocation
from skillwire.skills._json_positions import LineIndex

__all__ = [
    "issue",
    "json_syntax_issue",
    "long_number_issue",
    "too_deep_issue",
    "yaml_syntax_issue",
]

_PLAIN_TOKEN = re.compile(r"[^\s,\[\]{}#]+")
_WORD = re.compile(r"[A-Za-z_]+")
_JSON_WORDS = {"True": "true", "False": "false", "None": "null"}


def issue(
    file: str, at: tuple[int, int], code: str, message: str, hint: str, *, path: FieldPath = ()
) -> SkillIssue:
    """An error at ``at`` (1-based line and column; ``(0, 0)`` when unknown)."""
    return SkillIssue(Severity.ERROR, message, SourceLocation(file, *at), path, code, hint)


def too_deep_issue(file: str, at: tuple[int, int], max_depth: int) -> SkillIssue:
    """Containers nested deeper than ``max_depth``. No field path: it would be that long."""
    return issue(
        file, at, "too-deep", f"nested more than {max_depth} levels deep", "flatten the structure"
    )


def long_number_issue(text: str, file: str, code: str) -> SkillIssue:
    """An integer too long for Python to convert (``sys.get_int_max_str_digits()``)."""
    limit = sys.get_int_max_str_digits()
    match = re.search(rf"\d{{{limit + 1},}}", text) if limit else None
    at = LineIndex(text).position(match.start()) if match else (0, 0)
    return issue(
        file, at, code, f"number with more than {limit} digits", "write it as a string instead"
    )


def _line(text: str, line: int) -> str:
    """The 0-based ``line`` of ``text``, without its line break ('' when out of range)."""
    lines = text.splitlines()
    return lines[line] if 0 <= line < len(lines) else ""


def _single_quoted(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def yaml_syntax_issue(exc: Any, text: str, file: str, *, max_depth: int) -> SkillIssue:
    """One issue for a ruamel ``MarkedYAMLError`` or ``ReaderError``."""
    if not hasattr(exc, "problem_mark"):  # ReaderError: a character YAML does not allow
        at = LineIndex(text).position(getattr(exc, "position", 0) or 0)
        char = getattr(exc, "character", "")
        shown = f"#x{char:04x}" if isinstance(char, int) else repr(char)
        return issue(
            file,
            at,
            "yaml-syntax",
            f"character {shown} is not allowed in YAML",
            "remove it, or write it as an escape inside a double-quoted string",
        )
    context = str(exc.context or "")
    problem = str(exc.problem or "")
    mark = exc.problem_mark or exc.context_mark
    if mark is None:
        return issue(file, (0, 0), "yaml-syntax", problem or context or "invalid YAML", "")
    cmark = exc.context_mark or mark
    at = (mark.line + 1, mark.column + 1)
    c_at = (cmark.line + 1, cmark.column + 1)
    if type(exc).__name__ == "MaxDepthExceededError":
        return too_deep_issue(file, at, max_depth)
    if "expected a single document" in context:
        return issue(
            file,
            at,
            "yaml-multiple-documents",
            "more than one YAML document in the file",
            "a skill file holds one document: remove the '---' line, or split the file",
        )
    if context in ("while scanning an alias", "while scanning an anchor"):
        sign, kind = ("*", "an alias") if "alias" in context else ("&", "an anchor")
        token = _token_at(text, cmark) or sign
        return issue(
            file,
            c_at,
            "yaml-syntax",
            f"unquoted '{sign}': YAML reads it as {kind}",
            f"quote it: {_single_quoted(token)}",
        )
    if "found undefined alias" in problem:
        token = _token_at(text, mark) or "*"
        return issue(
            file,
            at,
            "yaml-syntax",
            f"unknown alias '{token}'",
            f"'*' starts an alias; if it is literal text, quote it: {_single_quoted(token)}",
        )
    if "found character '\\t'" in problem:
        return issue(
            file,
            at,
            "yaml-syntax",
            "tab character used for indentation",
            "indent with spaces: YAML does not allow tabs for indentation",
        )
    if "that cannot start any token" in problem:
        token = _token_at(text, mark) or "?"
        return issue(
            file,
            at,
            "yaml-syntax",
            f"a plain value cannot start with '{token[0]}'",
            f"quote it: {_single_quoted(token)}",
        )
    if problem == "mapping values are not allowed here":
        return _colon_in_value(text, file, mark, at)
    if "quoted scalar" in context:
        if "end of stream" in problem:
            quote = _line(text, cmark.line)[cmark.column : cmark.column + 1] or '"'
            inner = "''" if quote == "'" else '\\"'
            return issue(
                file,
                c_at,
                "yaml-syntax",
                "quoted string is never closed",
                f"add the closing {quote}; write a {quote} inside the text as {inner}",
            )
        hint = "inside double quotes write a backslash as \\\\, or use single quotes"
        return issue(file, at, "yaml-syntax", problem, hint if "escape" in problem else "")
    if context in ("while parsing a flow sequence", "while parsing a flow mapping"):
        opening, closing = ("[", "]") if "sequence" in context else ("{", "}")
        found = problem.rpartition("but got ")[2] or "something else"
        return issue(
            file,
            c_at,
            "yaml-syntax",
            f"'{opening}' is never closed (found {found} at line {at[0]})",
            f"close it with '{closing}', or quote the value if '{opening}' is literal text",
        )
    if context == "while scanning a simple key":
        return issue(
            file,
            c_at,
            "yaml-syntax",
            "expected 'key: value' on this line",
            "add the missing ':' after the key, or close an open quote",
        )
    if context.startswith("while parsing a block"):
        return issue(
            file,
            at,
            "yaml-syntax",
            "indentation does not match the lines above",
            "entries of one mapping or list must start in the same column",
        )
    message = f"{problem} ({context})" if context and problem else problem or context
    return issue(file, at, "yaml-syntax", message or "invalid YAML", "")


def _token_at(text: str, mark: Any) -> str:
    """The plain token that starts at ``mark`` (up to a space, comma, bracket or '#')."""
    if mark is None:
        return ""
    match = _PLAIN_TOKEN.match(_line(text, mark.line), mark.column)
    return match.group() if match else ""


def _colon_in_value(text: str, file: str, mark: Any, at: tuple[int, int]) -> SkillIssue:
    line = _line(text, mark.line)
    key, sep, value = line[: mark.column].partition(": ")
    if sep and key.strip():
        value = (value + line[mark.column :]).strip()
        quoted = json.dumps(value, ensure_ascii=False)
        return issue(
            file,
            at,
            "yaml-syntax",
            "': ' inside a plain value",
            f"quote the value: {key.strip()}: {quoted}",
        )
    return issue(
        file,
        at,
        "yaml-syntax",
        "unexpected ':' here",
        "check this line's indentation: a key cannot sit under a key that already "
        "has a value; or quote a value that contains ': '",
    )


def json_syntax_issue(exc: JSONDecodeError, text: str, file: str) -> SkillIssue:
    """One issue for a ``json.JSONDecodeError``, with a hint for common mistakes."""
    pos, msg = exc.pos, exc.msg
    char = text[pos : pos + 1]
    before = text[:pos].rstrip()
    at = (exc.lineno, exc.colno)
    message = re.sub(r"( starting)? at$", "", msg)
    hint = ""
    if not text[pos:].strip():
        message = "the text ends too early"
        hint = "a value, a closing '\"', ']' or '}' is missing at the end"
    elif char in ("}", "]") and before.endswith(","):
        line, column = LineIndex(text).position(len(before) - 1)
        message = f"trailing comma before '{char}'"
        hint = f"remove the ',' at line {line}, column {column}: JSON allows no trailing comma"
    elif text.startswith(("//", "/*"), pos):
        message = "comment in JSON"
        hint = 'JSON has no comments: remove it, or keep the note in a "_comment" key'
    elif char == "'":
        message = "single-quoted string"
        hint = 'JSON strings and keys use double quotes: "..."'
    elif msg == "Expecting ',' delimiter":
        message = "missing comma"
        hint = "add ',' between the previous item and this one"
    elif msg == "Expecting ':' delimiter":
        message = "missing ':' after the key"
        hint = "add ':' between the key and its value"
    elif msg.startswith("Expecting property name"):
        message = "object key is not a double-quoted string"
        hint = 'write keys in double quotes: "key": value'
    elif msg.startswith("Unterminated string"):
        message = "string is never closed"
        hint = "add the closing '\"'"
    elif msg.startswith("Invalid control character"):
        message = "raw control character inside a string"
        hint = "a string cannot contain a raw line break or tab: write \\n or \\t"
    elif msg.startswith("Invalid \\escape"):
        hint = "write a backslash inside a string as \\\\"
    elif msg == "Extra data":
        message = "more than one JSON value"
        hint = "a JSON file holds one value: remove what follows, or wrap the values in a list"
    elif msg == "Expecting value":
        word = _WORD.match(text, pos)
        if word and word.group() in _JSON_WORDS:
            message = f"invalid literal '{word.group()}'"
            hint = f"write {_JSON_WORDS[word.group()]}: JSON literals are lowercase"
        elif word:
            message = "unquoted text"
            hint = f'text values need double quotes: "{word.group()}"'
    return issue(file, at, "json-syntax", message, hint)
