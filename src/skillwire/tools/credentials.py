"""Credentials (a package's ``credentials.json``): resolved, checked, injected, redacted.

A credential's value comes from the runtime's environment (its ``id`` is the variable;
only the names the operator lists in ``[credentials] env`` are read, since a package
could otherwise name any variable of the runtime), else from the operator's secrets
file (``[credentials] secrets_file`` in ``skillwire.toml``: a TOML table of
``ID = "value"``). It is checked against the
package's ``validation`` (``minLength``, ``pattern``); a value that fails is treated as
unset, and no message ever repeats it.

A binding gives a value to one tool only: as a variable of that tool's process
environment (shell, MCP stdio) or a header of its requests (HTTP). A tool whose bound
credential is unset is *unavailable*: under ``missingCredentialBehavior: continue`` its
calls fail with the package's message (the planner reads it); under ``fail_fast`` (the
default) a job of the skill does not start (:meth:`SkillCredentials.refusal`).

Every outcome of a tool of the package is redacted before anything keeps it: each
secret value found in its result, error or state changes is replaced by its first
``showPrefix`` and last ``showSuffix`` characters around ``****`` (all of it masked when
those would show half of it or more).
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skillwire.core.errors import CredentialError, PatternError
from skillwire.core.executor import ToolOutcome
from skillwire.core.issues import Severity, SkillIssue
from skillwire.core.patterns import compile_pattern
from skillwire.skills.model import Skill
from skillwire.skills.model_package import CredentialSpec

__all__ = ["Credentials", "SkillCredentials", "load_secrets", "mask"]

MASK = "****"


def mask(value: str, prefix: int, suffix: int) -> str:
    """``value`` as a redacted text: ``prefix`` first and ``suffix`` last characters
    around ``****``; all masked when they would show half of it or more."""
    if prefix + suffix == 0 or (prefix + suffix) * 2 >= len(value):
        return MASK
    return value[:prefix] + MASK + (value[-suffix:] if suffix else "")


def load_secrets(path: Path) -> dict[str, str]:
    """The operator's secrets file: a TOML table of ``ID = "value"`` strings."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CredentialError(f"no secrets file {path}") from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        # a TOML error may quote the file: it could hold a value, so say no more
        raise CredentialError(f"secrets file {path} cannot be read as TOML") from None
    bad = [k for k, v in data.items() if not isinstance(v, str)]
    if bad:
        raise CredentialError(f"secrets file {path}: {', '.join(bad)} must be strings")
    return {k: v for k, v in data.items() if isinstance(v, str)}


def _problem(spec: CredentialSpec, value: str) -> str | None:
    """Why ``value`` fails the spec's validation (never quoting it), or None."""
    check = spec.validation
    if check is None:
        return None
    if check.minLength is not None and len(value) < check.minLength:
        return f"{spec.id} is shorter than {check.minLength} characters"
    if check.pattern:
        try:
            pattern = compile_pattern(check.pattern)
        except PatternError:
            return f"{spec.id}'s validation pattern cannot be used"
        if not pattern.accepts(value):
            return f"{spec.id} does not match its validation pattern"
    return None


