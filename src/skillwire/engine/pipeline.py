"""The stages of a job: detect intent, bootstrap, the planner loop, finalize, polish.

:meth:`Pipeline.advance` moves a job forward until it pauses or ends. Every state
change is an event; the job is saved where crash safety needs it (see
:mod:`skillwire.engine.run`): around a tool that is not idempotent, at every pause, at
the end. A proposal that paused for input or approval is re-checked by the gate on
resume without asking the planner again; a paused job spends nothing.
"""

from __future__ import annotations

import json
import weakref
from dataclasses import dataclass, replace
from typing import Any

from skillwire.core.chat import ChatMessage, ChatModel, ToolCall, ToolSpec
from skillwire.core.errors import BudgetExhausted, ModelError, ParseFailure
from skillwire.core.job import JobStatus, OutcomeClass
from skillwire.core.plainjson import plain_dumps
from skillwire.core.proposal import DoNothing, FinalAnswer, Proposal, ToolProposal
from skillwire.engine.adapter import ModelAdapter, model_tool_name
from skillwire.engine.finalization import FinalizationGate, ReplyPolisher
from skillwire.engine.prompts import intent_request, planner_request, tool_specs
from skillwire.engine.run import JobRun
from skillwire.policy.arguments import FieldCheck
from skillwire.policy.call import args_key
from skillwire.policy.decisions import Allow, Block, Decision, NeedInput
from skillwire.policy.gate import Gate
from skillwire.policy.workflows import SubGoal, workflows_to_subgoals
from skillwire.tools import Executors

__all__ = ["Pipeline", "parse_json_object"]


def parse_json_object(text: str) -> dict[str, Any] | None:
    """The JSON object in a reply (a ```json fence allowed), or None."""
    body = text.strip()
    if body.startswith("```"):
        body = body.split("\n", 1)[1] if "\n" in body else ""
        body = body.rsplit("```", 1)[0]
    try:
        value = json.loads(body)
    except ValueError:
        start, end = body.find("{"), body.rfind("}")
        if start < 0 or end <= start:
            return None
        try:
            value = json.loads(body[start : end + 1])
        except ValueError:
            return None
    return value if isinstance(value, dict) else None


@dataclass(frozen=True, slots=True)
class _SkillFacts:
    """What the planner stage reads of a skill, computed once per compiled gate."""

    tools: tuple[ToolSpec, ...]
    subgoals: tuple[SubGoal, ...]
    done_subgoals: tuple[SubGoal, ...]
    required: dict[str, tuple[str, ...]]
    model_tool_names: dict[str, str]
    """Each tool's name as models see it, to its name in the skill."""
    goal_dicts: tuple[dict[str, Any], ...] = ()
    done_goal_dicts: tuple[dict[str, Any], ...] = ()
    """:attr:`subgoals` and :attr:`done_subgoals` in JSON form (read, never changed)."""


