"""The shell and filesystem guardrails, enforced on the argv a ``shell_command`` call runs.

The gate renders the tool's ``argsTemplate`` with the call's arguments (as the executor
will) and checks every program the tool may run (``command`` and each
``commandFallbacks`` entry with its ``fixedArgs``) against the merged access policy:

- **allowedPrefixes**: the argv must start with an allowed prefix, token by token as
  written (``git log`` allows ``git log -n 5``, not ``git push``; ``git`` does not
  allow ``/tmp/git``). With no operator file none is allowed.
- **denyPrefixes**: the argv may not start with a denied prefix, the program also
  compared by its base name (``rm`` denies ``/bin/rm``).
- **denyOperators**: no element may contain a denied operator (``;``, ``&&`` ...):
  nothing reaches a shell, but the operator asked for none.
- **denyPatterns**: no element, and not the whole line, may match a denied pattern.
- **roots**: every path an element names (an absolute path, ``~/..``, a ``file://``
  URL, the value of ``--opt=/path`` or ``-o/path``, a part after ``=``, ``@``, ``:`` or
  ``,``) must lie, once symlinks and ``..`` are resolved, inside an allowed read or
  write root. The program runs in a fresh empty folder, so a relative path may not
  climb out of it with ``..``.

:func:`confirmation_rules` turns ``toolPolicies.<tool>.requireConfirmationFor`` and
``filesystem.requireConfirmationFor`` into approval rules on the ``action`` argument.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator, Mapping
from pathlib import PurePosixPath
from typing import Any

from skillwire.conditions import compile_condition
from skillwire.core.errors import ShellTemplateError
from skillwire.policy.access import AccessPolicy
from skillwire.policy.compiler import access_location
from skillwire.policy.decisions import ReasonCode
from skillwire.policy.rules import CompiledRule, RuleKind
from skillwire.skills.model import Skill
from skillwire.skills.model_tools import ShellCommandExecutor
from skillwire.skills.shell_template import render_args

__all__ = ["argv_problems", "candidate_argvs", "confirmation_rules", "path_problems"]

_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://(.*)$", re.DOTALL)
_SEPARATORS = re.compile(r"[=@:,]")


def candidate_argvs(executor: ShellCommandExecutor, args: Mapping[str, Any]) -> list[list[str]]:
    """Every argv the tool may run for ``args``: the command, then each fallback with its
    fixed arguments, each followed by the rendered template. Raises
    :class:`ShellTemplateError` when the template cannot be filled."""
    rendered = render_args(executor.argsTemplate, args)
    out = [[executor.command, *rendered]]
    out += [[f.command, *f.fixedArgs, *rendered] for f in executor.commandFallbacks]
    return out


def _tokens(prefix: str) -> list[str]:
    return prefix.split()


def _starts(argv: list[str], prefix: str, *, base_name: bool) -> bool:
    tokens = _tokens(prefix)
    if not tokens or len(argv) < len(tokens):
        return False
    head = list(argv[: len(tokens)])
    if head == tokens:
        return True
    return base_name and [os.path.basename(head[0]), *head[1:]] == tokens


def argv_problems(access: AccessPolicy, argv: list[str]) -> Iterator[str]:
    """Why ``argv`` may not run under ``access`` (nothing when it may)."""
    shown = " ".join(argv)[:200]
    if not any(_starts(argv, p, base_name=False) for p in access.shell_allowed):
        yield (
            f"'{shown}' does not start with one of the allowed shell prefixes "
            f"({', '.join(access.shell_allowed) or 'none'})"
        )
    for prefix in access.shell_denied:
        if _starts(argv, prefix, base_name=True):
            yield f"'{shown}' starts with the denied shell prefix '{prefix}'"
    for element in argv:
        for op in access.shell_deny_operators:
            if op and op in element:
                yield f"argument {element[:80]!r} contains the denied shell operator {op!r}"
    line = " ".join(argv)
    for pattern in access.shell_deny_patterns:
        if pattern.search(line) is not None or any(pattern.search(e) for e in argv):
            yield f"the command line matches the denied pattern {pattern.source!r}"
    yield from path_problems(argv[1:], (*access.read_roots, *access.write_roots))


def _paths_in(element: str) -> Iterator[tuple[str, bool]]:
    """The paths an element names, each with whether it is absolute."""
    text = element
    if text.startswith("-"):
        if "=" in text:
            text = text.split("=", 1)[1]
        elif "/" in text:
            text = text[text.index("/") :]
        else:
            return
    url = _URL.match(text)
    if url is not None:
        if url.group(1).lower() == "file":
            rest = url.group(2)
            yield ("/" + rest.split("/", 1)[1] if not rest.startswith("/") else rest), True
        return
    pieces = [text, *_SEPARATORS.split(text)] if _SEPARATORS.search(text) else [text]
    for piece in pieces:
        if not piece:
            continue
        if piece.startswith("~"):
            yield os.path.expanduser(piece), True
        elif piece.startswith("/"):
            yield piece, True
        elif "/" in piece or piece in (".", ".."):
            yield piece, False


def _climbs(relative: str) -> bool:
    depth = 0
    for part in PurePosixPath(relative).parts:
        depth += -1 if part == ".." else 0 if part == "." else 1
        if depth < 0:
            return True
    return False


def _inside(path: str, roots: Iterable[str]) -> bool:
    real = os.path.realpath(path)
    for root in roots:
        top = os.path.realpath(os.path.expanduser(root))
        if real == top or real.startswith(top.rstrip("/") + "/"):
            return True
    return False


def path_problems(elements: Iterable[str], roots: Iterable[str]) -> Iterator[str]:
    """Why the paths that ``elements`` name are not all inside ``roots`` (symlinks and
    ``..`` resolved); relative paths may not climb out of the working folder."""
    roots = tuple(roots)
    for element in elements:
        for path, absolute in _paths_in(element):
            if absolute:
                if "\x00" in path or not _inside(path, roots):
                    yield (
                        f"path {path[:120]!r} is outside the allowed roots "
                        f"({', '.join(roots) or 'none allowed'})"
                    )
            elif _climbs(path):
                yield f"relative path {path[:120]!r} climbs out of the working folder"


def shell_problems(
    access: AccessPolicy, executor: ShellCommandExecutor, args: Mapping[str, Any]
) -> Iterator[str]:
    """Why a call of a ``shell_command`` tool with ``args`` may not run."""
    action = args.get("action")
    allowed = executor.allowedActions
    if allowed is not None and "action" in args and action not in allowed:
        yield (f"action {action!r} is not one of the allowed actions ({', '.join(allowed)})")
    try:
        argvs = candidate_argvs(executor, args)
    except ShellTemplateError as exc:
        yield str(exc)
        return
    seen: list[str] = []
    for argv in argvs:
        for problem in argv_problems(access, argv):
            if problem not in seen:
                seen.append(problem)
                yield problem


def confirmation_rules(skill: Skill) -> list[CompiledRule]:
    """Approval rules from ``guardrails.json``: a call whose ``action`` argument is in
    ``toolPolicies.<tool>.requireConfirmationFor`` (or, for a ``shell_command`` tool, in
    ``filesystem.requireConfirmationFor``) needs the default approver's approval. A tool
    without an ``action`` input has nothing to match them against: no rule (the load
    report says so)."""
    access = skill.access
    if access is None:
        return []
    rules: list[CompiledRule] = []
    wanted: dict[str, tuple[list[str], tuple[str, ...]]] = {}
    for name, override in access.toolPolicies.items():
        tool = skill.tool(name)
        if tool is not None and override.requireConfirmationFor:
            wanted[tool.name] = (
                list(override.requireConfirmationFor),
                ("toolPolicies", name, "requireConfirmationFor"),
            )
    fs = access.filesystem.requireConfirmationFor if access.filesystem else []
    if fs:
        for tool in skill.tools:
            if isinstance(tool.executor, ShellCommandExecutor):
                actions, where = wanted.get(tool.name, ([], ("filesystem",)))
                wanted[tool.name] = (
                    actions + [a for a in fs if a not in actions],
                    where if actions else ("filesystem", "requireConfirmationFor"),
                )
    for name, (actions, where) in wanted.items():
        tool = skill.tool(name)
        if tool is None or "action" not in tool.input_names():
            continue  # nothing to match: the load report says it is not enforced
        listed = ", ".join(f'"{_cel_text(a)}"' for a in actions)
        condition = compile_condition(f"action in [{listed}]", known_names={"action"})
        rules.append(
            CompiledRule(
                RuleKind.APPROVAL,
                f"{name} needs confirmation for action {' / '.join(actions)} (guardrails.json)",
                (name,),
                access_location(skill, where),
                "guardrails." + ".".join(str(p) for p in where),
                ReasonCode.APPROVAL_REQUIRED,
                condition=condition,
            )
        )
    return rules


def _cel_text(value: str) -> str:
    """``value`` inside a double-quoted CEL string."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
