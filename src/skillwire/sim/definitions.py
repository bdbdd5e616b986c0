"""A loaded experiment: skills, agent types, rules and agents, compiled and located.

Everything here is immutable after loading; a run reads it and never changes it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from skillwire.conditions import CelCondition
from skillwire.core.issues import SkillIssue
from skillwire.core.location import SourceLocation

__all__ = [
    "ActionSpec",
    "AgentRow",
    "AgentTypeSpec",
    "ConstructSpec",
    "Experiment",
    "GovernanceRule",
    "Precondition",
    "ResponseField",
    "SkillSpec",
]

Level = Literal["ERROR", "WARNING"]


@dataclass(frozen=True, slots=True)
class Precondition:
    """A registry precondition (``not elevated``), compiled to CEL."""

    source: str
    condition: CelCondition
    location: SourceLocation


@dataclass(frozen=True, slots=True)
class SkillSpec:
    """One skill of the registry, with every constraint that is enforced."""

    id: str
    description: str
    eligible: tuple[str, ...]
    """Agent types that may use it; ``*`` is every type."""
    preconditions: tuple[Precondition, ...]
    once_only: bool
    permanent: bool
    annual: bool
    allowed_state_changes: frozenset[str]
    hook: str
    """The world hook that executes it (``implementation_mapping: sim.NAME``)."""
    location: SourceLocation

    def eligible_for(self, agent_type: str) -> bool:
        """Whether agents of ``agent_type`` may use this skill."""
        return "*" in self.eligible or agent_type in self.eligible


@dataclass(frozen=True, slots=True)
class GovernanceRule:
    """A thinking or identity rule of a governance profile, compiled to CEL.

    When ``condition`` holds and the proposal chose one of ``blocked_skills``, the rule
    fails: an ``ERROR`` rejects the proposal (its message goes into the retry prompt), a
    ``WARNING`` is recorded in the audit and never shown to the model."""

    id: str
    kind: Literal["thinking", "identity"]
    level: Level
    blocked_skills: frozenset[str]
    condition: CelCondition
    message: str
    location: SourceLocation


@dataclass(frozen=True, slots=True)
class ConstructSpec:
    """A construct the parser extracts (``TP_LABEL``): its keywords and its labels
    (empty for a free-text construct such as ``TP_REASON``)."""

    name: str
    keywords: tuple[str, ...]
    labels: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ActionSpec:
    """An action of an agent type: the skill it maps to, aliases, its description."""

    id: str
    aliases: tuple[str, ...]
    description: str


@dataclass(frozen=True, slots=True)
class ResponseField:
    """A field of the response format (``shared.response_format.fields``)."""

    key: str
    type: str
    required: bool
    description: str = ""
    construct: str = ""
    minimum: float | None = None
    maximum: float | None = None


@dataclass(frozen=True, slots=True)
class AgentTypeSpec:
    """An agent type: how its prompt is built, how answers are parsed, its governance."""

    name: str
    prompt_template: str
    decision_keywords: tuple[str, ...]
    default_skill: str
    skill_maps: tuple[tuple[str, tuple[tuple[str, str], ...]], ...]
    """``("", base map)`` then ``(flag, map)`` for each ``skill_map_<flag>``: the map of
    the last flag that is true in the agent's state applies."""
    quote_values: tuple[str, ...]
    constructs: tuple[ConstructSpec, ...]
    actions: tuple[ActionSpec, ...]
    governance: dict[str, tuple[GovernanceRule, ...]]
    temperature: float | None
    max_tokens: int | None
    location: SourceLocation

    def skill_map(self, state: dict[str, Any]) -> tuple[tuple[str, str], ...]:
        """The numeric skill map that applies to an agent in ``state``."""
        chosen = self.skill_maps[0][1] if self.skill_maps else ()
        for flag, mapping in self.skill_maps[1:]:
            if state.get(flag) is True:
                chosen = mapping
        return chosen


@dataclass(frozen=True, slots=True)
class AgentRow:
    """One agent as the CSV gives it."""

    id: str
    agent_type: str
    state: dict[str, Any]


@dataclass
class Experiment:
    """A loaded experiment. ``issues`` are its warnings (errors raise
    :class:`~skillwire.core.errors.ExperimentError`)."""

    root: Path
    name: str
    source: str
    """``experiment.yaml`` or ``reference`` (the framework's files as they are)."""
    skills: dict[str, SkillSpec]
    default_skill: str
    agent_types: dict[str, AgentTypeSpec]
    response_fields: tuple[ResponseField, ...]
    delimiters: tuple[str, str]
    rating_scale: str
    agents: tuple[AgentRow, ...]
    state_keys: tuple[str, ...]
    tables: dict[str, list[dict[str, Any]]]
    hooks_file: Path | None
    params: dict[str, Any]
    steps: int
    seed: int
    governance: str
    model: str
    concurrency: int
    max_retries: int
    max_reports_per_retry: int
    memory_window: int | None
    temperature: float
    inactive_when: CelCondition | None
    files: dict[str, str] = field(default_factory=dict)
    """Relative file name -> sha256 of every file the experiment read."""
    issues: list[SkillIssue] = field(default_factory=list)

    @property
    def profiles(self) -> list[str]:
        """Governance profiles every agent type defines."""
        names: set[str] | None = None
        for spec in self.agent_types.values():
            names = set(spec.governance) if names is None else names & set(spec.governance)
        return sorted(names or ())
