"""The operator's base policy file (``skillwire-base-policy/v1``): its model and loader.

The base policy holds the operator's core protections (tools that never run, approvals
that always apply, call limits, the widest shell and filesystem access any skill may
have). It is read like a skill file, with every problem located; unlike a skill, an
unknown key is an error. :mod:`skillwire.policy` merges it with each skill.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, PrivateAttr

from skillwire.core.errors import SkillError
from skillwire.core.issues import Severity, SkillIssue
from skillwire.core.location import FieldPath, SourceLocation
from skillwire.skills._base import SkillPart
from skillwire.skills._validation import validate_document, walk_extras
from skillwire.skills.model_package import FilesystemPolicy, ShellPolicy
from skillwire.skills.model_tools import SelfApproval
from skillwire.skills.semantics import approver_problem
from skillwire.skills.source import read_document

__all__ = ["BaseApproval", "BasePolicy", "UntrustedWrites", "load_base_policy"]


class BaseApproval(SkillPart):
    """An approval the operator requires for a tool, whatever the skill says."""

    tool: str = Field(min_length=1)
    """The tool's full name."""
    when: str | None = None
    """When approval is needed; without it, always."""
    approver: str = "supervisor"
    """The approving role."""
    self_approval: SelfApproval = "refused"
    """``allowed`` lets the job's owner approve their own call when they hold the
    approver role; by default (``refused``) the approval must come from someone else."""
    reason: str = ""
    """Why, shown to the approver."""


class UntrustedWrites(SkillPart):
    """What happens to a write whose arguments came from untrusted tool output."""

    action: Literal["approve", "allow"] = "approve"
    """``approve`` (the default): a tool that writes (``effects`` or ``permanent``) and
    is given a value that is ``untrusted()`` (see docs/conditions.md) needs approval, and
    the approver is told where the value came from. ``allow``: only the skill's rules
    decide."""
    approver: str = "supervisor"
    """The approving role."""


class BasePolicy(SkillPart):
    """The operator's base policy (``skillwire-base-policy/v1``)."""

    schemaVersion: Literal["skillwire-base-policy/v1"] = "skillwire-base-policy/v1"  # noqa: N815
    """Format version."""
    deny_tools: list[str] = Field(default_factory=list)
    """Tools that never run, in any skill."""
    approvals: list[BaseApproval] = Field(default_factory=list)
    """Approvals that always apply."""
    max_calls: dict[str, Annotated[int, Field(ge=0)]] = Field(default_factory=dict)
    """Per-tool call limits per job."""
    untrusted_writes: UntrustedWrites = Field(default_factory=UntrustedWrites)
    """Approval for writes given values found only in untrusted tool output."""
    shell: ShellPolicy = Field(default_factory=ShellPolicy)
    """Shell policy: the allowed prefixes are the most any skill may use."""
    filesystem: FilesystemPolicy = Field(default_factory=FilesystemPolicy)
    """Filesystem roots: the most any skill may use."""

    _locator: Callable[[FieldPath], SourceLocation] | None = PrivateAttr(default=None)

    def origin(self) -> str:
        """The file the base policy was read from, or ``skillwire's default``."""
        if self._locator is None:
            return "skillwire's default"
        return self._locator(()).file

    def locate(self, path: FieldPath) -> SourceLocation:
        """Where a field of the base policy was written (``base policy`` for the default)."""
        if self._locator is None:
            return SourceLocation("base policy")
        return self._locator(path)


def load_base_policy(path: Path) -> BasePolicy:
    """Read the operator's base policy file (YAML or JSON); SkillError on any problem.

    An unknown key is an error here, not a warning: a misspelt ``deny_tools`` would
    silently drop a core protection.
    """
    doc = read_document(path, str(path))
    data = doc.data if doc.data is not None else {}
    policy, issues = validate_document(BasePolicy, data, doc)
    if policy is None:
        raise SkillError(issues)
    unknown = [
        SkillIssue(Severity.ERROR, i.message, i.location, i.path, code=i.code, hint=i.hint)
        for i in walk_extras(policy, doc)
        if i.severity is Severity.WARNING
    ]
    if unknown:
        raise SkillError(unknown)
    roles = [
        SkillIssue(
            Severity.ERROR,
            f"base policy approval {i}: {problem}",
            doc.locate(("approvals", i, "approver")),
            ("approvals", i, "approver"),
            code="approver-every-caller",
        )
        for i, approval in enumerate(policy.approvals)
        if (problem := approver_problem(approval.approver)) is not None
    ]
    problem = approver_problem(policy.untrusted_writes.approver)
    if problem is not None and policy.untrusted_writes.action == "approve":
        roles.append(
            SkillIssue(
                Severity.ERROR,
                f"base policy untrusted_writes: {problem}",
                doc.locate(("untrusted_writes", "approver")),
                ("untrusted_writes", "approver"),
                code="approver-every-caller",
            )
        )
    if roles:
        raise SkillError(roles)
    policy._locator = doc.locate
    return policy
