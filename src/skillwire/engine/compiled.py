"""A skill as the engine runs it: the skill, its gate, and what the stages derive from it.

:class:`CompiledSkill` is built once per loaded skill object and holds everything that
depends on the skill alone: the compiled gate, the tools offered to the planner, the
sub-goals, each tool's required arguments, the names models see, and the intent and
planner instructions. :class:`CompiledSkills` is the one place a runtime keeps them,
and finds the skill of a stored job.

A skill is compiled with the tools the runtime's executors cannot run
(:meth:`~skillwire.core.executor.ExecutorRegistry.unavailable`: a credential unset
under ``missingCredentialBehavior: continue``, an MCP server that does not offer the
tool, ...): they are left out of the tools the planner is offered, its instructions say
which and why in one line, and the gate blocks a call of one (``TOOL_UNAVAILABLE``)
before any executor runs. Before a job of a skill starts or goes on, the executors are
given the chance to learn what needs I/O (:meth:`CompiledSkills.prepare`); the skill is
compiled again when what is unavailable changed.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from skillwire.core.chat import ToolSpec
from skillwire.core.errors import NotFoundError
from skillwire.core.executor import ExecutorRegistry
from skillwire.core.job import JobRecord
from skillwire.engine.adapter import model_tool_name
from skillwire.engine.intent import EntityChecks, entity_checks
from skillwire.engine.prompts import (
    PlannerIntent,
    gate_head,
    intent_data,
    intent_system,
    planner_intents,
    planner_system,
    tool_specs,
)
from skillwire.policy.access import BasePolicy
from skillwire.policy.gate import Gate
from skillwire.policy.workflows import (
    IntentScope,
    SubGoal,
    active_scope,
    applies,
    workflow_scopes,
    workflows_to_subgoals,
)
from skillwire.skills.model import Skill
from skillwire.skills.model_tools import Tool

__all__ = ["CompiledSkill", "CompiledSkills", "SkillResolver"]

SkillResolver = Callable[[JobRecord], Skill]
"""Finds the skill of a stored job (by ``skill_id`` or the recorded source)."""


@dataclass(frozen=True, slots=True)
class CompiledSkill:
    """One skill with its gate and everything the stages read of it, built once.

    The dicts and tuples here are shared by every job of the skill: read, never
    changed."""

    skill: Skill
    gate: Gate
    tools: tuple[ToolSpec, ...]
    """The tools offered to the planner (every tool not denied outright, and
    ``final_answer``)."""
    subgoals: tuple[SubGoal, ...]
    """The sub-goals the workflows make."""
    goal_dicts: tuple[dict[str, Any], ...]
    """:attr:`subgoals` in JSON form."""
    done_goal_dicts: tuple[dict[str, Any], ...]
    """:attr:`subgoals` in JSON form, each marked done."""
    goal_scopes: tuple[IntentScope, ...]
    """The intents each of :attr:`subgoals` applies to (its workflow's scope)."""
    intent_ids: frozenset[str]
    """The skill's intent ids."""
    required: dict[str, tuple[str, ...]]
    """Each tool's required arguments, by tool name."""
    model_tool_names: dict[str, str]
    """Each tool's name as models see it, to its name in the skill."""
    model_names: dict[str, str]
    """The inverse of :attr:`model_tool_names`: each tool's name in the skill, to the
    name models see."""
    intent_system: str
    """The intent stage's instructions."""
    intent_data: dict[str, Any]
    """The intent catalogue as structure (``ChatRequest.data``)."""
    planner_system: str
    """The planner's instructions."""
    planner_intents: dict[str, PlannerIntent]
    """What the planner is told of each intent, by id."""
    unavailable: Mapping[str, str]
    """The tools the runtime cannot run (full name to why): not offered, blocked."""
    entity_checks: EntityChecks
    """The schema check of each entity the intents declare (the intent stage's)."""
    gate_head: str
    """The finalization gate's instructions before the reply."""

    @classmethod
    def build(
        cls,
        skill: Skill,
        base: BasePolicy | None = None,
        unavailable: Mapping[str, str] | None = None,
    ) -> CompiledSkill:
        """Compile ``skill``'s gate (over ``base``, blocking the ``unavailable`` tools)
        and derive the rest."""
        unavailable = dict(unavailable or {})
        gate = Gate.for_skill(skill, base=base, unavailable=unavailable)
        goals = tuple(workflows_to_subgoals(skill))
        scopes = workflow_scopes(skill)
        model_tools = {model_tool_name(t.name): t.name for t in skill.tools}
        return cls(
            skill,
            gate,
            tool_specs(skill, gate.policy),
            goals,
            tuple(g.to_dict() for g in goals),
            tuple(replace(g, status="done").to_dict() for g in goals),
            tuple(scopes.get(g.from_workflow) for g in goals),
            frozenset(i.id for i in skill.intents.supported),
            {
                t.name: tuple(
                    n for n in t.input_schema().get("required") or [] if isinstance(n, str)
                )
                for t in skill.tools
            },
            model_tools,
            {full: model for model, full in model_tools.items()},
            intent_system(skill),
            intent_data(skill),
            planner_system(skill, gate.policy, unavailable),
            planner_intents(skill),
            unavailable,
            entity_checks(skill.intents.supported),
            gate_head(skill, gate.policy),
        )

    def goals_for(self, intents: Iterable[str], done: Container[str] = ()) -> list[dict[str, Any]]:
        """The JSON forms of the sub-goals of the workflows that apply to a job with
        these active ``intents`` (every workflow when none is known), each marked done
        when its tool is in ``done``."""
        active = active_scope(self.intent_ids, intents)
        return [
            finished if goal["tool"] in done else goal
            for goal, finished, scope in zip(
                self.goal_dicts, self.done_goal_dicts, self.goal_scopes, strict=True
            )
            if applies(scope, active)
        ]


class CompiledSkills:
    """The compiled skills of one runtime, each built once per skill object (and again
    when what its ``executors`` cannot run changed), and the skill of a stored job:
    from the resolver when there is one, else a skill this runtime started a job of,
    else loaded from the source the job recorded."""

    def __init__(
        self,
        base: BasePolicy,
        resolve: SkillResolver | None = None,
        executors: ExecutorRegistry[Tool] | None = None,
    ) -> None:
        self.base = base
        self._resolve = resolve
        self._executors = executors
        self._by_object: dict[int, CompiledSkill] = {}
        self._started: dict[str, Skill] = {}

    def unavailable(self, skill: Skill) -> Mapping[str, str]:
        """The tools of ``skill`` the executors cannot run, as far as they know now."""
        if self._executors is None:
            return {}
        return self._executors.unavailable(skill.tools, skill.root)

    async def prepare(self, skill: Skill) -> None:
        """Let the executors learn what they need I/O for about ``skill``'s tools (the
        MCP servers its tools name list their tools, once per runtime)."""
        if self._executors is not None:
            await self._executors.prepare(skill.tools, skill.root)

    def of(self, skill: Skill) -> CompiledSkill:
        """The compiled form of ``skill`` (built on first use, and again when what the
        executors cannot run of it changed)."""
        unavailable = self.unavailable(skill)
        found = self._by_object.get(id(skill))
        if found is None or found.skill is not skill or found.unavailable != unavailable:
            found = CompiledSkill.build(skill, self.base, unavailable)
            self._by_object[id(skill)] = found
        return found

    async def starting(self, skill: Skill) -> CompiledSkill:
        """:meth:`of` ``skill`` once prepared, for a job it starts: its jobs resume with
        it (the first skill object of an id started is kept) unless a resolver says
        otherwise."""
        await self.prepare(skill)
        compiled = self.of(skill)
        self._started.setdefault(skill.id, skill)
        return compiled

    async def of_record(self, record: JobRecord) -> CompiledSkill:
        """The compiled skill of a stored job, prepared. Raises NotFoundError when it is
        unknown and the job recorded no source."""
        skill = self._skill_of(record)
        await self.prepare(skill)
        return self.of(skill)

    def _skill_of(self, record: JobRecord) -> Skill:
        if self._resolve is not None:
            return self._resolve(record)
        found = self._started.get(record.skill_id)
        if found is not None:
            return found
        from skillwire.skills import load_skill

        source = str(record.state.get("skill_source") or "")
        if not source:
            raise NotFoundError(f"job {record.id}: its skill '{record.skill_id}' is unknown")
        skill = load_skill(source)
        self._started[skill.id] = skill
        return skill
