"""A ``shell_command`` tool's ``argsTemplate``, filled from a call's arguments into argv.

The template is a list of argv elements (FORMATS.md section 3). In an element:

- ``{{field}}`` is replaced by the argument's value (text as it is, a number or a
  boolean as JSON writes it); an absent argument is an error, unless inside an
  ``{{#if}}`` block that leaves it out;
- ``{{...field}}``, alone in its element, spreads an array argument into one element
  per item (an absent or empty array spreads to nothing);
- ``{{#if field}}...{{/if}}`` keeps what is between when the argument is present (not
  absent, ``null``, ``false``, ``""`` or ``[]``; ``0`` is present). A block may sit
  inside one element (``"{{#if n}}--max-count={{n}}{{/if}}"``) or span elements
  (``"{{#if n}}", "-n", "{{n}}", "{{/if}}"``); blocks nest. An element holding a block
  that renders to nothing is left out.

A value is never read as a template again, and the result is an argv list: nothing is
given to a shell. A ``{{field}}`` text value that would start an element with ``-`` (so
that the program reads it as an option: ``--output=/etc/x``) is refused, as is a NUL
character. A spread passes its items as they are: ``{{...args}}`` is where a template
accepts options, and the gate checks each of them like any other element.
Both are :class:`~skillwire.core.errors.ShellTemplateError`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from skillwire.core.errors import ShellTemplateError

__all__ = ["present", "render_args", "template_fields", "template_problems"]

_TAG = re.compile(r"\{\{(.*?)\}\}", re.DOTALL)
"""Anything between ``{{`` and ``}}``: a tag, or a mistake."""
_INSIDE = re.compile(r"\s*(?:(#if\s+|/if\s*|\.\.\.)\s*)?([A-Za-z_][\w-]*)?\s*")
"""What a tag holds: ``#if name``, ``/if``, ``...name`` or ``name``."""

TagKind = Literal["text", "if", "end", "spread", "value"]


@dataclass(frozen=True, slots=True)
class _Piece:
    kind: TagKind
    text: str  # the literal text, or the field's name


def _pieces(element: str) -> Iterator[_Piece]:
    at = 0
    for match in _TAG.finditer(element):
        if match.start() > at:
            yield _Piece("text", element[at : match.start()])
        inside = _INSIDE.fullmatch(match.group(1))
        if inside is None:
            raise ShellTemplateError(f"malformed tag {match.group(0)!r} in {element!r}")
        marker = (inside.group(1) or "").strip()
        name = inside.group(2) or ""
        if marker == "#if" and name:
            yield _Piece("if", name)
        elif marker == "/if" and not name:
            yield _Piece("end", "")
        elif marker == "..." and name:
            yield _Piece("spread", name)
        elif not marker and name:
            yield _Piece("value", name)
        else:
            raise ShellTemplateError(f"malformed tag {match.group(0)!r} in {element!r}")
        at = match.end()
    if at < len(element):
        yield _Piece("text", element[at:])


def present(value: Any) -> bool:
    """Whether an ``{{#if}}`` block keeps its text for ``value``: not absent (``None``),
    ``false``, ``""`` or ``[]``."""
    return value is not None and value is not False and value not in ("", [])


def _text(name: str, value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        text = value
    elif isinstance(value, int | float):
        text = json.dumps(value, allow_nan=False)
    else:
        raise ShellTemplateError(
            f"argument '{name}' is {type(value).__name__}, not text or a number: "
            "it cannot be one command-line argument"
        )
    if "\x00" in text:
        raise ShellTemplateError(f"argument '{name}' contains a NUL character")
    return text


def _leading(name: str, value: Any, text: str) -> None:
    """Refuse a text value that starts its element with ``-`` (an option)."""
    if isinstance(value, str) and text.startswith("-"):
        raise ShellTemplateError(
            f"argument '{name}' starts with '-' ({text[:40]!r}): the program would read it "
            "as an option; it is refused"
        )


def render_args(template: list[str], args: Mapping[str, Any]) -> list[str]:
    """The argv elements ``template`` makes from ``args`` (see the module docstring).

    Raises :class:`ShellTemplateError` for a malformed template, an unclosed or
    unopened block, a missing argument, or a value that cannot be an argument.
    """
    out: list[str] = []
    active: list[bool] = []  # one entry per open block: whether its text is kept
    for element in template:
        pieces = list(_pieces(element))
        structural = any(p.kind in ("if", "end") for p in pieces)
        if any(p.kind == "spread" for p in pieces):
            if len(pieces) != 1:
                raise ShellTemplateError(f"{{{{...}}}} must be alone in its element: {element!r}")
            name = pieces[0].text
            if all(active):
                items = args.get(name)
                if items is None:
                    items = []
                if not isinstance(items, list):
                    raise ShellTemplateError(
                        f"argument '{name}' is spread with {{{{...{name}}}}} but is not an array"
                    )
                out.extend(_text(name, item) for item in items)
            continue
        parts: list[str] = []
        emitted = False
        for piece in pieces:
            if piece.kind == "if":
                active.append(all(active) and present(args.get(piece.text)))
                continue
            if piece.kind == "end":
                if not active:
                    raise ShellTemplateError(f"{{{{/if}}}} without {{{{#if}}}} in {element!r}")
                active.pop()
                continue
            if not all(active):
                continue
            emitted = True
            if piece.kind == "text":
                parts.append(piece.text)
                continue
            value = args.get(piece.text)
            if value is None:
                raise ShellTemplateError(
                    f"argument '{piece.text}' is missing (the template needs it; wrap it "
                    f"in {{{{#if {piece.text}}}}}...{{{{/if}}}} if it is optional)"
                )
            text = _text(piece.text, value)
            if not "".join(parts):
                _leading(piece.text, value, text)
            parts.append(text)
        rendered = "".join(parts)
        if structural and not rendered:
            continue
        if emitted or (not structural and all(active)):
            out.append(rendered)
    if active:
        raise ShellTemplateError("{{#if}} without {{/if}} in the template")
    return out


def template_fields(template: list[str]) -> list[str]:
    """The argument names ``template`` reads, in order of first use."""
    names: list[str] = []
    for element in template:
        for match in _TAG.finditer(element):
            inside = _INSIDE.fullmatch(match.group(1))
            name = inside.group(2) if inside else None
            if name and name not in names:
                names.append(name)
    return names


def template_problems(template: list[str], known: set[str] | None = None) -> list[str]:
    """What is wrong with ``template`` itself (malformed tags, unbalanced blocks, a
    spread not alone, fields not among ``known``), for the load report."""
    problems: list[str] = []
    depth = 0
    for element in template:
        try:
            pieces = list(_pieces(element))
        except ShellTemplateError as exc:
            problems.append(str(exc))
            continue
        if any(p.kind == "spread" for p in pieces) and len(pieces) != 1:
            problems.append(f"{{{{...}}}} must be alone in its element: {element!r}")
        for piece in pieces:
            if piece.kind == "if":
                depth += 1
            elif piece.kind == "end":
                depth -= 1
                if depth < 0:
                    problems.append(f"{{{{/if}}}} without {{{{#if}}}} in {element!r}")
                    depth = 0
    if depth:
        problems.append("{{#if}} without {{/if}} in the template")
    if known is not None:
        problems += [
            f"the template reads '{name}', which is not an input of the tool"
            for name in template_fields(template)
            if name not in known
        ]
    return problems
