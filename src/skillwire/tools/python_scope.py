"""Where the callable of a ``python`` executor may come from.

A skill names its callable as ``module:attr`` (``refund_tools:process_refund``). That
name resolves only

- to a module file in the skill's own folder (``refund_tools.py``, or
  ``pkg/mod.py`` for ``pkg.mod``), whose real path, symlinks resolved, stays inside the
  folder; or
- to a module under a prefix the operator lists (``[tools] python_modules`` of
  ``skillwire.toml``: ``mycompany.tools`` allows ``mycompany.tools`` and
  ``mycompany.tools.*``), imported from the import path.

Anything else is refused: ``subprocess:getoutput`` would run the very commands the
shell policy refuses. The attribute path may walk through classes and objects of that
module, never through a module (``mymod:os.system``) nor a dunder attribute, and the
object it reaches must be defined there (a function ``mymod`` imported from
``subprocess`` is refused too).

:func:`callable_problem` checks a name without running anything (``skillwire check``
reads the module's source); :func:`resolve_callable` imports and checks again at run
time, so a skill that was never checked still fails closed.
"""

from __future__ import annotations

import ast
import hashlib
import importlib
import importlib.util
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from skillwire.core.errors import CallableRefusedError

__all__ = [
    "CallableRefusedError",
    "callable_problem",
    "module_listed",
    "module_stamp",
    "resolve_callable",
]

_NAME = r"[A-Za-z_]\w*"
_DOTTED = rf"{_NAME}(?:\.{_NAME})*"
_PATH = re.compile(rf"({_DOTTED}):({_DOTTED})")

# Modules loaded from skill folders, by (file, module name, size, modification time): a
# module's code runs once for each content of its file.
_MODULES: dict[tuple[str, str, int, int], ModuleType] = {}


def module_listed(name: str, modules: Sequence[str]) -> bool:
    """Whether module ``name`` is one of ``modules`` or inside one of them."""
    return any(name == prefix or name.startswith(prefix + ".") for prefix in modules)


def module_stamp(path: str, root: Path | None) -> tuple[int, int] | None:
    """The size and modification time of the file in the skill's folder that ``path``'s
    module is loaded from (None: no such file, the module is not the skill's). One
    ``stat``: what a cache of resolved callables compares to see that the module
    changed (``serve --watch``), without resolving it again."""
    if root is None:
        return None
    file = _STAMPED.get((path, root), _UNKNOWN)
    if file is _UNKNOWN:
        match = _PATH.fullmatch(path)
        file = None
        if match is not None:
            file = str(root.joinpath(*match.group(1).split(".")).with_suffix(".py"))
        _STAMPED[(path, root)] = file  # the name of the file, never its content
    if file is None:
        return None
    try:
        found = os.stat(file)
    except OSError:
        return None
    return found.st_size, found.st_mtime_ns


_UNKNOWN = ""
_STAMPED: dict[tuple[str, Path], str | None] = {}
"""The file :func:`module_stamp` stats for a callable's path in a skill folder (None:
the path names no file), made once: a tool call then costs one ``stat``, not the
building of a path."""


def _split(path: str) -> tuple[str, list[str]]:
    """``module:attr.attr`` as the module name and the attribute names; refuses
    anything else (a trailing newline, an empty part, a dunder attribute)."""
    match = _PATH.fullmatch(path)
    if match is None:
        raise CallableRefusedError("expected module:function (dotted names, nothing else)")
    attrs = match.group(2).split(".")
    for attr in attrs:
        if attr.startswith("__"):
            raise CallableRefusedError(f"'{attr}' is a dunder attribute")
    return match.group(1), attrs


def _skill_file(name: str, root: Path | None) -> Path | None:
    """The skill's own file for module ``name``, or None when the folder has none.
    Raises :class:`CallableRefusedError` when the file exists but its real path (a symlink
    followed) lies outside the folder."""
    if root is None:
        return None
    candidate = root.joinpath(*name.split(".")).with_suffix(".py")
    try:
        if not candidate.is_file():
            return None
        real, folder = candidate.resolve(strict=True), root.resolve(strict=True)
    except (OSError, RuntimeError):  # a loop of symlinks, a path that cannot be read
        return None
    if not real.is_relative_to(folder):
        raise CallableRefusedError(f"{candidate.name} lies outside the skill's folder ({real})")
    return real


