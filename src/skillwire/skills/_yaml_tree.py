"""ruamel's round-trip tree, made strict and turned into plain data with positions.

:class:`SkillConstructor` refuses custom tags and collects every duplicate key while ruamel
builds its tree; :class:`YamlConverter` turns that tree into plain Python data, counting
values (alias bombs) and depth as it goes; :class:`YamlPositions` answers "where is this
path" by walking the kept tree and reading the ``.lc`` line/column ruamel recorded for each
key and item (0-based there, 1-based here).
"""

from __future__ import annotations

import datetime
import json
import math
from typing import Any, NoReturn

from ruamel.yaml.comments import TaggedScalar
from ruamel.yaml.constructor import RoundTripConstructor
from ruamel.yaml.scalarbool import ScalarBoolean

from skillwire.core.errors import ControlFlowSignal, SkillError
from skillwire.core.issues import SkillIssue
from skillwire.core.location import FieldPath
from skillwire.skills._source_issues import issue, too_deep_issue

__all__ = [
    "RejectedNodeError",
    "SkillConstructor",
    "YamlConverter",
    "YamlPositions",
    "duplicate_issues",
    "key_text",
]

Position = tuple[int, int]


class RejectedNodeError(ControlFlowSignal):
    """Raised from inside ruamel's constructor for a node skillwire refuses."""

    def __init__(self, message: str, hint: str, mark: Any) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.mark = mark


class SkillConstructor(RoundTripConstructor):
    """The round-trip constructor, made strict: custom and non-plain tags are refused, and
    every duplicate key is collected (ruamel would stop at the first)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.duplicates: list[tuple[Any, Any, Any]] = []
        """(mapping, key, mark of the repeated key) for each duplicate."""

    def check_mapping_key(
        self, node: Any, key_node: Any, mapping: Any, key: Any, value: Any
    ) -> bool:
        """Record a repeated key instead of raising at the first; keep the first value."""
        if key in mapping:
            self.duplicates.append((mapping, key, key_node.start_mark))
            return False
        return True

    def reject_tag(self, node: Any) -> NoReturn:
        """Constructor for every tag that is not a plain YAML type."""
        tag = str(node.tag).replace("tag:yaml.org,2002:", "!!")
        raise RejectedNodeError(
            f"unsupported tag '{tag}'",
            "skill files hold plain values only: remove the tag, or quote the value if "
            "'!' is literal text",
            node.start_mark,
        )


# add_constructor copies the table into the subclass: ruamel's own loaders are untouched.
SkillConstructor.add_constructor(None, SkillConstructor.reject_tag)
for _tag in ("binary", "set", "pairs"):
    SkillConstructor.add_constructor(f"tag:yaml.org,2002:{_tag}", SkillConstructor.reject_tag)


def key_text(key: Any) -> str | None:
    """A YAML key as a string, the way ``json.dumps`` writes it; None for list/map keys."""
    if isinstance(key, str):
        return str(key)
    if isinstance(key, TaggedScalar):  # an explicit standard tag: `!!str 1: x`
        return key_text(key.value)
    if isinstance(key, bool | ScalarBoolean):
        return "true" if key else "false"
    if isinstance(key, int):
        return str(int(key))
    if isinstance(key, float):
        return json.dumps(float(key))
    if key is None:
        return "null"
    if isinstance(key, datetime.date):
        return key.isoformat()
    return None


def duplicate_issues(
    root: Any, found: list[tuple[Any, Any, Any]], file: str, max_depth: int
) -> list[SkillIssue]:
    """One issue per duplicate key the constructor collected, with the mapping's path."""
    issues = []
    for mapping, key, mark in found:
        parent = _path_to(root, mapping, max_depth) or ()
        text = key_text(key) or str(key)
        first = _lc_data(mapping).get(key)
        hint = "a key may appear only once in a mapping"
        if first is not None:
            hint += f"; the first '{text}' is at line {first[0] + 1}"
        at = (mark.line + 1, mark.column + 1)
        issues.append(
            issue(file, at, "duplicate-key", f"duplicate key '{text}'", hint, path=(*parent, text))
        )
    return issues


def _path_to(root: Any, target: Any, max_depth: int) -> FieldPath | None:
    """The path of the container ``target`` inside ``root`` (error path only)."""
    stack: list[tuple[Any, FieldPath]] = [(root, ())]
    seen: set[int] = set()
    while stack:
        node, path = stack.pop()
        if node is target:
            return path
        if id(node) in seen or len(path) > max_depth:
            continue
        seen.add(id(node))
        if isinstance(node, dict):
            stack.extend((v, (*path, key_text(k) or "?")) for k, v in node.items())
        elif isinstance(node, list):
            stack.extend((v, (*path, i)) for i, v in enumerate(node))
    return None


def _lc_data(node: Any) -> dict[Any, list[int]]:
    data = getattr(getattr(node, "lc", None), "data", None)
    return data if isinstance(data, dict) else {}


def _start(node: Any) -> Position:
    lc = getattr(node, "lc", None)
    if lc is None or lc.line is None:
        return (1, 1)
    return (lc.line + 1, lc.col + 1)


_ABSENT = object()


def _original_key(mapping: Any, key: str) -> Any:
    if key in mapping:
        return key
    for original in mapping:
        if not isinstance(original, str) and key_text(original) == key:
            return original
    return _ABSENT


