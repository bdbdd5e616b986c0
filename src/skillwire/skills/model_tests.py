"""A skill's own dry-run tests: the ``tests:`` section of ``domain.yaml`` (or of a
``skillwire-skill/v1`` package's ``skill.json``).

Each test sends one user message to the skill, answers the pauses it expects in order
(input to give, an approval or a denial), and checks the job's end: its status and
outcome class, the tools that ran, the reply's fields and text. It runs offline by
default; ``model: scripted`` replays a script of model replies (``script:``, a file
beside the skill or the replies inline). ``skillwire test`` runs them (docs/lifecycle.md).

An unknown key anywhere in a test is an error, as in a policy block: a misspelled
expectation (``outcom:``) would make a test pass that checks nothing.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator

from skillwire.skills._base import SkillPart

__all__ = ["DryRunExpect", "DryRunPause", "DryRunTest"]

JobStatusName = Literal["queued", "running", "paused", "completed", "failed", "escalated"]


class DryRunPause(SkillPart):
    """A pause the job must reach, in order, and what the test gives it to go on."""

    __test__: ClassVar[bool] = False  # not a pytest class

    outcome: str = Field(min_length=1)
    """The pause's outcome class: ``USER_ACTION_REQUIRED``, ``APPROVAL_REQUIRED`` ..."""
    tool: str | None = None
    """The tool the pause waits on (an approval), by name."""
    fields: list[str] | None = None
    """The fields the pause asks for (an input pause), in any order."""
    input: dict[str, Any] | None = None
    """Values to give: the job resumes with them."""
    approve: str | None = None
    """Approve the waiting call as this role."""
    deny: str | None = None
    """Deny the waiting call as this role."""
    by: str = "skillwire-test"
    """Who decides (never the job's owner unless the rule allows self-approval)."""

    @model_validator(mode="after")
    def _one_answer(self) -> DryRunPause:
        given = [k for k in ("input", "approve", "deny") if getattr(self, k) is not None]
        if len(given) > 1:
            raise ValueError(f"give one of input, approve or deny, not {' and '.join(given)}")
        return self


class DryRunExpect(SkillPart):
    """What the job must look like when the test is over (every key given is checked)."""

    __test__: ClassVar[bool] = False  # not a pytest class

    status: JobStatusName | None = None
    """The job's status at the end."""
    outcome: str | None = None
    """The job's outcome class at the end, e.g. ``SUCCESS`` or ``BLOCKED``."""
    tools: list[str] | None = None
    """Exactly the tools that ran, in order (local or namespaced names)."""
    not_called: list[str] = Field(default_factory=list)
    """Tools that must not have run."""
    blocked: list[str] = Field(default_factory=list)
    """Tools the gate must have refused at least once."""
    fields: dict[str, Any] = Field(default_factory=dict)
    """Reply fields and their exact values (other fields may be present)."""
    reply_contains: list[str] = Field(default_factory=list)
    """Text the reply must contain (case-insensitive)."""


class DryRunTest(SkillPart):
    """One dry run of the skill: a message, the pauses it meets, the end it reaches."""

    __test__: ClassVar[bool] = False  # not a pytest class

    id: str = Field(min_length=1, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    """Stable identifier (letters, digits, ``-``, ``_``, ``.``)."""
    title: str = ""
    """Short name."""
    message: str = Field(min_length=1)
    """The user's message that starts the job."""
    context: dict[str, Any] = Field(default_factory=dict)
    """The job's context (``user_id`` makes its owner)."""
    model: Literal["offline", "scripted"] = "offline"
    """``offline`` (the embedded model) or ``scripted`` (replies from ``script``)."""
    script: str | list[dict[str, Any]] | None = None
    """For ``model: scripted``: a script file (relative to the skill's folder) or the
    replies inline (docs/testing.md)."""
    pauses: list[DryRunPause] = Field(default_factory=list)
    """The pauses the job must reach, in order, and what to give each."""
    expect: DryRunExpect = Field(default_factory=DryRunExpect)
    """The end the job must reach."""

    @model_validator(mode="after")
    def _script_fits_model(self) -> DryRunTest:
        if self.model == "scripted" and not self.script:
            raise ValueError("model: scripted needs a script (a file name or the replies)")
        if self.model == "offline" and self.script:
            raise ValueError("a script is given but model is offline: write model: scripted")
        return self
