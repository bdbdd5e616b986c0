"""The files of a JSON skill package (spec 003), one model per file.

Format v1 files carry ``ayati-<file>/v1``; skillwire's own additions are declared
with ``skillwire-<file>/v1``. Any other ``schemaVersion`` is rejected (rule 1).
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field

from skillwire.skills._base import SkillPart
from skillwire.skills.model_tools import Tool

__all__ = [
    "SCHEMA_VERSIONS",
    "AccessOperation",
    "CredentialBinding",
    "CredentialSpec",
    "CredentialValidation",
    "CredentialsFile",
    "FilesystemPolicy",
    "GuardrailsFile",
    "HowToCheck",
    "MissingCredentialBehavior",
    "PackageCapabilities",
    "PackageFiles",
    "PackageRuntime",
    "PackageStatus",
    "Prerequisite",
    "PrerequisitesFile",
    "Redaction",
    "ShellPolicy",
    "TestCommand",
    "TestScenario",
    "TestsFile",
    "ToolAccessPlan",
    "ToolPolicyOverride",
    "ToolsFile",
]

SCHEMA_VERSIONS: dict[str, tuple[str, str]] = {
    "skill": ("ayati-skill/v1", "skillwire-skill/v1"),
    "tools": ("ayati-tools/v1", "skillwire-tools/v1"),
    "guardrails": ("ayati-guardrails/v1", "skillwire-guardrails/v1"),
    "credentials": ("ayati-credentials/v1", "skillwire-credentials/v1"),
    "prerequisites": ("ayati-prerequisites/v1", "skillwire-prerequisites/v1"),
    "tests": ("ayati-tests/v1", "skillwire-tests/v1"),
}
"""The accepted ``schemaVersion`` values of each package file: format v1, and
skillwire's superset."""


class PackageStatus(SkillPart):
    """Lifecycle state of the package."""

    state: Literal["draft", "stable", "deprecated"] = "draft"
    """``draft``, ``stable`` or ``deprecated``."""
    enabledByDefault: bool = False  # noqa: N815
    """Whether the skill is enabled without the operator turning it on."""


class PackageRuntime(SkillPart):
    """What the package needs of the runtime."""

    minAgentVersion: str | None = None  # noqa: N815
    """The lowest runtime version it works with."""
    requiredAdapters: list[str] = Field(default_factory=list)  # noqa: N815
    """Executor types it needs, e.g. ``shell_command``."""


class PackageFiles(SkillPart):
    """The names of the package's files."""

    skillDoc: str = "skill.md"  # noqa: N815
    """The prompt block (Markdown)."""
    tools: str = "tools.json"
    """Tool definitions."""
    guardrails: str = "guardrails.json"
    """Guardrails and the tool-access plan."""
    credentials: str = "credentials.json"
    """Credential requirements."""
    prerequisites: str = "prerequisites.json"
    """Runtime requirements."""
    tests: str = "tests.json"
    """Test scenarios."""


class PackageCapabilities(SkillPart):
    """What the package declares it does."""

    updatesToolAccessJson: bool = False  # noqa: N815
    """It carries a ``toolAccessPlan``."""
    requiresCredentials: bool = False  # noqa: N815
    """It needs credentials."""
    declaresPrerequisites: bool = False  # noqa: N815
    """It carries prerequisites."""
    declaresTests: bool = False  # noqa: N815
    """It carries test scenarios."""


class ToolsFile(SkillPart):
    """``tools.json``: the package's tools."""

    schemaVersion: Literal["ayati-tools/v1", "skillwire-tools/v1"]  # noqa: N815
    """Format version."""
    skillId: str  # noqa: N815
    """Must equal ``skill.json``'s ``id``."""
    tools: list[Tool] = Field(default_factory=list)
    """The tools; names are namespaced ``<skillId>.<toolName>``."""


class AccessOperation(SkillPart):
    """One operation of a ``toolAccessPlan``. Operations may only add."""

    op: Literal["upsert_tool", "add_global_allowlist_tool", "append_unique_guardrail_list"]
    """The operation."""
    toolName: str | None = None  # noqa: N815
    """The tool, for ``upsert_tool`` and ``add_global_allowlist_tool``."""
    config: dict[str, Any] | None = None
    """The tool's access config, for ``upsert_tool`` (e.g. ``{enabled: true}``)."""
    path: str | None = None
    """A dotted path into the access policy, e.g. ``guardrails.shell.allowedPrefixes``."""
    values: list[str] = Field(default_factory=list)
    """Values to append, for ``append_unique_guardrail_list``."""


