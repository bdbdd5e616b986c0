"""YAML the author keeps editing: ruamel round-trip in and out, and the diff of a change.

A skill read here keeps its comments, key order and quoting when written back; keys the
assistant adds to a mapping go where the spec's layout puts them, not at the end.
"""

from __future__ import annotations

import difflib
import io
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import YAMLError

from skillwire.core.errors import UsageError

__all__ = [
    "SKILL_KEY_ORDER",
    "diff_text",
    "dump_yaml",
    "insert_ordered",
    "parse_yaml",
    "plain",
    "to_yaml_data",
    "write_text_atomic",
]

SKILL_KEY_ORDER: tuple[str, ...] = (
    "id",
    "name",
    "description",
    "version",
    "problem",
    "role",
    "scenarios",
    "intents",
    "tools",
    "policy",
    "required_inputs",
    "output_contract",
    "allowed_state_changes",
    "engine",
    "tests",
)
"""Where top-level keys go (spec 000 section 3.1's order, then additions)."""


def _yaml() -> YAML:
    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.width = 4096  # never fold an author's long sentence onto two lines
    yaml.indent(mapping=2, sequence=4, offset=2)
    return yaml


def parse_yaml(text: str, file: str) -> CommentedMap:
    """The round-trip tree of ``text``; an empty text is an empty mapping.

    Raises :class:`UsageError` when the text is not YAML or not a mapping (the loader's
    report says more; this is only for reading a file to edit it)."""
    try:
        data = _yaml().load(text) if text.strip() else CommentedMap()
    except YAMLError as exc:
        raise UsageError(f"{file} is not YAML the editor can read: {exc}") from None
    if not isinstance(data, CommentedMap):
        raise UsageError(f"{file} does not hold a mapping of fields")
    return data


def dump_yaml(data: CommentedMap) -> str:
    """``data`` as YAML text, comments and order kept."""
    out = io.StringIO()
    _yaml().dump(data, out)
    return out.getvalue()


def to_yaml_data(value: Any) -> Any:
    """Plain dicts and lists as round-trip nodes (so they dump in block style)."""
    if isinstance(value, dict) and not isinstance(value, CommentedMap):
        node = CommentedMap()
        for key, item in value.items():
            node[key] = to_yaml_data(item)
        return node
    if isinstance(value, list | tuple) and not isinstance(value, CommentedSeq):
        return CommentedSeq(to_yaml_data(item) for item in value)
    return value


def plain(value: Any) -> Any:
    """Round-trip nodes as plain dicts, lists and scalars (for comparing and JSON)."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, str):
        return str(value)
    return value


def insert_ordered(
    mapping: CommentedMap, key: str, value: Any, order: Sequence[str] = SKILL_KEY_ORDER
) -> None:
    """Set ``mapping[key]``; a new key goes before the first existing key that ``order``
    puts after it (an existing key keeps its place and its comments)."""
    if key in mapping:
        mapping[key] = value
        return
    if key in order:
        rank = order.index(key)
        for position, existing in enumerate(mapping):
            if existing in order and order.index(existing) > rank:
                mapping.insert(position, key, value)
                return
    mapping[key] = value


def diff_text(before: str, after: str, name: str) -> str:
    """A unified diff of a file's text, as ``git diff`` shows it; empty when equal."""
    lines = difflib.unified_diff(
        before.splitlines(keepends=True),
        after.splitlines(keepends=True),
        fromfile=f"a/{name}",
        tofile=f"b/{name}",
    )
    return "".join(lines)


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same folder and a
    rename, so a reader never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
