"""The skill model: one ``domain.yaml``, or one JSON package, as one typed object.

:class:`DomainFile` is exactly what a single-file definition may hold (spec 000
section 3.1, spec 001's ``required_inputs``, and the keys real exports add);
:class:`SkillManifest` is a package's ``skill.json``; :class:`Skill` is what either
loader produces, with the package's extra parts. A loaded ``Skill`` also knows where
each of its fields came from (:meth:`Skill.locate`) and holds its conditions,
compiled once at load (:meth:`Skill.condition`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal, cast

from pydantic import Field, PrivateAttr

from skillwire.core.conditions import Condition
from skillwire.core.location import FieldPath, SourceLocation
from skillwire.skills._base import SkillPart
from skillwire.skills.model_fields import Intents
from skillwire.skills.model_package import (
    CredentialsFile,
    GuardrailsFile,
    PackageCapabilities,
    PackageFiles,
    PackageRuntime,
    PackageStatus,
    PrerequisitesFile,
    TestsFile,
)
from skillwire.skills.model_policy import Policy
from skillwire.skills.model_tests import DryRunTest
from skillwire.skills.model_tools import Tool
from skillwire.skills.simulation import assign_simulations

__all__ = [
    "CommunicationStyle",
    "DomainFile",
    "EngineConfig",
    "EnginePreset",
    "FinalizationGateConfig",
    "OutputContract",
    "PackageInfo",
    "Problem",
    "RequiredInput",
    "Role",
    "Skill",
    "SkillManifest",
]

EnginePreset = Literal["standard", "careful", "fast", "autonomous"]


class Problem(SkillPart):
    """What the skill is for; the finalization gate checks goal coverage against it."""

    statement: str = ""
    """The problem in one sentence."""
    goals: list[str] = Field(default_factory=list)
    """Further goals."""


class CommunicationStyle(SkillPart):
    """How replies should sound."""

    tone: str | None = None
    """E.g. ``warm``."""
    verbosity: str | None = None
    """E.g. ``concise``."""


class Role(SkillPart):
    """Who the agent is; the reply polisher applies the persona."""

    name: str = ""
    """The agent's role name."""
    persona: str = ""
    """The persona replies are written in."""
    goals: list[str] = Field(default_factory=list)
    """The role's goals."""
    limitations: list[str] = Field(default_factory=list)
    """What the role does not do; given to the planner as text."""
    communication_style: CommunicationStyle | None = None
    """Tone and verbosity."""
    stages: list[Any] = Field(default_factory=list)
    """Conversation stages, as authoring tools write them (informational)."""


class OutputContract(SkillPart):
    """Fields the final answer must carry; checked mechanically before any model judges."""

    required_fields: list[str] = Field(default_factory=list)
    """Names of the fields the final answer must fill."""
    format_hint: str | None = None
    """How the answer should be laid out (given to the planner)."""


class FinalizationGateConfig(SkillPart):
    """The finalization gate: output contract, goal and guardrails checked before replying."""

    enabled: bool = True
    """False skips the gate (and its model call)."""
    max_retries: int = Field(default=2, ge=0, le=10)
    """Replans allowed after a failed gate; each must gather new evidence."""
    model: str | None = None
    """A separate model for the gate (by configured name)."""


class EngineConfig(SkillPart):
    """How the engine runs jobs of this skill."""

    preset: EnginePreset | None = None
    """A named preset: ``standard``, ``careful``, ``fast`` or ``autonomous``."""
    model: str | None = None
    """The model, by configured name."""
    temperature: float | None = Field(default=None, ge=0, le=2)
    """Sampling temperature."""
    max_tokens: int | None = Field(default=None, gt=0)
    """Largest reply per model call."""
    max_iterations: int | None = Field(default=None, gt=0)
    """Planner iterations per job before ``ENGINE_BUDGET_EXHAUSTED``."""
    max_model_calls: int | None = Field(default=None, gt=0)
    """Model calls per job before ``ENGINE_BUDGET_EXHAUSTED``."""
    timeout: float | None = Field(default=None, gt=0)
    """Seconds a model call may take."""
    on_max_iterations: str | None = None
    """What to do when iterations run out (informational; the job escalates)."""
    response_format: str | None = None
    """Preferred reply format (informational)."""
    internal_error: Any = None
    """Internal-error settings as authoring tools write them (not enforced)."""
    finalization_gate: FinalizationGateConfig = Field(default_factory=FinalizationGateConfig)
    """The finalization gate's settings."""


class RequiredInput(SkillPart):
    """A value the platform asks for before the job's first tool call (spec 001)."""

    path: str = Field(min_length=1)
    """Where the value goes, e.g. ``order_id`` or ``identity.email_or_phone``."""
    prompt: str = ""
    """The text the user sees when asked."""
    input_type: Literal["text", "choice"] = "text"
    """``text`` or ``choice`` (with ``options``)."""
    options: list[str] = Field(default_factory=list)
    """The choices, for ``input_type: choice``."""
    type: Literal["string", "number", "integer", "boolean"] = "string"
    """JSON type of the value; input is validated against it."""
    pattern: str | None = None
    """A regular expression a text value must match."""
    intents: list[Annotated[str, Field(min_length=1)]] | None = Field(default=None, min_length=1)
    """The intents (by id) for which the value is asked; without ``intents``, for every
    intent."""