class Pipeline:
    """Runs jobs forward; shared by every job of a runtime."""

    def __init__(self, model: ChatModel, gate_model: ChatModel, executors: Executors) -> None:
        self.model = model
        self.executors = executors
        self.adapter = ModelAdapter()
        self.finalizer = FinalizationGate(gate_model)
        self.polisher = ReplyPolisher(model)
        self._facts: weakref.WeakKeyDictionary[Gate, _SkillFacts] = weakref.WeakKeyDictionary()

    def facts(self, run: JobRun) -> _SkillFacts:
        """The tool specs, sub-goals and required arguments of the run's skill."""
        found = self._facts.get(run.gate)
        if found is None:
            skill = run.skill
            required = {
                t.name: tuple(
                    n for n in t.input_schema().get("required") or [] if isinstance(n, str)
                )
                for t in skill.tools
            }
            goals = tuple(workflows_to_subgoals(skill))
            found = _SkillFacts(
                tool_specs(skill, run.gate.policy),
                goals,
                tuple(replace(g, status="done") for g in goals),
                required,
                {model_tool_name(t.name): t.name for t in skill.tools},
                tuple(g.to_dict() for g in goals),
                tuple(replace(g, status="done").to_dict() for g in goals),
            )
            self._facts[run.gate] = found
        return found

    async def advance(self, run: JobRun) -> None:
        """Work on the job until it pauses or ends."""
        try:
            if run.state.phase == "intent":
                await self._detect_intent(run)
            if run.state.phase == "planning":
                await self._plan(run)
        except BudgetExhausted as exc:
            run.event(
                "engine",
                "budget_exhausted",
                str(exc),
                reason_code=OutcomeClass.ENGINE_BUDGET_EXHAUSTED,
            )
            run.set_status(JobStatus.FAILED, OutcomeClass.ENGINE_BUDGET_EXHAUSTED)
            run.state.phase = "done"
            await run.persist()
        except ModelError as exc:
            run.event(
                "engine",
                "model_error",
                f"{type(exc).__name__}: {exc}",
                reason_code=OutcomeClass.INTERNAL_ERROR,
            )
            run.set_status(JobStatus.FAILED, OutcomeClass.INTERNAL_ERROR)
            run.state.phase = "done"
            await run.persist()

    # -- intent -------------------------------------------------------------------
    async def _detect_intent(self, run: JobRun) -> None:
        skill = run.skill
        response = await run.call_model(self.model, intent_request(skill, run.state.message))
        data = parse_json_object(response.text) or {}
        intent_id = data.get("intent")
        intent = next((i for i in skill.intents.supported if i.id == intent_id), None)
        if intent is None:
            await self._out_of_domain(run, str(intent_id) if intent_id else "")
            return
        entities, rejected = _entities(intent, data.get("entities"))
        run.state.intent = intent.id
        run.state.entities = entities
        run.event(
            "intent",
            "intent_detected",
            intent.id,
            intent=intent.id,
            entities=entities,
            rejected_entities=rejected,
            confidence=data.get("confidence"),
        )
        policy = run.gate.policy
        run.event(
            "bootstrap",
            "bootstrapped",
            "sub-goals built, rules compiled",
            subgoals=[g.to_dict() for g in self.facts(run).subgoals],
            compiled_rules=len(policy.rules),
            planner_tokens=policy.planner_tokens,
        )
        run.state.phase = "planning"
        run.state.add_message(ChatMessage("user", run.state.message))

    async def _out_of_domain(self, run: JobRun, said: str) -> None:
        ood = run.skill.intents.resolved_out_of_domain()
        reply = ood.message or "Sorry, I can't help with that."
        if ood.suggest_domains:
            reply += " You may want: " + ", ".join(ood.suggest_domains) + "."
        run.event(
            "intent",
            "out_of_domain",
            reply,
            reason_code=OutcomeClass.OUT_OF_DOMAIN,
            model_said=said,
            action=ood.action,
        )
        run.record.reply = reply
        run.state.phase = "done"
        status = JobStatus.ESCALATED if ood.action == "escalate" else JobStatus.COMPLETED
        run.set_status(status, OutcomeClass.OUT_OF_DOMAIN)
        await run.persist()

    # -- the planner loop -----------------------------------------------------------
    async def _plan(self, run: JobRun) -> None:
        while run.state.phase == "planning":
            if run.state.pending is not None:
                waiting_call = ToolProposal.from_dict(run.state.pending)
                if await self._handle_tool(run, waiting_call):
                    return
                continue
            if run.state.iterations >= run.max_iterations():
                raise BudgetExhausted(f"iteration budget of {run.max_iterations()} used up")
            run.state.iterations += 1
            proposal, call_id = await self._propose(run)
            if isinstance(proposal, ToolProposal):
                proposal = ToolProposal(
                    proposal.tool,
                    proposal.args,
                    call_id,
                    proposal.stated_tool,
                    proposal.stated_args,
                    proposal.reasoning,
                )
                run.event(
                    "planner",
                    "proposal",
                    f"{proposal.tool}",
                    tool=proposal.tool,
                    args=proposal.args,
                    iteration=run.state.iterations,
                )
                proposal = _with_given_inputs(run, proposal, self.facts(run).required)
                if _denied_before(run, proposal):
                    continue
                if await self._handle_tool(run, proposal):
                    return
            elif isinstance(proposal, FinalAnswer):
                if await self.finalizer.finalize(run, proposal, call_id, self.polisher):
                    return
            else:
                run.event("planner", "do_nothing", proposal.reason, iteration=run.state.iterations)
                run.state.add_message(
                    ChatMessage(
                        "user",
                        f"No action was taken ({proposal.reason}). Continue with one tool call.",
                    )
                )

    async def _propose(self, run: JobRun) -> tuple[Proposal, str]:
        facts = self.facts(run)
        tools = facts.tools
        retries = 0
        while True:
            request = planner_request(
                run.skill,
                run.gate.policy,
                _subgoals(run, facts),
                _visible_state(run, facts),
                run.state.messages(),
                tools,
                run.skill.engine_config().temperature,
            )
            response = await run.call_model(self.model, request)
            try:
                proposal, call = self.adapter.parse(response)
            except ParseFailure as exc:
                run.event("planner", "parse_error", "; ".join(exc.errors), errors=exc.errors)
                retries += 1
                summary = response.text.strip()[:500] or "(a reply that could not be used)"
                run.state.add_message(ChatMessage("assistant", summary))
                if retries > run.limits.max_parse_retries:
                    return DoNothing(f"no usable reply after {retries} tries"), ""
                run.state.add_message(ChatMessage("user", self.adapter.retry_prompt(exc.errors)))
                continue
            call_id = call.id if call and call.id else f"call_{run.state.call_seq}"
            if call is not None:
                run.state.add_message(
                    ChatMessage(
                        "assistant",
                        response.text,
                        (ToolCall(call.name, call.arguments, call.raw_arguments, call_id),),
                    )
                )
            return proposal, call_id

    async def _handle_tool(self, run: JobRun, proposal: ToolProposal) -> bool:
        """Gate, then execute or pause. True when the job paused."""
        state = run.state
        decision = run.gate.check(
            proposal.tool,
            proposal.args,
            context=state.context,
            entities=state.entities,
            history=state.runs(),
            inputs=state.inputs,
            approvals=state.approvals(),
            intent=state.intent,
            stated_tool=proposal.stated_tool,
            stated_args=proposal.stated_args,
        )
        _record_decision(run, decision)
        if isinstance(decision, Allow):
            state.pending = None
            await self._execute(run, proposal, decision)
            return False
        if isinstance(decision, Block):
            state.pending = None
            text = "; ".join(r.message for r in decision.reasons)
            _answer_call(
                run,
                proposal.call_id,
                f"BLOCKED by the skill's rules: {text}. The call did not run.",
            )
            return False
        state.pending = proposal.to_dict()
        if isinstance(decision, NeedInput):
            state.pause_kind = "input"
            run.pause(
                run.new_waiting(
                    str(decision.reasons[0].code),
                    list(decision.requested_fields),
                    decision.prompt,
                    field_schemas=decision.field_schemas,
                ),
                OutcomeClass.USER_ACTION_REQUIRED,
            )
        else:
            state.pause_kind = "approval"
            reason = decision.reason_text
            prompt = (
                f"{decision.approver} approval needed: {decision.tool} "
                f"{json.dumps(decision.args, sort_keys=True)} ({reason})"
            )
            run.pause(
                run.new_waiting(
                    str(decision.reasons[0].code),
                    [],
                    prompt,
                    tool=decision.tool,
                    arguments=dict(decision.args),
                    approver=decision.approver,
                    reason=reason,
                ),
                OutcomeClass.APPROVAL_REQUIRED,
            )
        await run.persist()
        return True

    async def _execute(self, run: JobRun, proposal: ToolProposal, decision: Allow) -> None:
        tool = run.skill.tool(decision.tool)
        assert tool is not None  # the gate allowed it, so it exists
        key = f"{run.id}:{len(run.state.history)}"
        await self.run_tool(run, tool.name, decision.args, key, proposal.call_id)

    async def run_tool(
        self, run: JobRun, name: str, args: dict[str, Any], key: str, call_id: str
    ) -> None:
        """Execute an allowed call and record its outcome (also used by recovery).

        A tool that is not idempotent runs only after the job is saved with the call
        marked in flight, and the job is saved again right after it: a crash in between
        leaves the marker, and recovery asks an operator rather than run it twice. An
        idempotent tool's run is saved with the next save.
        """
        state = run.state
        tool = run.skill.tool(name)
        assert tool is not None
        state.in_flight = {"tool": tool.name, "args": args, "key": key, "call_id": call_id}
        run.event(
            "execute", "tool_started", tool.name, tool=tool.name, args=args, idempotency_key=key
        )
        if tool.idempotent:
            await run.claim()
        else:
            await run.persist()
        root = run.skill.root
        # A run that waits gives its turn back meanwhile (turns.py); executors turn
        # errors into outcomes, so only a cancellation skips taking it again.
        had_turn = self.executors.waits(tool, root) and run.turn.give()
        outcome = await self.executors.execute(
            tool, dict(args), idempotency_key=key, skill_root=root
        )
        if had_turn:
            await run.turn.take()
        state.in_flight = None
        state.history.append(
            {
                "tool": tool.name,
                "args": args,
                "result": outcome.result,
                "ok": outcome.ok,
                "error": outcome.error,
                "state_changes": outcome.state_changes,
            }
        )
        if outcome.ok:
            state.evidence += 1
            run.event(
                "execute",
                "tool_finished",
                tool.name,
                tool=tool.name,
                result=outcome.result,
                state_changes=outcome.state_changes,
            )
            _answer_call(run, call_id, _result_text(outcome.result))
        else:
            run.event("execute", "tool_failed", outcome.error, tool=tool.name)
            _answer_call(run, call_id, f"ERROR: {outcome.error}")
        if not tool.idempotent:
            await run.persist()


