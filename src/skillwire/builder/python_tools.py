"""Tools from typed Python functions: signatures, docstrings and ``Annotated`` metadata
become each tool's JSON Schema (through pydantic), and the functions its ``python``
executors.

The file is imported to read its types, so it runs: pass only a file you wrote (the
skill's own tool module). A ``python`` tool may only call a module of its skill's folder
(docs/skills.md#tools), so a file from elsewhere is copied into the folder first.
"""

from __future__ import annotations

import importlib.util
import inspect
import keyword
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ConfigDict, Field, ValidationError, create_model
from pydantic.errors import PydanticUserError

from skillwire.builder.tool_effects import ToolHints
from skillwire.core.errors import UsageError

__all__ = ["ImportedTools", "schema_of", "strip_titles", "tools_from_python"]

_RESERVED = frozenset({"idempotency_key"})
"""Parameters the executor fills itself, never the model."""


@dataclass
class ImportedTools:
    """Tool entries read from a source, and what could not be read."""

    tools: list[dict[str, Any]] = field(default_factory=list)
    """``tools[]`` entries, ready for the draft."""
    skipped: list[str] = field(default_factory=list)
    """One sentence per thing left out, and why."""
    files: dict[Path, str] = field(default_factory=dict)
    """Files the tools need in the skill's folder (a python module), by path, with their
    text: written by :meth:`write_files` once the skill is written."""
    hints: dict[str, ToolHints] = field(default_factory=dict)
    """What the source says each tool does (an MCP server's annotations), by tool name:
    the policy proposed for it weighs them (:func:`~skillwire.builder.propose_policy`)."""

    def write_files(self) -> list[Path]:
        """Write :attr:`files` (a file there already is never overwritten with other
        text); the paths written."""
        written = []
        for path, text in self.files.items():
            if path.exists():
                if path.read_text(encoding="utf-8") != text:
                    raise UsageError(f"{path} exists and differs: not overwritten")
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            written.append(path)
        return written


def _docstring_parts(fn: Callable[..., Any]) -> tuple[str, dict[str, str]]:
    """The first paragraph of the docstring, and each argument's description from a
    Google-style ``Args:`` section or Sphinx ``:param x:`` lines."""
    doc = inspect.getdoc(fn) or ""
    summary = doc.split("\n\n", 1)[0].replace("\n", " ").strip()
    described: dict[str, str] = {}
    in_args = False
    for raw in doc.splitlines():
        line = raw.strip()
        if line.startswith(":param "):
            name, _, text = line.removeprefix(":param ").partition(":")
            described[name.split()[-1]] = text.strip()
        elif line in ("Args:", "Arguments:", "Parameters:"):
            in_args = True
        elif in_args and line and not raw.startswith((" ", "\t")):
            in_args = False
        elif in_args and ":" in line:
            name, _, text = line.partition(":")
            described[name.split(" ")[0].strip()] = text.strip()
    return summary, described


def strip_titles(node: Any) -> Any:
    """The schema without pydantic's generated ``title`` keys (property names say it)."""
    if isinstance(node, dict):
        return {
            k: (
                strip_titles(v) if k != "properties" else {p: strip_titles(s) for p, s in v.items()}
            )
            for k, v in node.items()
            if k != "title"
        }
    if isinstance(node, list):
        return [strip_titles(v) for v in node]
    return node


def schema_of(fn: Callable[..., Any]) -> dict[str, Any]:
    """The JSON Schema of ``fn``'s arguments (root ``type: object``).

    Raises :class:`ValueError` naming the parameter when one has no type hint, is
    ``*args``/``**kwargs``, or has a type pydantic cannot describe."""
    signature = inspect.signature(fn)
    fields: dict[str, Any] = {}
    summary, described = _docstring_parts(fn)
    del summary
    for name, param in signature.parameters.items():
        if name in _RESERVED or name in ("self", "cls"):
            continue
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise ValueError(
                f"parameter {name!r} is *args or **kwargs (the model passes named arguments)"
            )
        if param.annotation is inspect.Parameter.empty:
            raise ValueError(f"parameter {name!r} has no type hint")
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[name] = (param.annotation, Field(default=default))
    try:
        model = create_model(
            f"{fn.__name__}_arguments", __config__=ConfigDict(extra="forbid"), **fields
        )
        schema: dict[str, Any] = model.model_json_schema()
    except (PydanticUserError, TypeError, ValidationError) as exc:
        raise ValueError(f"its types cannot be described as JSON Schema: {exc}") from None
    schema = strip_titles(schema)
    props = schema.get("properties") or {}
    for name, text in described.items():
        if name in props and text and "description" not in props[name]:
            props[name]["description"] = text
    schema.setdefault("properties", {})
    return schema


def _module_name(file: Path) -> str:
    stem = "".join(c if c.isalnum() or c == "_" else "_" for c in file.stem)
    if not stem or stem[0].isdigit() or keyword.iskeyword(stem):
        stem = f"tools_{stem}"
    return stem


def _functions(module: Any) -> Iterator[tuple[str, Callable[..., Any]]]:
    for name, value in vars(module).items():
        if name.startswith("_") or not inspect.isfunction(value):
            continue
        if value.__module__ != module.__name__:  # imported into the file, not defined in it
            continue
        yield name, value


def _import(file: Path, name: str) -> Any:
    unique = f"_skillwire_builder_import_{name}"
    spec = importlib.util.spec_from_file_location(unique, file)
    if spec is None or spec.loader is None:
        raise UsageError(f"{file} is not a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[unique] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # the author's file: any failure is theirs to see, briefly
        raise UsageError(f"importing {file} failed: {type(exc).__name__}: {exc}") from None
    finally:
        sys.modules.pop(unique, None)
    return module


def tools_from_python(file: Path, folder: Path) -> ImportedTools:
    """One ``python`` tool per public function defined in ``file``. Unless the file is
    in ``folder`` already, its copy there (as a valid module name) is in the result's
    ``files``, to write with the skill."""
    if not file.is_file():
        raise UsageError(f"no Python file {file}")
    name = _module_name(file)
    target = folder / f"{name}.py"
    result = ImportedTools()
    source = file.read_text(encoding="utf-8")
    if target.resolve() != file.resolve():
        if target.exists() and target.read_text(encoding="utf-8") != source:
            raise UsageError(f"{target} exists and differs from {file}: not overwritten")
        result.files[target] = source
    module = _import(file, name)
    for fn_name, fn in _functions(module):
        try:
            schema = schema_of(fn)
        except ValueError as exc:
            result.skipped.append(f"{fn_name}: {exc}")
            continue
        summary, _ = _docstring_parts(fn)
        entry: dict[str, Any] = {"name": fn_name}
        entry["description"] = summary or f"Calls {name}.{fn_name}"
        entry["inputSchema"] = schema
        entry["executor"] = {"type": "python", "callable": f"{name}:{fn_name}"}
        result.tools.append(entry)
    if not result.tools and not result.skipped:
        result.skipped.append(f"{file}: no public function defined in it")
    return result
