"""Skill documents: YAML and JSON text read into plain data that remembers its positions.

A :class:`Document` holds plain Python data (dict, list, str, int, float, bool, None) and
can say where any field path was written (:meth:`Document.locate`). Every problem a loader
finds is raised as a :class:`~skillwire.core.issues.SkillError` with file, line and column;
no parser exception, ``OSError`` or ``UnicodeDecodeError`` escapes. Issue codes::

    yaml-syntax / json-syntax     the text does not parse (with a hint for common slips)
    yaml-multiple-documents       more than one YAML document in one file
    yaml-tag                      a custom tag (``!foo``) or a non-plain type (``!!set``)
    duplicate-key                 a key repeated in one mapping (each one reported)
    key-type                      a YAML key that is a list or a mapping
    invalid-number                NaN or infinity (JSON has neither; YAML's are refused too)
    too-deep                      containers nested more than MAX_DEPTH levels
    too-large                     more than MAX_NODES values once aliases are expanded
    recursive-alias               a YAML alias inside the node it names
    lone-surrogate                a ``\\ud800`` escape with no partner: not a character
    file-type / file-read / encoding    read_document could not get text from the file
    file-outside / file-special / file-too-large / package-too-large
                                  refused before reading (see ``_reading``)

Decisions: YAML keys that are scalars but not strings become strings the way
``json.dumps`` writes them (``1`` -> ``"1"``, ``true`` -> ``"true"``, ``null`` ->
``"null"``); YAML timestamps and dates become ISO 8601 strings; empty text (or only
comments/whitespace) gives ``data=None`` in both formats, and the caller decides.
"""

from __future__ import annotations

import codecs
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, NoReturn, Protocol

from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError
from ruamel.yaml.reader import ReaderError

from skillwire.core.errors import ControlFlowSignal, SkillError
from skillwire.core.issues import SkillIssue
from skillwire.core.location import FieldPath, SourceLocation
from skillwire.skills._json_positions import JsonPositions, LineIndex, scan_json
from skillwire.skills._reading import (
    MAX_FILE_BYTES,
    MAX_PACKAGE_BYTES,
    SkillFolder,
    read_skill_bytes,
)
from skillwire.skills._source_issues import (
    issue,
    json_syntax_issue,
    long_number_issue,
    too_deep_issue,
    yaml_syntax_issue,
)
from skillwire.skills._yaml_tree import (
    RejectedNodeError,
    SkillConstructor,
    YamlConverter,
    YamlPositions,
    duplicate_issues,
)

__all__ = [
    "MAX_DEPTH",
    "MAX_FILE_BYTES",
    "MAX_NODES",
    "MAX_PACKAGE_BYTES",
    "Document",
    "SkillFolder",
    "load_json",
    "load_yaml",
    "read_document",
    "read_skill_bytes",
]

MAX_DEPTH = 100
"""The deepest nesting of mappings and sequences a document may have."""
MAX_NODES = 1_000_000
"""The most values a YAML document may expand to (guards against alias bombs)."""

_YAML_SUFFIXES = frozenset({".yaml", ".yml"})


class _Positions(Protocol):
    """Where paths are: 1-based (line, column), or None for a path the text does not have."""

    def key(self, path: FieldPath) -> tuple[int, int] | None: ...
    def value(self, path: FieldPath) -> tuple[int, int] | None: ...


class _NoPositions:
    """For documents built in code: nothing has a position."""

    def key(self, path: FieldPath) -> tuple[int, int] | None:
        return None

    def value(self, path: FieldPath) -> tuple[int, int] | None:
        return None


@dataclass(frozen=True)
class Document:
    """A parsed skill file: plain data plus the way back to where each field was written."""

    file: str
    """The name shown in messages (usually the path as the user gave it)."""
    data: Any
    """Plain Python data: dict (str keys), list, str, int, float, bool or None."""
    format: Literal["yaml", "json"]
    """The syntax the text was written in."""
    _positions: _Positions = field(default_factory=_NoPositions, compare=False, repr=False)

    def locate(self, path: FieldPath = ()) -> SourceLocation:
        """Where ``path`` is: the key of a mapping entry, or a sequence item.

        When the path does not exist (a missing required field), the nearest existing
        ancestor: for a missing key, the key of the mapping that should hold it.
        """
        for end in range(len(path), -1, -1):
            where = self._positions.key(path[:end])
            if where is not None:
                return SourceLocation(self.file, *where)
        return SourceLocation(self.file)

    def locate_value(self, path: FieldPath = ()) -> SourceLocation:
        """Where the value at ``path`` starts (after the key); :meth:`locate` when absent."""
        where = self._positions.value(path)
        if where is not None:
            return SourceLocation(self.file, *where)
        return self.locate(path)