@dataclass
class SkillCredentials:
    """One package's credentials, resolved: values, what is wrong, who gets what."""

    skill: Skill
    values: dict[str, str] = field(default_factory=dict)
    """Usable values by credential id (unset and invalid ones are absent)."""
    problems: dict[str, str] = field(default_factory=dict)
    """Why a credential is unusable, by id ("... is not set", "... is shorter ...")."""
    bindings: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    """Per tool (full name): ``(target, credential id)`` pairs."""

    @property
    def specs(self) -> list[CredentialSpec]:
        """The declared credentials."""
        creds = self.skill.credentials
        return list(creds.credentials) if creds is not None else []

    @property
    def mode(self) -> str:
        """``fail_fast`` or ``continue``."""
        creds = self.skill.credentials
        behavior = creds.missingCredentialBehavior if creds is not None else None
        return behavior.mode if behavior is not None else "fail_fast"

    def message(self, credential: str) -> str:
        """The package's ``messageTemplate`` for ``credential`` (a default without one)."""
        creds = self.skill.credentials
        behavior = creds.missingCredentialBehavior if creds is not None else None
        template = behavior.messageTemplate if behavior is not None else ""
        if not template:
            return self.problems.get(credential, f"{credential} is not set")
        return template.replace("{{credentialId}}", credential)

    def needed_by(self, tool: str) -> list[str]:
        """The credentials ``tool`` cannot run without: those in its
        ``requiresCredentials``, and the required ones bound to it. A simulated tool
        needs none."""
        found = self.skill.tool(tool)
        if found is not None and (found.executor is None or found.executor.type == "simulate"):
            return []
        required = {s.id for s in self.specs if s.required}
        names = list(found.requiresCredentials) if found is not None else []
        for _, cid in self.bindings.get(found.name if found else tool, []):
            if cid in required and cid not in names:
                names.append(cid)
        return names

    def missing(self, tool: str) -> str | None:
        """The package's message for the first credential ``tool`` needs that is
        unusable (why it cannot run), or None."""
        if not self.problems:
            return None
        for cid in self.needed_by(tool):
            if cid in self.problems:
                return self.message(cid)
        return None

    def unavailable(self, tool: str) -> str | None:
        """Why ``tool`` cannot run (a credential it needs is unusable), or None."""
        why = self.missing(tool)
        return None if why is None else f"{tool} is unavailable: {why}"

    def unavailable_without(self, credential: str) -> list[str]:
        """The tools (full names) that cannot run while ``credential`` is unusable."""
        return [t.name for t in self.skill.tools if credential in self.needed_by(t.name)]

    def refusal(self) -> str | None:
        """Under ``fail_fast``: why a job of this skill may not start (a required
        credential unusable), or None."""
        if self.mode != "fail_fast":
            return None
        required = [s.id for s in self.specs if s.required and s.id in self.problems]
        if not required:
            return None
        return "; ".join(self.message(cid) for cid in required)

    def environment(self, tool: str) -> dict[str, str]:
        """The variables ``tool``'s process gets: its bound credentials, nothing else."""
        found = self.skill.tool(tool)
        pairs = self.bindings.get(found.name if found else tool, [])
        return {target: self.values[cid] for target, cid in pairs if cid in self.values}

    def redact_text(self, text: str) -> str:
        """``text`` with every secret value masked (longest first)."""
        for spec in sorted(self.specs, key=lambda s: -len(self.values.get(s.id, ""))):
            value = self.values.get(spec.id)
            if not value or not spec.secret or value not in text:
                continue
            redaction = spec.redaction
            shown = mask(
                value,
                redaction.showPrefix if redaction else 0,
                redaction.showSuffix if redaction else 0,
            )
            text = text.replace(value, shown)
        return text

    def redact(self, value: Any) -> Any:
        """``value`` (JSON data) with every secret masked in its texts and keys."""
        if isinstance(value, str):
            return self.redact_text(value)
        if isinstance(value, dict):
            return {self.redact_text(str(k)): self.redact(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.redact(v) for v in value]
        return value

    def redact_outcome(self, outcome: ToolOutcome) -> ToolOutcome:
        """``outcome`` redacted (the same object when it holds no secret)."""
        if not self.values:
            return outcome
        result = self.redact(outcome.result)
        changes = self.redact(outcome.state_changes)
        error = self.redact_text(outcome.error)
        if result == outcome.result and changes == outcome.state_changes and error == outcome.error:
            return outcome
        return ToolOutcome(outcome.ok, result, changes, error)

    def issues(self) -> list[SkillIssue]:
        """For ``skillwire check``: each credential unusable, with what follows: under
        ``fail_fast`` a required one stops every job of the skill from starting;
        otherwise the tools that need it (listed) are unavailable. A warning, or a note
        for an optional one that no tool needs."""
        out: list[SkillIssue] = []
        for index, spec in enumerate(self.specs):
            problem = self.problems.get(spec.id)
            if problem is None:
                continue
            path = ("credentials", "credentials", index, "id")
            tools = [t for t, pairs in self.bindings.items() if any(c == spec.id for _, c in pairs)]
            lost = self.unavailable_without(spec.id)
            severity = Severity.WARNING if spec.required or lost else Severity.INFO
            if spec.required and self.mode == "fail_fast":
                effect = ": a job of this skill will not start (fail_fast)"
            elif lost:
                effect = (
                    f": {', '.join(lost)} {'is' if len(lost) == 1 else 'are'} unavailable "
                    "(not offered to the planner, calls refused)"
                    + ("" if spec.required else "; it is optional for the others")
                )
            else:
                effect = "; it is optional, and no tool needs it to run"
            out.append(
                SkillIssue(
                    severity,
                    f"credential {problem}"
                    + (f" (bound to {', '.join(tools)})" if tools else "")
                    + effect,
                    self.skill.locate(path),
                    path,
                    code="credential-unset" if "not set" in problem else "credential-invalid",
                    hint=f"set {spec.id} in the environment or the secrets file",
                )
            )
        return out


class Credentials:
    """The runtime's credentials, resolved per skill: values from the operator's
    ``secrets``, and from the environment.

    A package names the variables it reads, so the process's environment is read only
    for the names the operator lists in ``env_names`` (``"*"``: any), never for one in
    ``reserved`` (the runtime's own keys: model API keys, ``SKILLWIRE_*``). An explicit
    ``environ`` mapping (tests, embedding) is read whole.
    """

    def __init__(
        self,
        *,
        secrets: Mapping[str, str] | None = None,
        environ: Mapping[str, str] | None = None,
        env_names: Collection[str] = (),
        reserved: Collection[str] = (),
    ) -> None:
        self.secrets = dict(secrets or {})
        if environ is None:
            allowed = set(env_names)
            skip = set(reserved)
            self.environ: Mapping[str, str] = {
                k: v
                for k, v in os.environ.items()
                if ("*" in allowed or k in allowed)
                and k not in skip
                and not k.startswith("SKILLWIRE_")
            }
        else:
            self.environ = environ
        self._by_root: dict[Path, SkillCredentials] = {}
        self._manifests: dict[Path, str] = {}  # a folder's skill.json, by folder

    def value(self, credential: str) -> str | None:
        """A credential's value: the environment (as far as it is read), else the
        secrets file."""
        found = self.environ.get(credential)
        return found if found else self.secrets.get(credential) or None

    def resolve(self, skill: Skill) -> SkillCredentials:
        """``skill``'s credentials, resolved now (and remembered for its folder)."""
        out = SkillCredentials(skill)
        creds = skill.credentials
        if creds is not None:
            for spec in creds.credentials:
                value = self.value(spec.id)
                if value is None:
                    hidden = spec.id in os.environ and spec.id not in self.environ
                    out.problems[spec.id] = f"{spec.id} is not set" + (
                        " (the environment has it, but [credentials] env does not list it)"
                        if hidden
                        else ""
                    )
                    continue
                problem = _problem(spec, value)
                if problem is not None:
                    out.problems[spec.id] = problem
                else:
                    out.values[spec.id] = value
            for binding in creds.bindings:
                tool = skill.tool(binding.tool)
                name = tool.name if tool is not None else binding.tool
                out.bindings.setdefault(name, []).append((binding.target, binding.credentialId))
        if skill.root is not None:
            self._by_root[skill.root] = out
        return out

    def of(self, skill_root: Path | None) -> SkillCredentials | None:
        """The credentials of the skill in ``skill_root``: resolved when it was
        registered, else read from its package (None when it has none)."""
        if skill_root is None:
            return None
        found = self._by_root.get(skill_root)
        if found is not None:
            return found
        manifest = self._manifests.get(skill_root)
        if manifest is None:  # the name only, made once: each call still looks
            manifest = self._manifests[skill_root] = os.path.join(skill_root, "skill.json")
        if not os.path.isfile(manifest):
            return None
        from skillwire.skills import load_skill

        try:
            skill = load_skill(skill_root)
        except Exception:  # a package that no longer loads: its tools get nothing
            return None
        return self.resolve(skill)
