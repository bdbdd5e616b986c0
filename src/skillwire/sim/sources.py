"""Reading an experiment's files: YAML with the line of every value, CSV tables.

YAML is read with ruamel's round-trip loader, so every key and item keeps its line and
column; a duplicate key, a tag or a file that does not parse is an error with its
position, never a traceback. CSV files may start with a byte order mark (real
spreadsheets write one); ``TRUE``/``FALSE`` become booleans, numbers become numbers.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skillwire.core.issues import Severity, SkillIssue
from skillwire.core.location import FieldPath, SourceLocation

__all__ = ["Document", "read_csv", "read_yaml", "typed_cell"]

_MAX_BYTES = 50 * 1024 * 1024


@dataclass
class Document:
    """A YAML file as plain data, and where each value was written."""

    file: str
    data: Any
    positions: dict[FieldPath, tuple[int, int]] = field(default_factory=dict)

    def locate(self, path: FieldPath) -> SourceLocation:
        """File, line and column of the value at ``path`` (its nearest known parent)."""
        while path:
            found = self.positions.get(path)
            if found is not None:
                return SourceLocation(self.file, found[0], found[1])
            path = path[:-1]
        return SourceLocation(self.file, 1, 1)

    def issue(
        self, path: FieldPath, message: str, *, warning: bool = False, code: str = ""
    ) -> SkillIssue:
        """A finding located at ``path``."""
        severity = Severity.WARNING if warning else Severity.ERROR
        return SkillIssue(severity, message, self.locate(path), path, code)


def _read_text(path: Path, display: str) -> str | SkillIssue:
    try:
        if path.stat().st_size > _MAX_BYTES:
            return SkillIssue(Severity.ERROR, "file is larger than 50 MiB", SourceLocation(display))
        raw = path.read_bytes()
    except OSError as exc:
        return SkillIssue(
            Severity.ERROR, f"cannot read file: {exc.strerror or exc}", SourceLocation(display)
        )
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return SkillIssue(
            Severity.ERROR, f"not UTF-8 text (byte {exc.start})", SourceLocation(display)
        )


def read_yaml(path: Path, display: str | None = None) -> Document | SkillIssue:
    """The YAML file at ``path`` as a :class:`Document`, or the issue that stops it."""
    from ruamel.yaml import YAML
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    name = display or str(path)
    text = _read_text(path, name)
    if isinstance(text, SkillIssue):
        return text
    yaml = YAML(typ="rt", pure=True)
    yaml.allow_duplicate_keys = False
    try:
        node = yaml.load(io.StringIO(text))
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = (
            SourceLocation(name, mark.line + 1, mark.column + 1) if mark else SourceLocation(name)
        )
        problem = " ".join(str(exc.problem or exc.context or "invalid YAML").split())
        return SkillIssue(Severity.ERROR, f"invalid YAML: {problem}", where, (), "yaml")
    except (YAMLError, ValueError, RecursionError) as exc:
        return SkillIssue(
            Severity.ERROR, f"invalid YAML: {type(exc).__name__}", SourceLocation(name), (), "yaml"
        )
    doc = Document(name, None)
    converted = _plain(node, (), doc)
    if isinstance(converted, SkillIssue):
        return converted
    doc.data = converted
    return doc


def _plain(node: Any, path: FieldPath, doc: Document) -> Any:
    """Round-trip nodes to dicts, lists and scalars, recording positions on the way."""
    from ruamel.yaml.comments import CommentedMap, CommentedSeq, TaggedScalar

    tag = getattr(getattr(node, "tag", None), "value", None)
    if tag is not None and isinstance(node, CommentedMap | CommentedSeq):
        return doc.issue(path, f"unsupported YAML tag {tag}")
    if isinstance(node, CommentedMap):
        out: dict[str, Any] = {}
        for key, value in node.items():
            if not isinstance(key, str | int | float | bool) or isinstance(key, TaggedScalar):
                return doc.issue(path, "a key must be text")
            text = (
                key
                if isinstance(key, str)
                else str(key).lower()
                if isinstance(key, bool)
                else str(key)
            )
            try:
                line, col = node.lc.key(key)
                doc.positions[(*path, text)] = (line + 1, col + 1)
            except (KeyError, TypeError, AttributeError):
                pass
            child = _plain(value, (*path, text), doc)
            if isinstance(child, SkillIssue):
                return child
            out[text] = child
        return out
    if isinstance(node, CommentedSeq):
        items: list[Any] = []
        for index, value in enumerate(node):
            try:
                line, col = node.lc.item(index)
                doc.positions[(*path, index)] = (line + 1, col + 1)
            except (KeyError, TypeError, AttributeError):
                pass
            child = _plain(value, (*path, index), doc)
            if isinstance(child, SkillIssue):
                return child
            items.append(child)
        return items
    if isinstance(node, TaggedScalar):
        return doc.issue(path, f"unsupported YAML tag {node.tag}")
    if isinstance(node, bool) or node is None:
        return node
    if isinstance(node, int):
        return int(node)
    if isinstance(node, float):
        value = float(node)
        return value if math.isfinite(value) else doc.issue(path, "numbers must be finite")
    if isinstance(node, str):
        return str(node)
    return doc.issue(path, f"unsupported YAML value ({type(node).__name__})")


def read_csv(
    path: Path, display: str | None = None, *, list_columns: Mapping[str, str] | None = None
) -> tuple[list[str], list[dict[str, Any]]] | SkillIssue:
    """Header and rows of a CSV file; values typed (``TRUE``/``FALSE`` booleans, numbers,
    text), the ``list_columns`` split on their separator into lists of text."""
    name = display or str(path)
    text = _read_text(path, name)
    if isinstance(text, SkillIssue):
        return text
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        rows = list(reader)
    except csv.Error as exc:
        return SkillIssue(
            Severity.ERROR, f"invalid CSV: {exc}", SourceLocation(name, reader.line_num)
        )
    if not rows or not any(cell.strip() for cell in rows[0]):
        return SkillIssue(Severity.ERROR, "the CSV file has no header row", SourceLocation(name, 1))
    header = [cell.strip() for cell in rows[0]]
    seen: set[str] = set()
    for column, cell in enumerate(header, 1):
        if not cell or cell in seen:
            problem = "an empty column name" if not cell else f"column '{cell}' twice"
            return SkillIssue(
                Severity.ERROR, f"the header has {problem}", SourceLocation(name, 1, column)
            )
        seen.add(cell)
    lists = dict(list_columns or {})
    out: list[dict[str, Any]] = []
    for number, row in enumerate(rows[1:], 2):
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            return SkillIssue(
                Severity.ERROR,
                f"row has {len(row)} values, the header {len(header)}",
                SourceLocation(name, number),
            )
        record: dict[str, Any] = {}
        for key, cell in zip(header, row, strict=True):
            sep = lists.get(key)
            if sep is not None:
                record[key] = [part.strip() for part in cell.split(sep) if part.strip()]
            else:
                record[key] = typed_cell(cell)
        out.append(record)
    return header, out


def typed_cell(cell: str) -> Any:
    """A CSV cell as the value it spells: bool, int, float (finite) or text."""
    text = cell.strip()
    upper = text.upper()
    if upper in ("TRUE", "FALSE"):
        return upper == "TRUE"
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        return text
    return value if math.isfinite(value) else text