def _result_text(result: Any) -> str:
    """A tool result as the planner reads it: compact JSON (orjson for a plain value,
    else the standard library, anything odd as its ``str``)."""
    data = plain_dumps(result)
    return data.decode() if data is not None else json.dumps(result, default=str)


def _answer_call(run: JobRun, call_id: str, content: str) -> None:
    """The tool message that answers the planner's call ``call_id``."""
    if call_id:
        run.state.add_message(ChatMessage("tool", content, tool_call_id=call_id))
    else:
        run.state.add_message(ChatMessage("user", content))


def _absent(value: Any) -> bool:
    return value is None or value == ""


def _with_given_inputs(
    run: JobRun, proposal: ToolProposal, required_by_tool: dict[str, tuple[str, ...]]
) -> ToolProposal:
    """The proposal with required arguments it lacks taken from input the user gave.

    The user is asked for a value once per job: when the planner later leaves out an
    argument the user already gave, the platform fills it in rather than ask again.
    """
    inputs = run.state.inputs
    tool = run.skill.tool(proposal.tool) if inputs else None
    if tool is None:
        return proposal
    required = required_by_tool.get(tool.name, ())
    filled = {
        name: inputs[name]
        for name in required
        if name in inputs and _absent(proposal.args.get(name))
    }
    if not filled:
        return proposal
    run.event(
        "planner", "inputs_applied", ", ".join(sorted(filled)), tool=proposal.tool, inputs=filled
    )
    return replace(proposal, args={**proposal.args, **filled})