def _entry_position(mapping: Any, key: Any, merges: int = 0) -> tuple[Position, Position]:
    """Key and value positions of an entry; a merged (``<<``) key is found in its source."""
    entry = _lc_data(mapping).get(key)
    if entry is not None:
        key_at = (entry[0] + 1, entry[1] + 1)
        value_at = (entry[2] + 1, entry[3] + 1)
        if mapping[key] is None and value_at[0] != key_at[0]:
            value_at = key_at  # "key:" with nothing after it
        return key_at, value_at
    if merges < 100:
        for merged in getattr(mapping, "_yaml_merge", ()):
            if isinstance(merged, dict) and key in merged:
                return _entry_position(merged, key, merges + 1)
    return _start(mapping), _start(mapping)


class YamlPositions:
    """Positions read from ruamel's tree, walked along a path when asked (nothing cached)."""

    def __init__(self, root: Any) -> None:
        self._root = root

    def key(self, path: FieldPath) -> Position | None:
        """Where the entry's key (or the item) at ``path`` is; None when the path is absent."""
        found = self._find(path)
        return None if found is None else found[0]

    def value(self, path: FieldPath) -> Position | None:
        """Where the value at ``path`` starts; None when the path is absent."""
        found = self._find(path)
        return None if found is None else found[1]

    def nearest(self, path: FieldPath) -> Position:
        """The key position of ``path`` or of its nearest existing ancestor."""
        for end in range(len(path), -1, -1):
            where = self.key(path[:end])
            if where is not None:
                return where
        return (0, 0)

    def _find(self, path: FieldPath) -> tuple[Position, Position] | None:
        node = self._root
        where = (_start(node), _start(node))
        for part in path:
            if isinstance(node, dict) and isinstance(part, str):
                original = _original_key(node, part)
                if original is _ABSENT:
                    return None
                node, where = node[original], _entry_position(node, original)
            elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
                item = _lc_data(node).get(part)
                spot = (item[0] + 1, item[1] + 1) if item is not None else _start(node)
                node, where = node[part], (spot, spot)
            else:
                return None
        return where


class YamlConverter:
    """ruamel's round-trip tree -> plain data, counting values and depth as it goes."""

    def __init__(
        self, file: str, positions: YamlPositions, *, max_depth: int, max_nodes: int
    ) -> None:
        self._file = file
        self._positions = positions
        self._max_depth = max_depth
        self._max_nodes = max_nodes
        self._count = 0
        self._open: set[int] = set()
        self._issues: list[SkillIssue] = []

    def run(self, root: Any) -> Any:
        """The plain data; raises :class:`SkillError` with every problem found."""
        data = self._convert(root, (), 0)
        if self._issues:
            raise SkillError(self._issues)
        return data

    def _convert(self, node: Any, path: FieldPath, depth: int) -> Any:
        self._count += 1
        if self._count > self._max_nodes:
            self._fatal(
                "too-large",
                path,
                f"the document expands to more than {self._max_nodes:,} values",
                "aliases (*name) repeated inside each other multiply",
            )
        if isinstance(node, dict | list):
            if depth >= self._max_depth:
                at = self._positions.nearest(path)
                raise SkillError([*self._issues, too_deep_issue(self._file, at, self._max_depth)])
            if id(node) in self._open:
                self._fatal(
                    "recursive-alias",
                    path,
                    "an alias refers to a node that contains it",
                    "an anchored node cannot include its own alias",
                )
            self._open.add(id(node))
            if isinstance(node, dict):
                result: Any = self._mapping(node, path, depth + 1)
            else:
                result = [self._convert(v, (*path, i), depth + 1) for i, v in enumerate(node)]
            self._open.discard(id(node))
            return result
        if isinstance(node, str):
            return str(node)
        if isinstance(node, TaggedScalar):  # `!!str 12`: ruamel keeps the tag, we the text
            return str(node.value)
        if isinstance(node, bool | ScalarBoolean):
            return bool(node)
        if isinstance(node, int):
            return int(node)
        if isinstance(node, float):
            if math.isfinite(node):
                return float(node)
            at = self._positions.value(path) or self._positions.nearest(path)
            self._issues.append(
                issue(
                    self._file,
                    at,
                    "invalid-number",
                    "NaN and infinity are not allowed",
                    "use a number, or quote the value to keep it as text",
                    path=path,
                )
            )
            return None
        if node is None:
            return None
        if isinstance(node, datetime.date | datetime.time):
            return node.isoformat()
        self._fatal("yaml-tag", path, f"unsupported value type '{type(node).__name__}'", "")

    def _mapping(self, node: Any, path: FieldPath, depth: int) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for original, value in node.items():
            key = key_text(original)
            if key is not None and key not in result:
                result[key] = self._convert(value, (*path, key), depth)
                continue
            at = _entry_position(node, original)[0]
            if key is None:
                message, hint = "a key must be a plain value, not a list or a mapping", ""
            else:
                message = f"duplicate key '{key}'"
                hint = f"'{original}' and an earlier key both read as '{key}'"
            code = "key-type" if key is None else "duplicate-key"
            where = path if key is None else (*path, key)
            self._issues.append(issue(self._file, at, code, message, hint, path=where))
        return result

    def _fatal(self, code: str, path: FieldPath, message: str, hint: str) -> NoReturn:
        at = self._positions.nearest(path)
        raise SkillError([*self._issues, issue(self._file, at, code, message, hint, path=path)])
