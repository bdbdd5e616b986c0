"""Whether this machine can run a skill: ``skillwire doctor`` without the printing.

    report = diagnose([Path("skills/")])
    raise SystemExit(1 if report.failed else 0)

For every skill under the paths, one :class:`Check` per:

- prerequisite of ``prerequisites.json``: a ``howToCheck`` of ``kind: command`` runs as
  one program with its arguments (split as a POSIX shell would split words, but never
  run by a shell: a command that needs one, with ``|``, ``;``, ``&&``, ``>`` or ``$(``,
  is refused, not run), standard input closed, with a timeout; it passes on exit 0.
  ``kind: manual`` is listed with its instructions;
- credential of ``credentials.json``: the environment variable is set (and satisfies
  the declared ``validation``); its value is never shown;
- tool: an executor of its type exists in this skillwire, and what it runs is here (a
  ``shell_command``'s program or a fallback on ``PATH``; a ``python`` callable allowed);
- adapter ``runtime.requiredAdapters`` names: an executor of that type exists.

A required item that is not ``ok`` fails the report; the loader's own errors are one
failed check (``skill loads``). Nothing here prints. An assembling module: it reads the
operator's configuration.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from skillwire.assembly import make_executors
from skillwire.config import SkillwireConfig, load_config, trust_policy
from skillwire.core.errors import UsageError
from skillwire.skills import load_paths
from skillwire.skills.model import Skill
from skillwire.skills.model_package import Prerequisite
from skillwire.skills.model_tools import PythonExecutor, ShellCommandExecutor
from skillwire.tools import Executors, callable_problem

__all__ = ["DEFAULT_TIMEOUT", "Check", "DoctorReport", "command_argv", "diagnose"]

DEFAULT_TIMEOUT = 30.0
"""Seconds one ``howToCheck`` command may run before it is stopped."""

State = Literal["ok", "missing", "manual"]

_OPERATORS = frozenset("|&;<>()")


@dataclass
class Check:
    """One item checked."""

    skill: str
    kind: Literal["load", "prerequisite", "credential", "tool", "adapter"]
    item: str
    required: bool
    state: State
    detail: str = ""
    """What was found (why it is missing), or the manual instructions."""
    expected: str = ""
    how_to_fix: str = ""


@dataclass
class DoctorReport:
    """Every check, in order."""

    checks: list[Check] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        """A required item is missing."""
        return any(c.required and c.state == "missing" for c in self.checks)


def diagnose(
    paths: Iterable[Path | str],
    *,
    timeout: float = DEFAULT_TIMEOUT,
    config: SkillwireConfig | None = None,
    environ: dict[str, str] | None = None,
) -> DoctorReport:
    """Check every skill under ``paths`` (see the module's text). ``environ`` stands in
    for the process environment (credentials are read from it)."""
    if timeout <= 0:
        raise UsageError("the timeout must be more than 0 seconds")
    config = config or load_config()
    env = dict(os.environ if environ is None else environ)
    executors = make_executors(config)
    loaded = load_paths(paths, trust=trust_policy(config))
    report = DoctorReport()
    for rep in loaded.report.skills:
        if not rep.loaded:
            first = rep.errors[0] if rep.errors else None
            report.checks.append(
                Check(
                    rep.skill_id or rep.source,
                    "load",
                    "skill loads",
                    True,
                    "missing",
                    str(first) if first else "not loaded",
                    how_to_fix=f"run skillwire check {rep.source}",
                )
            )
    for skill in loaded.skills.values():
        if skill.prerequisites is not None:
            for item in skill.prerequisites.items:
                report.checks.append(_prerequisite(skill, item, timeout))
        report.checks += _credentials(skill, env)
        report.checks += _tools(skill, executors, config)
        if skill.package is not None:
            for adapter in skill.package.runtime.requiredAdapters:
                here = adapter in executors.by_type
                report.checks.append(
                    Check(
                        skill.id,
                        "adapter",
                        adapter,
                        True,
                        "ok" if here else "missing",
                        "" if here else f"this skillwire has no {adapter!r} executor",
                        how_to_fix="" if here else "use a skillwire that provides it",
                    )
                )
    return report


def command_argv(command: str) -> list[str]:
    """The argv of a ``howToCheck`` command: words split as a POSIX shell splits them
    (quotes respected). Raises :class:`UsageError` for a command that needs a shell (an
    operator, a substitution), which is never run."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        words = list(lexer)
    except ValueError as exc:  # no closing quotation
        raise UsageError(f"cannot read the command: {exc}") from None
    for word in words:
        if word and set(word) <= _OPERATORS:
            raise UsageError(f"needs a shell ({word!r}): not run")
        if "$(" in word or "`" in word:
            raise UsageError("needs a shell (a command substitution): not run")
    if not words:
        raise UsageError("the command is empty")
    return words


def _prerequisite(skill: Skill, item: Prerequisite, timeout: float) -> Check:
    check = Check(
        skill.id,
        "prerequisite",
        item.id,
        item.required,
        "manual",
        expected=item.expected,
        how_to_fix=item.howToFix or "",
    )
    how = item.howToCheck
    if how is None or how.kind == "manual" or not how.command:
        check.detail = (how.instructions or "") if how is not None else "no check given"
        return check
    try:
        argv = command_argv(how.command)
    except UsageError as exc:
        check.state, check.detail = "missing", f"{how.command}: {exc}"
        return check
    check.state, check.detail = _run(argv, skill.root or Path.cwd(), timeout)
    return check


def _run(argv: list[str], folder: Path, timeout: float) -> tuple[State, str]:
    shown = shlex.join(argv)
    try:
        done = subprocess.run(  # an argv list, never a shell
            argv,
            cwd=folder,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return "missing", f"{shown}: did not finish within {timeout:g} s (stopped)"
    except FileNotFoundError:
        return "missing", f"{shown}: no program {argv[0]!r} on PATH"
    except OSError as exc:
        return "missing", f"{shown}: could not start: {exc.strerror or exc}"
    output = (done.stdout or done.stderr).decode("utf-8", "replace").strip()
    first = output.splitlines()[0][:200] if output else ""
    if done.returncode != 0:
        return "missing", f"{shown}: exit code {done.returncode}" + (f": {first}" if first else "")
    return "ok", f"{shown}: {first}" if first else shown


def _credentials(skill: Skill, env: dict[str, str]) -> list[Check]:
    from skillwire.core.patterns import compile_pattern

    checks: list[Check] = []
    if skill.credentials is None:
        return checks
    for cred in skill.credentials.credentials:
        check = Check(
            skill.id, "credential", cred.id, cred.required, "ok", expected=cred.description
        )
        value = env.get(cred.id)
        rule = cred.validation
        if not value:
            check.state = "missing"
            check.detail = f"the environment variable {cred.id} is not set"
            check.how_to_fix = f"export {cred.id}=..." + (f" ({cred.usage})" if cred.usage else "")
        elif rule is not None and rule.minLength is not None and len(value) < rule.minLength:
            check.state = "missing"
            check.detail = f"{cred.id} is shorter than {rule.minLength} characters"
        elif rule is not None and rule.pattern and not compile_pattern(rule.pattern).accepts(value):
            check.state = "missing"
            check.detail = f"{cred.id} does not match the declared pattern"
        else:
            check.detail = f"{cred.id} is set"  # never the value
        checks.append(check)
    return checks


def _tools(skill: Skill, executors: Executors, config: SkillwireConfig) -> list[Check]:
    checks: list[Check] = []
    for tool in skill.tools:
        spec = tool.executor
        kind = spec.type if spec is not None else "simulate"
        check = Check(skill.id, "tool", f"{tool.name} ({kind})", True, "ok")
        if kind not in executors.by_type:
            check.state = "missing"
            check.detail = f"this skillwire has no {kind!r} executor: a call fails"
        elif isinstance(spec, ShellCommandExecutor):
            programs = [spec.command, *(f.command for f in spec.commandFallbacks)]
            found = next((p for p in programs if shutil.which(p)), None)
            if found is None:
                check.state = "missing"
                check.detail = f"none of {', '.join(programs)} is on PATH"
            else:
                check.detail = f"runs {shutil.which(found)}"
        elif isinstance(spec, PythonExecutor):
            problem = callable_problem(spec.callable, skill.root, config.tools.python_modules)
            if problem is not None:
                check.state, check.detail = "missing", f"{spec.callable}: {problem}"
            else:
                check.detail = spec.callable
        checks.append(check)
    return checks