def _refuse_unlisted(name: str) -> CallableRefusedError:
    return CallableRefusedError(
        f"module '{name}' is not in the skill's folder and not listed in [tools] python_modules"
    )


def _load_file(name: str, file: Path) -> ModuleType:
    """The module of a skill's file, loaded under a name of its own: once for each
    content of the file (its size and modification time), so a skill reloaded after its
    module changed (``serve --watch``) runs the new code, and an unchanged one is not
    run again."""
    stat = file.stat()
    key = (str(file), name, stat.st_size, stat.st_mtime_ns)
    cached = _MODULES.get(key)
    if cached is not None:
        return cached
    unique = "skillwire_skill_" + hashlib.sha1(str(file).encode()).hexdigest()[:12]
    spec = importlib.util.spec_from_file_location(f"{unique}.{name}", file)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {file}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(spec.name, None)
        raise
    for stale in [k for k in _MODULES if k[:2] == key[:2]]:  # an older content of it
        del _MODULES[stale]
    _MODULES[key] = module
    return module


def _home(obj: Any) -> str | None:
    """The name of the module that defines ``obj`` (its class's, for an instance)."""
    home = getattr(obj, "__module__", None)
    return home if isinstance(home, str) else None


def resolve_callable(path: str, root: Path | None, modules: Sequence[str] = ()) -> Any:
    """The object ``module:attr`` names: in the skill's folder ``root``, else in a
    module under one of ``modules``. Raises :class:`CallableRefusedError` when it may not
    come from there; ``ImportError``, ``AttributeError`` or whatever the module raises
    when it cannot be loaded; ``TypeError`` when the object is not callable."""
    name, attrs = _split(path)
    file = _skill_file(name, root)
    if file is not None:
        module = _load_file(name, file)
    elif module_listed(name, modules):
        module = importlib.import_module(name)
    else:
        raise _refuse_unlisted(name)
    own = module.__name__
    obj: Any = module
    for depth, attr in enumerate(attrs, 1):
        obj = getattr(obj, attr)
        walked = f"{name}:{'.'.join(attrs[:depth])}"
        if isinstance(obj, ModuleType):
            raise CallableRefusedError(f"'{walked}' is a module: name the module itself")
        home = _home(obj)
        if home != own and (file is not None or home is None or not module_listed(home, modules)):
            where = f"'{home}'" if home else "no module"
            raise CallableRefusedError(f"'{walked}' is defined in {where}, not in '{name}'")
    if not callable(obj):
        raise TypeError(f"{path} is not callable")
    return obj


def _top_level(tree: ast.Module) -> tuple[set[str], set[str]]:
    """The names a module's top level defines and the names it imports (inside
    ``if`` and ``try`` blocks too)."""
    defined: set[str] = set()
    imported: set[str] = set()
    pending: list[ast.stmt] = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            defined.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            for alias in node.names:
                imported.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                defined.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
        elif isinstance(node, ast.If | ast.Try | ast.TryStar | ast.With | ast.AsyncWith):
            pending.extend(node.body)
            pending.extend(getattr(node, "orelse", []))
            pending.extend(getattr(node, "finalbody", []))
            for handler in getattr(node, "handlers", []):
                pending.extend(handler.body)
    return defined, imported


def callable_problem(path: str, root: Path | None, modules: Sequence[str] = ()) -> str | None:
    """Why ``path`` may not be a python tool's callable, or None; runs no code.

    A module of the skill's folder is read, not imported: its first attribute must be
    defined at its top level, not imported. A listed module is not looked into (it is
    the operator's); :func:`resolve_callable` checks both again when the tool runs.
    """
    try:
        name, attrs = _split(path)
        file = _skill_file(name, root)
    except CallableRefusedError as exc:
        return str(exc)
    if file is None:
        return None if module_listed(name, modules) else str(_refuse_unlisted(name))
    shown = file.name
    try:
        tree = ast.parse(file.read_bytes(), filename=shown)
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        return f"{shown} does not parse: {exc}"
    defined, imported = _top_level(tree)
    if attrs[0] in defined:
        return None
    if attrs[0] in imported:
        return f"'{attrs[0]}' is imported by {shown}, not defined there"
    return f"{shown} defines no '{attrs[0]}'"
