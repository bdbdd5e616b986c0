"""A skill as the engine runs it: the skill, its gate, and what the stages derive from it.

:class:`CompiledSkill` is built once per loaded skill object and holds everything that
depends on the skill alone: the compiled gate, the tools offered to the planner, the
sub-goals, each tool's required arguments, the names models see, and the intent and
planner instructions. :class:`CompiledSkills` is the one place a runtime keeps them,
and finds the skill of a stored job.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterable
from dataclasses import dataclass, replace
from typing import Any

from skillwire.core.chat import ToolSpec
from skillwire.core.errors import NotFoundError
from skillwire.core.job import JobRecord
from skillwire.engine.adapter import model_tool_name
from skillwire.engine.prompts import intent_data, intent_system, planner_system, tool_specs
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
    intent_system: str
    """The intent stage's instructions."""
    intent_data: dict[str, Any]
    """The intent catalogue as structure (``ChatRequest.data``)."""
    planner_system: str
    """The planner's instructions."""

    @classmethod
    def build(cls, skill: Skill, base: BasePolicy | None = None) -> CompiledSkill:
        """Compile ``skill``'s gate (over ``base``) and derive the rest."""
        gate = Gate.for_skill(skill, base=base)
        goals = tuple(workflows_to_subgoals(skill))
        scopes = workflow_scopes(skill)
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
            {model_tool_name(t.name): t.name for t in skill.tools},
            intent_system(skill),
            intent_data(skill),
            planner_system(skill, gate.policy),
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
    """The compiled skills of one runtime, each built once per skill object, and the
    skill of a stored job: from the resolver when there is one, else a skill this
    runtime started a job of, else loaded from the source the job recorded."""

    def __init__(self, base: BasePolicy, resolve: SkillResolver | None = None) -> None:
        self.base = base
        self._resolve = resolve
        self._by_object: dict[int, CompiledSkill] = {}
        self._started: dict[str, CompiledSkill] = {}

    def of(self, skill: Skill) -> CompiledSkill:
        """The compiled form of ``skill`` (built on first use)."""
        found = self._by_object.get(id(skill))
        if found is None or found.skill is not skill:
            found = CompiledSkill.build(skill, self.base)
            self._by_object[id(skill)] = found
        return found

    def starting(self, skill: Skill) -> CompiledSkill:
        """:meth:`of` ``skill``, for a job it starts: its jobs resume with it (the first
        skill object of an id started is kept) unless a resolver says otherwise."""
        compiled = self.of(skill)
        self._started.setdefault(skill.id, compiled)
        return compiled

    def of_record(self, record: JobRecord) -> CompiledSkill:
        """The compiled skill of a stored job. Raises NotFoundError when it is unknown
        and the job recorded no source."""
        if self._resolve is not None:
            return self.of(self._resolve(record))
        found = self._started.get(record.skill_id)
        if found is not None:
            return found
        from skillwire.skills import load_skill

        source = str(record.state.get("skill_source") or "")
        if not source:
            raise NotFoundError(f"job {record.id}: its skill '{record.skill_id}' is unknown")
        compiled = self.of(load_skill(source))
        self._started[compiled.skill.id] = compiled
        return compiled