class DomainFile(SkillPart):
    """A single-file skill definition (``domain.yaml``, ``skill.yaml`` or ``skill.json``)."""

    id: str | None = None
    """Stable identifier; derived from the file's folder when absent."""
    name: str = ""
    """Display name."""
    description: str = ""
    """What the skill does."""
    version: str | int | float | None = None
    """The skill's version."""
    problem: Problem = Field(default_factory=Problem)
    """The problem the skill solves."""
    role: Role = Field(default_factory=Role)
    """The agent's role and persona."""
    persona: str | None = None
    """Alias of ``role.persona`` (used when that is empty)."""
    intents: Intents = Field(default_factory=Intents)
    """Supported intents and out-of-domain behaviour."""
    tools: list[Tool] = Field(default_factory=list)
    """The tools the agent may call."""
    policy: Policy = Field(default_factory=Policy)
    """Guardrails, workflows, approvals."""
    output_contract: OutputContract = Field(default_factory=OutputContract)
    """Fields the final answer must carry."""
    engine: EngineConfig | EnginePreset = Field(default_factory=EngineConfig)
    """Engine settings, or a preset name."""
    required_inputs: list[RequiredInput] = Field(default_factory=list)
    """Values asked for before the first tool call (spec 001 hints)."""
    facts: dict[str, str] = Field(default_factory=dict)
    """Named expressions every condition may read as ``facts.<name>``, computed once per
    gate check when a rule reads them (docs/conditions.md, "Facts")."""
    allowed_state_changes: list[str] | None = None
    """State changes tools may declare in ``effects``; none means no limit is declared."""
    tests: list[DryRunTest] = Field(default_factory=list)
    """Dry runs of the skill that ``skillwire test`` runs (docs/lifecycle.md)."""
    phase: str | None = None
    """Authoring phase (informational)."""
    created_at: str | None = None
    """Creation time (informational)."""
    updated_at: str | None = None
    """Update time (informational)."""
    mcp_server: Any = None
    """MCP server settings (present, not enforced)."""
    connectors: list[Any] = Field(default_factory=list)
    """Connectors (present, not enforced)."""
    scenarios: list[Any] = Field(default_factory=list)
    """Scenarios ``{id, title, description, steps, expected_outcome}`` (informational)."""
    glossary: dict[str, Any] = Field(default_factory=dict)
    """Terms and definitions (informational)."""
    triggers: list[Any] = Field(default_factory=list)
    """Triggers (present, not enforced)."""
    channels: list[Any] = Field(default_factory=list)
    """Channels (present, not enforced)."""
    meta_tools: list[Any] = Field(default_factory=list)
    """Meta tools (present, not enforced)."""
    bootstrap_tools: list[Any] = Field(default_factory=list)
    """Bootstrap tools (present, not enforced)."""
    prefetch_tools: list[Any] = Field(default_factory=list)
    """Prefetch tools (present, not enforced)."""
    ui_plugins: list[Any] = Field(default_factory=list)
    """UI plugins (present, not enforced)."""
    grant_mappings: list[Any] = Field(default_factory=list)
    """Grant mappings (present, not enforced)."""
    access_policy: Any = None
    """Access policy rules (present, not enforced)."""
    response_filters: list[Any] = Field(default_factory=list)
    """Response filters (present, not enforced)."""
    context_propagation: Any = None
    """Context propagation (present, not enforced)."""
    handoff_when: Any = None
    """Hand-off conditions (present, not enforced)."""
    validation: dict[str, Any] = Field(default_factory=dict)
    """The authoring tool's validation state (informational)."""
    conversation: list[Any] = Field(default_factory=list)
    """The authoring conversation (informational)."""

    def engine_config(self) -> EngineConfig:
        """``engine`` as an object (a preset name becomes ``EngineConfig(preset=...)``)."""
        if isinstance(self.engine, str):
            return EngineConfig(preset=self.engine)
        return self.engine

    def persona_text(self) -> str:
        """``role.persona``, else the top-level ``persona``."""
        return self.role.persona or self.persona or ""

    def tool(self, name_or_id: str) -> Tool | None:
        """The tool with this ``name`` (or ``id``), or None."""
        for t in self.tools:
            if name_or_id in (t.name, t.id):
                return t
        return None


