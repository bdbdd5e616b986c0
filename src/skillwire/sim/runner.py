"""The loop of spec 002, per step and per agent.

A step is a batch: every active agent decides from its own state and the world as the
step began (``begin_step``), independently of the others; the decisions are gathered in
agent order, the world's ``end_step`` update runs, and the audit records are returned in
agent order, whatever the order in which models answered. (A distributed worker could
decide any slice of a step's agents: nothing in a decision reads another agent.)

Per agent: context -> prompt -> proposer -> adapter -> validator chain (admissibility,
feasibility, institutional, effect safety, consistency) -> on rejection a retry prompt
naming the ``ERROR`` findings, up to ``max_retries`` -> then the default skill as a
recorded fallback. A skill executes on a copy of the agent's state; the keys it changed
are compared with its ``allowed_state_changes`` and the copy is kept only when every
change is allowed (otherwise the change is refused, rolled back and audited).
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from skillwire.core.errors import ModelError, UsageError
from skillwire.policy.arguments import same_value
from skillwire.sim.adapter import Proposal, parse_output, retry_prompt
from skillwire.sim.definitions import AgentTypeSpec, Experiment, SkillSpec
from skillwire.sim.governance import AgentHistory, Governance, RuleResult
from skillwire.sim.prompts import fill_template, options, options_text, response_format_text
from skillwire.sim.proposers import DecisionRequest, OfflineProposer, Proposer
from skillwire.sim.world import Agent, Hooks, World, call_mapping, load_hooks, plain_copy

__all__ = ["RunSettings", "Simulation", "encode_record"]

Record = dict[str, Any]


def encode_record(record: Mapping[str, Any]) -> str:
    """One audit line: keys sorted, ASCII only, no NaN (the same bytes on every run)."""
    return json.dumps(
        record, sort_keys=True, ensure_ascii=True, separators=(",", ":"), allow_nan=False
    )


@dataclass(frozen=True)
class RunSettings:
    """What a run may override of the experiment."""

    profile: str
    seed: int
    steps: int
    agents: int | None = None
    concurrency: int = 8


@dataclass
class _Decision:
    records: list[Record] = field(default_factory=list)
    executed: str | None = None


class Simulation:
    """One run of an experiment with one proposer (build, then :meth:`run` once)."""

    def __init__(
        self,
        experiment: Experiment,
        proposer: Proposer,
        settings: RunSettings,
        hooks: Hooks | None = None,
    ) -> None:
        if settings.profile not in experiment.profiles:
            known = ", ".join(experiment.profiles) or "none"
            raise UsageError(f"no governance profile '{settings.profile}' (known: {known})")
        self.experiment = experiment
        self.proposer = proposer
        self.settings = settings
        self.hooks = hooks or load_hooks(experiment)
        self.governance = Governance(experiment, settings.profile)
        self.world = World(
            settings.seed, plain_copy(experiment.params), experiment.tables, steps=settings.steps
        )
        rows = experiment.agents[: settings.agents] if settings.agents else experiment.agents
        self.agents = [Agent(a.id, a.agent_type, plain_copy(a.state)) for a in rows]
        self.histories: dict[str, AgentHistory] = {a.id: AgentHistory() for a in self.agents}
        self._offline = isinstance(proposer, OfflineProposer)
        if self._offline and (
            self.hooks.get("utilities") is None or self.hooks.get("appraisals") is None
        ):
            raise UsageError(
                "the offline proposer needs the world hooks utilities() and appraisals()"
            )
        self._semaphore = asyncio.Semaphore(max(1, settings.concurrency))
        self._formats = {
            name: response_format_text(
                experiment.response_fields,
                experiment.delimiters,
                next((c.labels for c in spec.constructs if c.labels), ()),
                [n for n, _ in spec.skill_map({})],
            )
            for name, spec in experiment.agent_types.items()
        }

    @property
    def initial(self) -> dict[str, dict[str, Any]]:
        """The agents' state before step 1 (after ``setup``)."""
        return {a.id: plain_copy(a.state) for a in self.agents}

    def setup(self) -> None:
        """Run the world's ``setup`` hook (once, before :meth:`step`)."""
        hook = self.hooks.get("setup")
        if hook is not None:
            hook(self.world, self.agents)

    async def step(self, step: int) -> list[Record]:
        """Decide, execute and update one step; its audit records in agent order."""
        self.world.step = step
        begin = self.hooks.get("begin_step")
        for agent in self.agents:
            agent.active = not self.governance.inactive(agent.state, self.histories[agent.id])
            agent.observation = {}
        if begin is not None:
            begin(self.world, self.agents)
        active = [a for a in self.agents if a.active]
        decisions = await asyncio.gather(*(self._decide(a, step) for a in active))
        executed: dict[str, str | None] = {}
        records: list[Record] = []
        for agent, decision in zip(active, decisions, strict=True):
            executed[agent.id] = decision.executed
            records.extend(decision.records)
            if decision.executed is not None:
                self.histories[agent.id] = self.histories[agent.id].plus(step, decision.executed)
        end = self.hooks.get("end_step")
        if end is not None:
            end(self.world, self.agents, executed)
        window = self.experiment.memory_window
        if window:
            for agent in self.agents:
                memory = agent.state.get("memory")
                if isinstance(memory, list) and len(memory) > window:
                    agent.state["memory"] = memory[-window:]
        return records

    def _prompt(self, agent: Agent, spec: AgentTypeSpec, offered: Sequence[tuple[str, str]]) -> str:
        memory = agent.state.get("memory")
        values = {
            "memory": "\n".join(f"- {m}" for m in memory)
            if isinstance(memory, list)
            else str(memory or ""),
            "options_text": options_text(spec, self.experiment, offered),
            "rating_scale": self.experiment.rating_scale,
            "response_format": self._formats[spec.name],
        }
        for key, value in call_mapping(self.hooks.get("prompt_fields"), self.world, agent).items():
            values[str(key)] = str(value)
        return fill_template(spec.prompt_template, values, spec.name)

    async def _decide(self, agent: Agent, step: int) -> _Decision:
        exp = self.experiment
        spec = exp.agent_types[agent.agent_type]
        offered = tuple(options(spec, exp, agent.state))
        prompt = self._prompt(agent, spec, offered)
        utilities: Mapping[str, float] = {}
        appraisals: Mapping[str, str] = {}
        if self._offline:
            utilities = call_mapping(self.hooks.get("utilities"), self.world, agent)
            appraisals = call_mapping(self.hooks.get("appraisals"), self.world, agent)
        history = self.histories[agent.id]
        out = _Decision()
        errors: list[str] = []
        rejected: list[str] = []
        attempt = 0
        for attempt in range(1, exp.max_retries + 2):
            text = (
                prompt if attempt == 1 else retry_prompt(prompt, errors, exp.max_reports_per_retry)
            )
            request = DecisionRequest(
                step, agent.id, spec, attempt, text, offered, tuple(rejected), utilities, appraisals
            )
            try:
                async with self._semaphore:
                    raw = await self.proposer.propose(request)
            except ModelError as exc:
                result = RuleResult(
                    "model", "call", "ERROR", False, f"the model call failed: {exc}"
                )
                out.records.append(
                    self._record(step, agent, attempt, None, None, [result], "rejected")
                )
                errors = [result.message]
                continue
            if raw is None:
                result = RuleResult(
                    "replay",
                    "unrecorded",
                    "ERROR",
                    False,
                    "the recorded run has no answer for this call",
                )
                out.records.append(
                    self._record(step, agent, attempt, None, None, [result], "rejected")
                )
                break
            parsed = parse_output(
                raw, spec, agent.state, exp.response_fields, exp.delimiters, list(exp.skills)
            )
            if isinstance(parsed, list):
                results = [
                    RuleResult("format", "response_format", "ERROR", False, e) for e in parsed
                ]
                out.records.append(
                    self._record(step, agent, attempt, raw, None, results, "rejected")
                )
                errors = parsed
                continue
            pre, post = self.governance.check(
                agent.agent_type, parsed.skill, agent.state, parsed.constructs, history, step
            )
            if any(r.blocks for r in (*pre, *post)):
                out.records.append(
                    self._record(step, agent, attempt, raw, parsed, [*pre, *post], "rejected")
                )
                errors = [r.message for r in (*pre, *post) if r.blocks]
                rejected.append(parsed.skill)
                continue
            skill = exp.skills[parsed.skill]
            effect, after = self._execute(skill, agent)
            if after is None:
                out.records.append(
                    self._record(
                        step, agent, attempt, raw, parsed, [*pre, *effect, *post], "rejected"
                    )
                )
                errors = [r.message for r in effect if r.blocks]
                rejected.append(parsed.skill)
                continue
            before, agent.state = agent.state, after
            out.records.append(
                self._record(
                    step,
                    agent,
                    attempt,
                    raw,
                    parsed,
                    [*pre, *effect, *post],
                    "approved",
                    executed=skill.id,
                    before=before,
                    after=after,
                )
            )
            out.executed = skill.id
            return out
        self._fallback(agent, spec, step, attempt + 1, out)
        return out

    def _fallback(
        self, agent: Agent, spec: AgentTypeSpec, step: int, attempt: int, out: _Decision
    ) -> None:
        exp = self.experiment
        default = spec.default_skill or exp.default_skill
        pre, _ = self.governance.check(
            agent.agent_type,
            default,
            agent.state,
            {},
            self.histories[agent.id],
            step,
            consistency=False,
        )
        proposal = {"skill": default, "fallback": True}
        if any(r.blocks for r in pre):
            out.records.append(self._record(step, agent, attempt, None, proposal, pre, "fallback"))
            return
        effect, after = self._execute(exp.skills[default], agent)
        if after is None:
            out.records.append(
                self._record(step, agent, attempt, None, proposal, [*pre, *effect], "fallback")
            )
            return
        before, agent.state = agent.state, after
        out.records.append(
            self._record(
                step,
                agent,
                attempt,
                None,
                proposal,
                [*pre, *effect],
                "fallback",
                executed=default,
                before=before,
                after=after,
            )
        )
        out.executed = default

    def _execute(
        self, skill: SkillSpec, agent: Agent
    ) -> tuple[list[RuleResult], dict[str, Any] | None]:
        """Run the skill's hook on a copy of the state; the copy, or None (rolled back)."""
        sandbox = plain_copy(agent.state)
        try:
            self.hooks.skills[skill.id](sandbox, plain_copy(agent.observation))
        except Exception as exc:  # a hook's failure is the run's record, not its end
            return [
                RuleResult(
                    "effect_safety",
                    "execution",
                    "ERROR",
                    False,
                    f"{skill.id} failed ({type(exc).__name__}: {exc}); nothing was changed",
                )
            ], None
        keys = sorted(set(agent.state) | set(sandbox))
        missing = object()
        changed = [
            k for k in keys if not same_value(agent.state.get(k, missing), sandbox.get(k, missing))
        ]
        outside = [k for k in changed if k not in skill.allowed_state_changes]
        allowed = ", ".join(sorted(skill.allowed_state_changes)) or "nothing"
        if outside:
            return [
                RuleResult(
                    "effect_safety",
                    "allowed_state_changes",
                    "ERROR",
                    False,
                    f"{skill.id} changed {', '.join(outside)}, outside its allowed_state_changes "
                    f"({allowed}): refused and rolled back",
                )
            ], None
        bad = _not_plain(sandbox)
        if bad:
            return [
                RuleResult(
                    "effect_safety",
                    "plain_state",
                    "ERROR",
                    False,
                    f"{skill.id} left {bad} in the state, which is not plain JSON: "
                    "refused and rolled back",
                )
            ], None
        done = ", ".join(changed) or "nothing"
        return [
            RuleResult(
                "effect_safety",
                "allowed_state_changes",
                "ERROR",
                True,
                f"changed {done} (allowed: {allowed})",
            )
        ], sandbox

    def _record(
        self,
        step: int,
        agent: Agent,
        attempt: int,
        raw: str | None,
        proposal: Proposal | Mapping[str, Any] | None,
        results: Sequence[RuleResult],
        outcome: str,
        *,
        executed: str | None = None,
        before: Mapping[str, Any] | None = None,
        after: Mapping[str, Any] | None = None,
    ) -> Record:
        """One audit record; with no skill executed the agent's state is before and after."""
        before = agent.state if before is None else before
        after = before if after is None else after
        shown = (
            proposal.to_dict()
            if isinstance(proposal, Proposal)
            else (dict(proposal) if proposal is not None else None)
        )
        return {
            "step": step,
            "agent": agent.id,
            "agent_type": agent.agent_type,
            "attempt": attempt,
            "raw_output": raw,
            "proposal": shown,
            "results": [r.to_dict() for r in results],
            "outcome": outcome,
            "executed_skill": executed,
            "state_before": plain_copy(dict(before)),
            "state_after": plain_copy(dict(after)),
        }


def _not_plain(value: Any, path: str = "state") -> str:
    """The path of the first value that is not plain JSON, or ''."""
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return f"{path} (a key that is not text)"
            found = _not_plain(item, f"{path}.{key}")
            if found:
                return found
        return ""
    if isinstance(value, list):
        for index, item in enumerate(value):
            found = _not_plain(item, f"{path}[{index}]")
            if found:
                return found
        return ""
    if isinstance(value, float):
        return "" if math.isfinite(value) else path
    return "" if value is None or isinstance(value, str | int | bool) else path


ProgressCallback = Callable[[int, int], None]