class ToolAccessPlan(SkillPart):
    """An idempotent patch of the runtime's tool-access policy."""

    idempotent: bool = True
    """Must be true: applying the plan twice equals applying it once."""
    operations: list[AccessOperation] = Field(default_factory=list)
    """The operations, applied in order."""


class ToolPolicyOverride(SkillPart):
    """Per-tool limits in ``guardrails.json``."""

    requireConfirmationFor: list[str] = Field(default_factory=list)  # noqa: N815
    """Action kinds that need confirmation (approval)."""
    maxCallsPerRun: int | None = Field(default=None, ge=0)  # noqa: N815
    """At most this many calls in one job."""


class ShellPolicy(SkillPart):
    """What shell commands may run. Deny lists are unioned with the base; allow lists
    are intersected with it."""

    allowedPrefixes: list[str] = Field(default_factory=list)  # noqa: N815
    """Programs allowed to run."""
    denyPrefixes: list[str] = Field(default_factory=list)  # noqa: N815
    """Programs never allowed."""
    denyOperators: list[str] = Field(default_factory=list)  # noqa: N815
    """Shell operators refused in arguments."""
    denyPatterns: list[str] = Field(default_factory=list)  # noqa: N815
    """Regular expressions refused in a command line."""


class FilesystemPolicy(SkillPart):
    """Where files may be read and written."""

    allowedReadRoots: list[str] = Field(default_factory=list)  # noqa: N815
    """Readable roots."""
    allowedWriteRoots: list[str] = Field(default_factory=list)  # noqa: N815
    """Writable roots."""
    requireConfirmationFor: list[str] = Field(default_factory=list)  # noqa: N815
    """Operations that need confirmation."""


class GuardrailsFile(SkillPart):
    """``guardrails.json``: safety policy and the tool-access plan."""

    schemaVersion: Literal["ayati-guardrails/v1", "skillwire-guardrails/v1"]  # noqa: N815
    """Format version."""
    skillId: str  # noqa: N815
    """Must equal ``skill.json``'s ``id``."""
    mergePolicy: Literal["restrictive"] = "restrictive"  # noqa: N815
    """Always ``restrictive``: a package can only tighten the base policy."""
    toolAccessPlan: ToolAccessPlan | None = None  # noqa: N815
    """The patch of the runtime's tool access."""
    toolPolicies: dict[str, ToolPolicyOverride] = Field(default_factory=dict)  # noqa: N815
    """Per-tool limits, keyed by tool name."""
    shell: ShellPolicy | None = None
    """Shell command policy."""
    filesystem: FilesystemPolicy | None = None
    """Filesystem policy."""


class CredentialValidation(SkillPart):
    """How a credential's value is checked."""

    pattern: str | None = None
    """A regular expression the value must match."""
    minLength: int | None = Field(default=None, ge=0)  # noqa: N815
    """The shortest value allowed."""


class Redaction(SkillPart):
    """How a secret is shown in logs."""

    showPrefix: int = Field(default=0, ge=0)  # noqa: N815
    """Characters shown at the start."""
    showSuffix: int = Field(default=0, ge=0)  # noqa: N815
    """Characters shown at the end."""


class CredentialSpec(SkillPart):
    """One credential the package needs. ``id``, ``type``, ``required`` and ``secret``
    must all be given (rule 6)."""

    id: str = Field(min_length=1)
    """Identifier; for ``type: env``, the environment variable read."""
    type: Literal["env"]
    """Where the value comes from: ``env``."""
    required: bool
    """Whether the skill cannot run without it."""
    secret: bool
    """Whether the value is redacted everywhere."""
    description: str = ""
    """What it is."""
    usage: str = ""
    """How the tools use it."""
    validation: CredentialValidation | None = None
    """Checks on the value."""
    redaction: Redaction | None = None
    """How the value is shown."""


class CredentialBinding(SkillPart):
    """Gives a credential to a tool."""

    tool: str = Field(min_length=1)
    """The tool (rule 7: it must exist)."""
    credentialId: str = Field(min_length=1)  # noqa: N815
    """The credential."""
    injectAs: Literal["env"] = "env"  # noqa: N815
    """How it is passed: ``env``."""
    target: str = Field(min_length=1)
    """The environment variable the tool sees."""


