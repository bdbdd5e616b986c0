"""``experiment.yaml``: skillwire's own experiment file (the JSON Schema is generated
from these models: ``python -m skillwire.sim.schema --write schemas``).

It names the parts of a governed simulation: the skill registry and the agent types
(in the reference framework's formats, read as they are), the agents' CSV, the world's
Python hooks and tables, the number of steps, the seed, the governance profile and the
model. Unknown keys are errors: a typo here would change a study silently.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["AgentsSpec", "ExperimentFile", "OfflineSpec", "WorldSpec"]


class _Part(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, use_attribute_docstrings=True)


class AgentsSpec(_Part):
    """Where the agents come from: one CSV row per agent, its columns the initial state."""

    file: str = Field(min_length=1)
    """The CSV file (relative to the experiment's folder); a byte order mark is allowed."""
    id_column: str = "id"
    """The column holding each agent's unique id."""
    agent_type: str | None = None
    """The agent type of every row (one of ``agent_types``); or give ``type_column``."""
    type_column: str | None = None
    """A column naming each row's agent type."""
    list_columns: dict[str, str] = Field(default_factory=dict)
    """Columns holding lists, with their separator (``{memory: " | "}``)."""
    inactive_when: str | None = None
    """A condition over the agent's state: while it holds, the agent no longer decides
    (``relocated``). An agent that executed a ``permanent`` skill never decides again
    either."""


class WorldSpec(_Part):
    """The world: Python hooks and the tables and parameters they read."""

    hooks: str = Field(min_length=1)
    """A Python file in the experiment's folder: ``setup``, ``begin_step``,
    ``prompt_fields``, ``end_step``, the skills' implementation functions and, for the
    offline proposer, ``utilities`` and ``appraisals`` (docs/sim.md)."""
    tables: dict[str, str] = Field(default_factory=dict)
    """Named CSV files the hooks read (``{flood_years: flood_years.csv}``)."""
    params: dict[str, Any] = Field(default_factory=dict)
    """Parameters handed to the hooks as they are (plain JSON values)."""


class OfflineSpec(_Part):
    """The seeded offline proposer (the default model: no LLM, no network)."""

    temperature: float = Field(default=0.5, gt=0)
    """Softmax temperature over the world's utilities."""


class ExperimentFile(_Part):
    """A governed simulation (spec 002): agents x steps, every decision validated."""

    version: Literal[1] = 1
    """The experiment file's format version."""
    name: str = Field(min_length=1)
    """A name for reports."""
    registry: str = "skill_registry.yaml"
    """The skill registry ("institutional charter"): skills, preconditions, institutional
    constraints, allowed state changes, implementation mapping, default skill."""
    agent_types: str = "agent_types.yaml"
    """Agent types: response format, parsing rules, prompt template, governance profiles."""
    agents: AgentsSpec
    """The agents."""
    world: WorldSpec
    """The world's hooks."""
    steps: int = Field(default=10, ge=1, le=100_000)
    """Steps (years) to simulate."""
    seed: int = 42
    """Seed of every random draw (world and offline proposer)."""
    governance: str = "strict"
    """The governance profile of the agent types to apply (``strict``, ``relaxed``,
    ``disabled`` in the flood example)."""
    model: str = "offline"
    """``offline`` (the seeded proposer), a model configured in skillwire.toml, or
    ``scripted:FILE``."""
    concurrency: int = Field(default=8, ge=1, le=1024)
    """How many agents of one step may wait on a model at once."""
    max_retries: int | None = Field(default=None, ge=0, le=20)
    """Retries after a rejection (default: the agent types' ``governance.max_retries``)."""
    offline: OfflineSpec = Field(default_factory=OfflineSpec)
    """Settings of the offline proposer."""
