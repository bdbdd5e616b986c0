"""Where each field of a JSON text stands: a small, lazy position scanner.

``json.loads`` is fast but forgets positions. :class:`JsonPositions` walks the same text
once, the first time a position is asked for, and records for every field path the offset
of its key (or, for a sequence item, of the item) and of its value. The loader also runs it
on the error path, to find every duplicate key, ``NaN`` or too-deep container.

The scanner expects text that ``json.loads`` accepted, or rejected only for duplicate keys,
non-finite constants or depth. On anything else it stops and keeps what it has seen: it
never raises and never recurses.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_right
from dataclasses import dataclass, field

from skillwire.core.location import FieldPath

__all__ = ["JsonPositions", "JsonScan", "LineIndex", "scan_json"]

_WS = re.compile(r"[ \t\r\n]*")
# The unrolled form of "(?:[^"\\]|\\.)*": the same strings, several times faster to match.
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
# A key, its colon and the whitespace up to the value, in one match.
_KEY = re.compile(r'("[^"\\]*(?:\\.[^"\\]*)*")[ \t\r\n]*:[ \t\r\n]*', re.DOTALL)
# Numbers, true/false/null and the non-JSON constants NaN, Infinity, -Infinity.
_SCALAR = re.compile(r"[^\s,:\[\]{}\"]+")
_BAD_CONSTANTS = frozenset({"NaN", "Infinity", "-Infinity"})


def _skip(text: str, i: int) -> int:
    """The offset of the first non-whitespace character at or after ``i``."""
    match = _WS.match(text, i)
    return i if match is None else match.end()


class LineIndex:
    """Turns character offsets into 1-based ``(line, column)``; lines end at ``\\n``."""

    def __init__(self, text: str) -> None:
        self._starts = [0]
        self._starts.extend(m.end() for m in re.finditer("\n", text))

    def position(self, offset: int) -> tuple[int, int]:
        """The 1-based line and column of ``offset``."""
        line = bisect_right(self._starts, offset)
        return line, offset - self._starts[line - 1] + 1


@dataclass
class JsonScan:
    """What one pass over a JSON text found. Offsets are character offsets into the text."""

    keys: dict[FieldPath, int] = field(default_factory=dict)
    """Per path: the key of a mapping entry, the start of a sequence item, or the root."""
    values: dict[FieldPath, int] = field(default_factory=dict)
    """Per path: the start of the value."""
    duplicates: list[tuple[FieldPath, int]] = field(default_factory=list)
    """Every repeated key after its first occurrence: its path and key offset."""
    constants: list[tuple[FieldPath, int, str]] = field(default_factory=list)
    """Every ``NaN``, ``Infinity`` or ``-Infinity``: path, offset and spelling."""
    too_deep: tuple[FieldPath, int] | None = None
    """The first container opened deeper than the depth limit; the scan stops there."""


@dataclass(slots=True)
class _Frame:
    path: FieldPath
    is_object: bool
    index: int = 0
    keys: set[str] = field(default_factory=set)


def scan_json(text: str, max_depth: int) -> JsonScan:
    """Walk ``text`` once and record where every key, item and value starts."""
    scan = JsonScan()
    keys, values = scan.keys, scan.values
    stack: list[_Frame] = []
    end = len(text)
    i = _skip(text, 0)
    path: FieldPath = ()
    keys[()] = values[()] = i
    expect_value = True
    while i < end:
        if expect_value:
            char = text[i]
            if char in "{[":
                if len(stack) >= max_depth:
                    scan.too_deep = (path, i)
                    return scan
                frame = _Frame(path, char == "{")
                stack.append(frame)
                i = _skip(text, i + 1)
                if text.startswith("}" if frame.is_object else "]", i):
                    stack.pop()
                    i += 1
                    expect_value = False
                elif frame.is_object:
                    step = _read_key(text, i, frame, scan)
                    if step is None:
                        return scan
                    i, path = step
                else:
                    path = (*frame.path, 0)
                    keys[path] = values[path] = i
                continue
            match = (_STRING if char == '"' else _SCALAR).match(text, i)
            if match is None:
                return scan
            if match.group() in _BAD_CONSTANTS:
                scan.constants.append((path, i, match.group()))
            i = match.end()
            expect_value = False
            continue
        i = _skip(text, i)
        if not stack or i >= end:
            return scan
        frame = stack[-1]
        char = text[i]
        if char == ",":
            i = _skip(text, i + 1)
            if frame.is_object:
                step = _read_key(text, i, frame, scan)
                if step is None:
                    return scan
                i, path = step
            else:
                frame.index += 1
                path = (*frame.path, frame.index)
                keys[path] = values[path] = i
            expect_value = True
        elif char == ("}" if frame.is_object else "]"):
            stack.pop()
            i += 1
        else:
            return scan
    return scan


def _read_key(text: str, i: int, frame: _Frame, scan: JsonScan) -> tuple[int, FieldPath] | None:
    """Read ``"key" :`` at ``i``; return the offset of the value and the entry's path."""
    match = _KEY.match(text, i)
    if match is None:
        return None
    raw = match.group(1)
    if "\\" in raw:
        try:
            key = json.loads(raw)
        except ValueError:
            return None
    else:
        key = raw[1:-1]
    j = match.end()
    path = (*frame.path, key)
    if key in frame.keys:
        scan.duplicates.append((path, i))
    else:
        frame.keys.add(key)
        scan.keys[path] = i
        scan.values[path] = j
    return j, path


class JsonPositions:
    """The positions of a JSON document's fields, computed on first use and then kept."""

    def __init__(self, text: str, max_depth: int) -> None:
        self._text = text
        self._max_depth = max_depth
        self._scan: JsonScan | None = None
        self._lines: LineIndex | None = None

    def scan(self) -> JsonScan:
        """The scan of the whole text (run once)."""
        if self._scan is None:
            self._scan = scan_json(self._text, self._max_depth)
        return self._scan

    def position(self, offset: int) -> tuple[int, int]:
        """The 1-based line and column of a character offset."""
        if self._lines is None:
            self._lines = LineIndex(self._text)
        return self._lines.position(offset)

    def key(self, path: FieldPath) -> tuple[int, int] | None:
        """Where the entry's key (or the item) at ``path`` is; None when the path is absent."""
        offset = self.scan().keys.get(path)
        return None if offset is None else self.position(offset)

    def value(self, path: FieldPath) -> tuple[int, int] | None:
        """Where the value at ``path`` starts; None when the path is absent."""
        offset = self.scan().values.get(path)
        return None if offset is None else self.position(offset)