class MissingCredentialBehavior(SkillPart):
    """What happens when a required credential is missing."""

    mode: Literal["fail_fast", "continue"] = "fail_fast"
    """``fail_fast`` refuses to run the tool; ``continue`` runs without it."""
    messageTemplate: str = ""  # noqa: N815
    """The message; ``{{credentialId}}`` is filled in."""


class CredentialsFile(SkillPart):
    """``credentials.json``: secrets the tools need and how they get them."""

    schemaVersion: Literal["ayati-credentials/v1", "skillwire-credentials/v1"]  # noqa: N815
    """Format version."""
    skillId: str  # noqa: N815
    """Must equal ``skill.json``'s ``id``."""
    credentials: list[CredentialSpec] = Field(default_factory=list)
    """The credentials."""
    bindings: list[CredentialBinding] = Field(default_factory=list)
    """Which tool gets which credential."""
    missingCredentialBehavior: MissingCredentialBehavior | None = None  # noqa: N815
    """Behaviour when one is missing."""


class HowToCheck(SkillPart):
    """How to check a prerequisite: a command, or manual instructions."""

    kind: Literal["command", "manual"]
    """``command`` or ``manual``."""
    command: str | None = None
    """The command, for ``kind: command``. Never run by the loader."""
    instructions: str | None = None
    """What to do, for ``kind: manual``."""


class Prerequisite(SkillPart):
    """Something the machine needs before the skill works. ``howToCheck`` and
    ``howToFix`` must be present and non-empty (rule 8)."""

    id: str = Field(min_length=1)
    """Identifier, referenced by test scenarios."""
    type: str = ""
    """A category, e.g. ``binary``."""
    required: bool = True
    """Whether the skill cannot work without it."""
    description: str = ""
    """What is needed."""
    howToCheck: HowToCheck | None = None  # noqa: N815
    """How to check it."""
    expected: str = ""
    """What a successful check shows."""
    howToFix: str | None = None  # noqa: N815
    """How to fix a failed check."""


class PrerequisitesFile(SkillPart):
    """``prerequisites.json``: declarative runtime requirements (metadata only)."""

    schemaVersion: Literal["ayati-prerequisites/v1", "skillwire-prerequisites/v1"]  # noqa: N815
    """Format version."""
    skillId: str  # noqa: N815
    """Must equal ``skill.json``'s ``id``."""
    lastUpdated: str | None = None  # noqa: N815
    """Date of the last update."""
    mode: str = "declarative"
    """``declarative``: checks are metadata, never run at load."""
    items: list[Prerequisite] = Field(default_factory=list)
    """The prerequisites."""


class TestCommand(SkillPart):
    """A command a test scenario runs (only when asked)."""

    __test__: ClassVar[bool] = False  # not a pytest class

    program: str = Field(min_length=1)
    """The program."""
    args: list[str] = Field(default_factory=list)
    """Its arguments."""
    allowFailure: bool = False  # noqa: N815
    """Whether a non-zero exit is acceptable."""


class TestScenario(SkillPart):
    """A test scenario. It needs a stable ``id`` and at least one ``expected`` (rule 9)."""

    __test__: ClassVar[bool] = False  # not a pytest class

    id: str | None = None
    """Stable identifier (lowercase letters, digits, ``-``, ``_``, ``.``)."""
    title: str = ""
    """Short name."""
    goal: str = ""
    """What it shows."""
    type: Literal["command", "manual"] = "manual"
    """``command`` or ``manual``."""
    preconditions: list[str] = Field(default_factory=list)
    """Prerequisite ids."""
    steps: list[str] = Field(default_factory=list)
    """What to do, in prose."""
    commands: list[TestCommand] = Field(default_factory=list)
    """Commands, for ``type: command``."""
    expected: list[str] = Field(default_factory=list)
    """Expected outcomes."""
    passCriteria: str = ""  # noqa: N815
    """When it passes."""


class TestsFile(SkillPart):
    """``tests.json``: declarative test scenarios (metadata only)."""

    __test__: ClassVar[bool] = False  # not a pytest class

    schemaVersion: Literal["ayati-tests/v1", "skillwire-tests/v1"]  # noqa: N815
    """Format version."""
    skillId: str  # noqa: N815
    """Must equal ``skill.json``'s ``id``."""
    suiteName: str = ""  # noqa: N815
    """The suite's name."""
    executionMode: str = "declarative"  # noqa: N815
    """``declarative``: scenarios are metadata until run on request."""
    scenarios: list[TestScenario] = Field(default_factory=list)
    """The scenarios."""