class SkillManifest(DomainFile):
    """``skill.json`` of a package. ``skillwire-skill/v1`` may also carry every
    single-file field (intents, policy, output contract ...)."""

    schemaVersion: Literal["ayati-skill/v1", "skillwire-skill/v1"]  # noqa: N815
    """Format version."""
    id: str = Field(pattern=r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
    """Kebab-case identifier; tool names are prefixed with it."""
    title: str = ""
    """Display name."""
    owners: list[str] = Field(default_factory=list)
    """Who maintains it."""
    tags: list[str] = Field(default_factory=list)
    """Keywords."""
    status: PackageStatus = Field(default_factory=PackageStatus)
    """Lifecycle state."""
    runtime: PackageRuntime = Field(default_factory=PackageRuntime)
    """Runtime requirements."""
    files: PackageFiles = Field(default_factory=PackageFiles)
    """File names."""
    capabilities: PackageCapabilities = Field(default_factory=PackageCapabilities)
    """What it declares."""


class PackageInfo(SkillPart):
    """A package's metadata from ``skill.json``."""

    schemaVersion: str  # noqa: N815
    """The ``skill.json`` format version."""
    title: str = ""
    """Display name."""
    owners: list[str] = Field(default_factory=list)
    """Who maintains it."""
    tags: list[str] = Field(default_factory=list)
    """Keywords."""
    status: PackageStatus = Field(default_factory=PackageStatus)
    """Lifecycle state."""
    runtime: PackageRuntime = Field(default_factory=PackageRuntime)
    """Runtime requirements."""
    files: PackageFiles = Field(default_factory=PackageFiles)
    """File names."""
    capabilities: PackageCapabilities = Field(default_factory=PackageCapabilities)
    """What it declares."""


class Skill(DomainFile):
    """A loaded skill, from either format. ``id`` is always set."""

    id: str
    """Stable identifier."""
    format: Literal["yaml", "json", "package"] = "yaml"
    """Which loader produced it."""
    prompt: str = ""
    """The package's ``skill.md`` text: the skill's prompt block."""
    package: PackageInfo | None = None
    """Package metadata, for package skills."""
    access: GuardrailsFile | None = None
    """``guardrails.json``: shell and filesystem policy, tool-access plan."""
    credentials: CredentialsFile | None = None
    """``credentials.json``."""
    prerequisites: PrerequisitesFile | None = None
    """``prerequisites.json``."""
    tests_file: TestsFile | None = None
    """``tests.json`` (the ``tests`` field is the skill's own dry runs)."""

    _locator: Callable[[FieldPath], SourceLocation] | None = PrivateAttr(default=None)
    _conditions: dict[FieldPath, Condition] = PrivateAttr(default_factory=dict)
    _origin: str = PrivateAttr(default="")
    _root: Path | None = PrivateAttr(default=None)
    _version: str = PrivateAttr(default="")
    _files: dict[str, bytes] | None = PrivateAttr(default=None)

    def model_post_init(self, context: Any, /) -> None:
        """Each tool learns how it runs simulated (:mod:`.simulation`)."""
        assign_simulations(self)

    # The engine reads these for every job. Read through the attribute, a private
    # attribute costs pydantic's __getattr__ fallback (some 3 us); read here, a dict get.
    @property
    def origin(self) -> str:
        """The file or folder the skill was loaded from."""
        return cast(str, self._private()["_origin"])

    @property
    def root(self) -> Path | None:
        """The folder of the skill's files (where ``python`` executors find modules)."""
        return cast("Path | None", self._private()["_root"])

    @property
    def version_hash(self) -> str:
        """The content hash of the files it was loaded from (``skills.versions``); empty
        for a skill built in code."""
        return cast(str, self._private()["_version"])

    def version_files(self) -> dict[str, bytes] | None:
        """The files of this version, by path relative to the skill's folder (None when
        not kept: built in code, or too large)."""
        files = self._private()["_files"]
        return None if files is None else dict(files)

    def _private(self) -> dict[str, Any]:
        private = self.__pydantic_private__
        if private is None:  # pragma: no cover - pydantic sets it on every instance
            raise AttributeError("the skill has no private attributes")
        return private

    def attach_compiled(
        self,
        conditions: dict[FieldPath, Condition],
        locator: Callable[[FieldPath], SourceLocation],
    ) -> None:
        """Give a skill built in code (not by a loader: a simulation's agent type, say)
        its compiled conditions and where each field was written, as the loaders do."""
        self._conditions = conditions
        self._locator = locator

    def locate(self, path: FieldPath) -> SourceLocation:
        """Where a field of this skill was written (file, line, column)."""
        if self._locator is None:
            return SourceLocation(self._origin or "<memory>")
        return self._locator(path)

    def condition(self, path: FieldPath) -> Condition:
        """The compiled condition at ``path`` (e.g. ``("tools", 0, "policy", "condition")``).

        Raises KeyError when no condition was compiled there.
        """
        return self._conditions[path]

    def tool(self, name_or_id: str) -> Tool | None:
        """The tool with this ``name`` or ``id``; in a package, also by its local name
        (``process_refund`` finds ``refund-support.process_refund``)."""
        found = super().tool(name_or_id)
        if found is None and self.format == "package" and "." not in name_or_id:
            found = super().tool(f"{self.id}.{name_or_id}")
        return found

    def conditions(self) -> dict[FieldPath, Condition]:
        """Every compiled condition, by path."""
        return dict(self._conditions)