def _denied_before(run: JobRun, proposal: ToolProposal) -> bool:
    """True (and the planner told) when this exact call was denied earlier in the job:
    the approver is not asked twice for what they refused."""
    if not run.state.denials:
        return False
    tool = run.skill.tool(proposal.tool)
    name = tool.name if tool is not None else proposal.tool
    key = args_key(name, proposal.args)
    denial = next((d for d in run.state.denials if args_key(d["tool"], d["args"]) == key), None)
    if denial is None:
        return False
    run.event(
        "gate",
        "denied_before",
        f"{name} was denied by {denial['role']}",
        reason_code="APPROVAL_DENIED",
        tool=name,
        args=proposal.args,
    )
    _answer_call(
        run,
        proposal.call_id,
        f"DENIED earlier by {denial['role']}: {name} with these arguments does not run.",
    )
    return True


def _record_decision(run: JobRun, decision: Decision) -> None:
    first = decision.reasons[0] if decision.reasons else None
    run.event(
        "gate",
        "gate_decision",
        f"{decision.kind}: {decision.tool}",
        reason_code=str(first.code) if first else "",
        decision=decision.kind,
        tool=decision.tool,
        args=decision.args,
        reasons=[r.to_dict() for r in decision.reasons],
    )


def _entities(intent: Any, raw: Any) -> tuple[dict[str, Any], list[str]]:
    """Declared entities with valid values; the names of values refused."""
    if not isinstance(raw, dict):
        return {}, []
    kept: dict[str, Any] = {}
    rejected: list[str] = []
    for spec in intent.entities:
        if spec.name not in raw or raw[spec.name] in (None, ""):
            continue
        value = raw[spec.name]
        if FieldCheck(spec.name, spec.json_schema()).problem(value) is None:
            kept[spec.name] = value
        else:
            rejected.append(spec.name)
    return kept, rejected


def _subgoals(run: JobRun, facts: _SkillFacts) -> list[dict[str, Any]]:
    """The sub-goals' JSON forms, each marked done once its tool has run."""
    done = {h["tool"] for h in run.state.history if h.get("ok")}
    return [
        finished if goal["tool"] in done else goal
        for goal, finished in zip(facts.goal_dicts, facts.done_goal_dicts, strict=True)
    ]


def _visible_state(run: JobRun, facts: _SkillFacts) -> dict[str, Any]:
    state = run.state
    return {
        "intent": state.intent,
        "entities": state.entities,
        "inputs": state.inputs,
        "results": [
            {
                "tool": h["tool"],
                "args": h["args"],
                "ok": h.get("ok", True),
                "result": h.get("result"),
                "error": h.get("error", ""),
            }
            for h in state.history
        ],
        "model_tool_names": facts.model_tool_names,
    }