def read_document(
    path: Path,
    display: str | None = None,
    *,
    folder: SkillFolder | None = None,
) -> Document:
    """Read a ``.yaml``/``.yml`` or ``.json`` file; every failure is a :class:`SkillError`.

    The file must be a regular file of at most ``MAX_FILE_BYTES`` inside ``folder`` (the
    skill's folder; by default the folder holding ``path``). A package reads all its files
    through one folder, so that together they stay under ``MAX_PACKAGE_BYTES``."""
    name = display if display is not None else str(path)
    suffix = path.suffix.lower()
    if suffix not in _YAML_SUFFIXES and suffix != ".json":
        _fail(
            name,
            "file-type",
            f"unsupported file type '{suffix or path.name}'",
            "skill files are .yaml, .yml or .json",
            line=0,
        )
    if folder is None:
        folder = SkillFolder(path.parent, limit=None)
    raw = folder.read(path, name)
    text = _decode(raw, name)
    return load_yaml(text, name) if suffix in _YAML_SUFFIXES else load_json(text, name)


def _decode(raw: bytes, name: str) -> str:
    if raw.startswith(codecs.BOM_UTF8):
        raw = raw[len(codecs.BOM_UTF8) :]
    for bom, encoding in (
        (codecs.BOM_UTF32_LE, "UTF-32"),
        (codecs.BOM_UTF32_BE, "UTF-32"),
        (codecs.BOM_UTF16_LE, "UTF-16"),
        (codecs.BOM_UTF16_BE, "UTF-16"),
    ):
        if raw.startswith(bom):
            _fail(name, "encoding", f"file is {encoding} encoded", "save it as UTF-8")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line_start = raw.rfind(b"\n", 0, exc.start) + 1
        line = raw.count(b"\n", 0, exc.start) + 1
        column = len(raw[line_start : exc.start].decode("utf-8", "replace")) + 1
        _fail(
            name,
            "encoding",
            f"file is not valid UTF-8: byte 0x{raw[exc.start]:02x} at byte offset {exc.start}",
            "save the file as UTF-8",
            line=line,
            column=column,
        )


# ---------------------------------------------------------------- JSON


class _DuplicateKeyError(ControlFlowSignal):
    pass


class _NonFiniteConstantError(ControlFlowSignal):
    pass


def _object_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        raise _DuplicateKeyError
    return result


def _reject_constant(name: str) -> NoReturn:
    raise _NonFiniteConstantError(name)


_JSON = json.JSONDecoder(object_pairs_hook=_object_pairs, parse_constant=_reject_constant)


def load_json(text: str, file: str) -> Document:
    """Parse JSON text. Positions are computed lazily, the first time one is asked for."""
    if text.startswith("\ufeff"):
        text = text[1:]
    if not text or text.isspace():
        return Document(file, None, "json", JsonPositions(text, MAX_DEPTH))
    try:
        data = _JSON.decode(text)
    except json.JSONDecodeError as exc:
        raise SkillError([json_syntax_issue(exc, text, file)]) from None
    except (_DuplicateKeyError, _NonFiniteConstantError, RecursionError):
        raise SkillError(_json_scan_issues(text, file)) from None
    except ValueError:  # an integer longer than sys.get_int_max_str_digits()
        raise SkillError([long_number_issue(text, file, "json-syntax")]) from None
    if text.count("{") + text.count("[") > MAX_DEPTH and _too_deep(data):
        raise SkillError(_json_scan_issues(text, file))
    return _without_surrogates(Document(file, data, "json", JsonPositions(text, MAX_DEPTH)), text)


def _json_scan_issues(text: str, file: str) -> list[SkillIssue]:
    """Every duplicate key, NaN/Infinity and too-deep container, each with its position."""
    scan = scan_json(text, MAX_DEPTH)
    lines = LineIndex(text)
    issues: list[SkillIssue] = []
    for path, offset in scan.duplicates:
        issues.append(
            issue(
                file,
                lines.position(offset),
                "duplicate-key",
                f"duplicate key {json.dumps(path[-1])}",
                "a key may appear only once in an object",
                path=path,
            )
        )
    for path, offset, word in scan.constants:
        issues.append(
            issue(
                file,
                lines.position(offset),
                "invalid-number",
                f"{word} is not a valid JSON value",
                "use null, a number, or a string",
                path=path,
            )
        )
    if scan.too_deep is not None:
        issues.append(too_deep_issue(file, lines.position(scan.too_deep[1]), MAX_DEPTH))
    if not issues:  # the decoder's own depth guard tripped before ours
        issues.append(too_deep_issue(file, (0, 0), MAX_DEPTH))
    issues.sort(key=lambda found: (found.location.line, found.location.column))
    return issues


def _too_deep(data: Any) -> bool:
    """Whether a container sits deeper than MAX_DEPTH (the root container is level 1).

    Level by level, looking only at containers: parsed JSON holds exact dicts and lists."""
    level = [data] if type(data) is dict or type(data) is list else []
    for _ in range(MAX_DEPTH):
        below = []
        for node in level:
            for child in node.values() if type(node) is dict else node:
                if type(child) is dict or type(child) is list:
                    below.append(child)
        if not below:
            return False
        level = below
    return True


# ---------------------------------------------------------------- YAML


def load_yaml(text: str, file: str) -> Document:
    """Parse one YAML document (ruamel round-trip loader) into plain data with positions."""
    if text.startswith("\ufeff"):
        text = text[1:]
    yaml = YAML(typ="rt", pure=True)
    yaml.Constructor = SkillConstructor
    yaml.max_depth = MAX_DEPTH + 1  # ruamel counts the scalar inside the deepest container
    yaml.composer.warn_double_anchors = False  # re-defining an anchor is valid YAML
    try:
        root = yaml.load(text)
    except RejectedNodeError as exc:
        at = (exc.mark.line + 1, exc.mark.column + 1)
        raise SkillError([issue(file, at, "yaml-tag", exc.message, exc.hint)]) from None
    except (MarkedYAMLError, ReaderError) as exc:
        raise SkillError([yaml_syntax_issue(exc, text, file, max_depth=MAX_DEPTH)]) from None
    except RecursionError:
        raise SkillError([too_deep_issue(file, (0, 0), MAX_DEPTH)]) from None
    except ValueError as exc:
        if "integer string conversion" not in str(exc):
            _fail(file, "yaml-syntax", f"cannot read YAML: {exc}", "", line=0)
        raise SkillError([long_number_issue(text, file, "yaml-syntax")]) from None
    except Exception as exc:
        # ruamel is a large parser fed untrusted text: whatever else it raises (a huge
        # integer, an internal assertion) is the author's problem to see, not a traceback.
        _fail(file, "yaml-syntax", f"cannot read YAML: {exc}", "", line=0)
    if yaml.constructor.duplicates:
        found = yaml.constructor.duplicates
        raise SkillError(duplicate_issues(root, found, file, MAX_DEPTH))
    positions = YamlPositions(root)
    converter = YamlConverter(file, positions, max_depth=MAX_DEPTH, max_nodes=MAX_NODES)
    return _without_surrogates(Document(file, converter.run(root), "yaml", positions), text)


# ---------------------------------------------------------------- lone surrogates

_ESCAPED_SURROGATE = re.compile(r"\\(?:u|U0000)[dD][89a-fA-F]")
"""An escape that may stand for a surrogate: the only way one gets into parsed text (UTF-8
has none), JSON ``\\ud800`` or YAML ``\\ud800`` / ``\\U0000d800``."""
_SURROGATE = re.compile("[\ud800-\udfff]")


def _without_surrogates(doc: Document, text: str) -> Document:
    """``doc``, or a :class:`SkillError` for every key and text holding a lone surrogate.

    A pair of escapes (``\\ud83d\\ude00``) is one character and passes; half of one
    cannot be written as UTF-8 and would break every report, prompt and store it reached.
    """
    if _ESCAPED_SURROGATE.search(text) is None:
        return doc
    issues: list[SkillIssue] = []
    stack: list[tuple[FieldPath, Any]] = [((), doc.data)]
    while stack:
        path, node = stack.pop()
        if isinstance(node, dict):
            for key, value in node.items():
                if _SURROGATE.search(key):
                    issues.append(_surrogate_issue(doc, (*path, key), key, "key"))
                stack.append(((*path, key), value))
        elif isinstance(node, list):
            stack.extend(((*path, i), value) for i, value in enumerate(node))
        elif isinstance(node, str) and _SURROGATE.search(node):
            issues.append(_surrogate_issue(doc, path, node, "text"))
    if not issues:
        return doc
    issues.sort(key=lambda found: (found.location.line, found.location.column))
    raise SkillError(issues)


def _surrogate_issue(doc: Document, path: FieldPath, text: str, what: str) -> SkillIssue:
    match = _SURROGATE.search(text)
    code_point = ord(match.group()) if match else 0
    where = doc.locate(path) if what == "key" else doc.locate_value(path)
    return issue(
        doc.file,
        (where.line, where.column),
        "lone-surrogate",
        f"the {what} holds a lone surrogate (\\u{code_point:04x}): half of a character pair, "
        "not a character",
        "remove the escape, or write the whole pair (\\ud83d\\ude00 is one character)",
        path=path,
    )


def _fail(
    file: str, code: str, message: str, hint: str, *, line: int = 1, column: int = 1
) -> NoReturn:
    at = (line, column if line > 0 else 0)
    raise SkillError([issue(file, at, code, message, hint)])
