"""The stages of a job: detect intent, bootstrap, the planner loop, finalize, polish.

:meth:`Pipeline.advance` moves a job forward until it pauses or ends. Every state
change is an event; the job is saved where crash safety needs it (see
:mod:`skillwire.engine.run`): around a tool that is not idempotent, at every pause, at
the end. A proposal that paused for input or approval is re-checked by the gate on
resume without asking the planner again; a paused job spends nothing.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from skillwire.core.chat import ChatMessage, ChatModel, ToolCall
from skillwire.core.errors import BudgetExhausted, ModelError, ModelUnavailableError, ParseFailure
from skillwire.core.executor import ExecutorRegistry
from skillwire.core.job import EventKind, JobStatus, OutcomeClass
from skillwire.core.plainjson import plain_dumps
from skillwire.core.proposal import DoNothing, FinalAnswer, Proposal, ToolProposal
from skillwire.core.store import Claim
from skillwire.core.tracing import end_gate, end_tool, gate_span, tool_span
from skillwire.engine.adapter import ModelAdapter, model_tool_name, parse_json_object, readable
from skillwire.engine.compiled import CompiledSkill
from skillwire.engine.crossjob import claim_ledger, gives_back_on_failure, take_claims
from skillwire.engine.finalization import FinalizationGate, ReplyPolisher
from skillwire.engine.intent_stage import add_intents, detect_intents
from skillwire.engine.outage import fail_on_model_error, pause_for_outage
from skillwire.engine.prompts import planner_request
from skillwire.engine.run import JobRun
from skillwire.engine.state import HistoryEntry, InFlightCall, PauseKind, Phase, RetryPoint
from skillwire.policy.call import args_key
from skillwire.policy.decisions import Allow, Block, Decision, NeedInput
from skillwire.skills.model_tools import Tool

__all__ = ["Pipeline", "parse_json_object"]

_PLANNER = RetryPoint("planner")
"""Where a planner step's outage is retried (a frozen value, shared by every step)."""

_SORTED_JSON = json.JSONEncoder(sort_keys=True)
"""``json.dumps(value, sort_keys=True)``, the encoder made once (it holds no state
between calls)."""


class Pipeline:
    """Runs jobs forward; shared by every job of a runtime."""

    def __init__(
        self,
        model: ChatModel,
        gate_model: ChatModel,
        executors: ExecutorRegistry[Tool],
        classifier: ChatModel | None = None,
    ) -> None:
        self.model = model
        self.classifier = classifier
        self.executors = executors
        self.adapter = ModelAdapter()
        self.finalizer = FinalizationGate(gate_model)
        self.polisher = ReplyPolisher(model)

    async def advance(self, run: JobRun) -> None:
        """Work on the job until it pauses or ends (a model outage pauses it)."""
        try:
            if run.state.retry is not None and await self._retry(run, run.state.retry):
                return
            if run.state.phase is Phase.INTENT:
                await self._detect_intent(run)
            if run.state.phase is Phase.PLANNING:
                await self._plan(run)
        except BudgetExhausted as exc:
            run.event(
                EventKind.BUDGET_EXHAUSTED,
                str(exc),
                reason_code=OutcomeClass.ENGINE_BUDGET_EXHAUSTED,
            )
            run.set_status(JobStatus.FAILED, OutcomeClass.ENGINE_BUDGET_EXHAUSTED)
            run.state.phase = Phase.DONE
            await run.persist()
        except ModelUnavailableError as exc:
            await pause_for_outage(run, exc)
        except ModelError as exc:
            await fail_on_model_error(run, exc)

    async def _retry(self, run: JobRun, point: RetryPoint) -> bool:
        """Run the stage a model outage stopped again; True when the job paused or
        ended there. The intent and planner stages go on from the phase (the planner's
        iteration was not counted); the finalization gate judges the saved answer again,
        and the polisher polishes it, without asking the planner again."""
        draft = run.state.draft or {}
        answer = FinalAnswer(str(draft.get("answer") or ""), dict(draft.get("fields") or {}))
        if point.stage == "gate" and run.state.draft is not None:
            return await self.finalizer.check(run, answer, point.call_id, self.polisher)
        if point.stage == "polisher" and run.state.draft is not None:
            await self.polisher.polish(run, answer)
            return True
        return False

    # -- intent -------------------------------------------------------------------
    async def _detect_intent(self, run: JobRun) -> None:
        await detect_intents(run, self.model, self.classifier)

    async def add_intents(self, run: JobRun, text: str) -> None:
        """Read a later user message (an answer given on resume) for intents to add to
        the job's (:func:`~skillwire.engine.intent_stage.add_intents`)."""
        await add_intents(run, self.classifier, text)

    # -- the planner loop -----------------------------------------------------------
    async def _plan(self, run: JobRun) -> None:
        while run.state.phase is Phase.PLANNING:
            if run.state.pending is not None:
                if await self._handle_tool(run, run.state.pending):
                    return
                continue
            if run.state.iterations >= run.max_iterations():
                raise BudgetExhausted(f"iteration budget of {run.max_iterations()} used up")
            run.state.iterations += 1
            run.retry_point = _PLANNER
            try:
                proposal, call_id = await self._propose(run)
            except ModelUnavailableError:
                run.state.iterations -= 1  # retried as the same iteration
                raise
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
                    EventKind.PROPOSAL,
                    f"{proposal.tool}",
                    tool=proposal.tool,
                    args=proposal.args,
                    iteration=run.state.iterations,
                )
                proposal = _with_given_inputs(run, proposal, run.compiled.required)
                if _denied_before(run, proposal):
                    continue
                if await self._handle_tool(run, proposal):
                    return
            elif isinstance(proposal, FinalAnswer):
                if await self.finalizer.finalize(run, proposal, call_id, self.polisher):
                    return
            else:
                run.event(EventKind.DO_NOTHING, proposal.reason, iteration=run.state.iterations)
                run.state.add_message(
                    ChatMessage(
                        "user",
                        f"No action was taken ({proposal.reason}). Continue with one tool call.",
                    )
                )

    async def _propose(self, run: JobRun) -> tuple[Proposal, str]:
        compiled = run.compiled
        retries = 0
        while True:
            request = planner_request(
                compiled.skill,
                compiled.planner_system,
                _subgoals(run, compiled),
                _visible_state(run, compiled),
                run.state.messages(),
                compiled.tools,
                compiled.skill.engine_config().temperature,
                intents=compiled.planner_intents,
                model_names=compiled.model_names,
            )
            response = await run.call_model(self.model, request)
            try:
                proposal, call = self.adapter.parse(response)
            except ParseFailure as exc:
                run.event(EventKind.PARSE_ERROR, "; ".join(exc.errors), errors=exc.errors)
                retries += 1
                summary = (
                    readable(response.text.strip()[:500]) or "(a reply that could not be used)"
                )
                run.state.add_message(ChatMessage("assistant", summary))
                if retries > run.limits.max_parse_retries:
                    return DoNothing(f"no usable reply after {retries} tries"), ""
                run.state.add_message(ChatMessage("user", self.adapter.retry_prompt(exc.errors)))
                continue
            if call is None:  # the answer as the reply's text: a message, no call to answer
                run.state.add_message(ChatMessage("assistant", readable(response.text)))
                return proposal, ""
            call_id = call.id if call.id else f"call_{run.state.call_seq}"
            run.state.add_message(
                ChatMessage(
                    "assistant",
                    readable(response.text),
                    (ToolCall(call.name, call.arguments, readable(call.raw_arguments), call_id),),
                )
            )
            return proposal, call_id

    async def _handle_tool(self, run: JobRun, proposal: ToolProposal) -> bool:
        """Gate, then execute or pause. True when the job paused.

        Only the grants given for this very proposal while it waited may allow it (a
        fresh proposal of an approved call asks again); the grants an ``Allow`` used are
        consumed in the save that marks the call in flight."""
        state = run.state
        if proposal is not state.pending:
            state.pending_grants = []
        span = gate_span(proposal.tool)  # None unless tracing is on
        clock = datetime.now(UTC)
        ledger = await claim_ledger(run, proposal, clock)
        decision = run.gate.check(
            proposal.tool,
            proposal.args,
            context=state.context,
            entities=state.entities,
            history=state.runs(),
            inputs=state.inputs,
            approvals=state.approvals(),
            intents=_intents(run),
            stated_tool=proposal.stated_tool,
            stated_args=proposal.stated_args,
            correlation_ids=state.pending_grants,
            user_texts=(state.message,),
            now=clock,
            ledger=ledger,
            user=run.record.owner,
        )
        reason_code = _record_decision(run, decision)
        end_gate(span, decision.kind, reason_code, len(decision.reasons))
        if isinstance(decision, Allow):
            state.pending = None
            state.pending_grants = []
            state.consume(decision.grants)
            await self._execute(run, proposal, decision)
            return False
        if isinstance(decision, Block):
            state.pending = None
            state.pending_grants = []
            text = "; ".join(r.message for r in decision.reasons)
            declared = run.skill.tool(proposal.tool)
            if declared is not None:  # an unknown tool is no part of the request
                state.blocks.append({"tool": declared.name, "reason": text[:300]})
            run.answer(
                proposal.call_id, f"BLOCKED by the skill's rules: {text}. The call did not run."
            )
            return False
        state.pending = proposal
        if isinstance(decision, NeedInput):
            state.pause_kind = PauseKind.INPUT
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
            state.pause_kind = PauseKind.APPROVAL
            reason = decision.reason_text
            prompt = (
                f"{decision.approver} approval needed: {decision.tool} "
                f"{_SORTED_JSON.encode(decision.args)} ({reason})"
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
                    self_approval=True if decision.self_approval else None,
                ),
                OutcomeClass.APPROVAL_REQUIRED,
            )
        await run.persist()
        return True

    async def _execute(self, run: JobRun, proposal: ToolProposal, decision: Allow) -> None:
        tool = run.skill.tool(decision.tool)
        assert tool is not None  # the gate allowed it, so it exists
        key = f"{run.id}:{len(run.state.history)}"
        approved = bool(decision.grants)
        await self.run_tool(
            run,
            tool.name,
            decision.args,
            key,
            proposal.call_id,
            approved=approved,
            claims=decision.claims,
        )

    async def run_tool(
        self,
        run: JobRun,
        name: str,
        args: dict[str, Any],
        key: str,
        call_id: str,
        *,
        approved: bool = False,
        claims: Sequence[Claim] = (),
    ) -> None:
        """Execute an allowed call and record its outcome (also used by recovery).

        ``claims`` (the call's limits across jobs) are taken by the save that marks it
        in flight; when the store refuses them (another job took the last one since the
        gate read the ledger) the call does not run: the refusal is recorded as the
        gate's block. A run that fails gives its claims back; a crash keeps them.

        A tool that is not idempotent runs only after the job is saved with the call
        marked in flight, and the job is saved again right after it: a crash in between
        leaves the marker, and recovery asks an operator rather than run it twice. An
        idempotent tool's run is saved with the next save, unless the call is
        ``approved``: the save that marks it in flight also records its grants consumed,
        so no crash makes an approval usable twice.
        """
        state = run.state
        tool = run.skill.tool(name)
        assert tool is not None
        state.in_flight = InFlightCall(tool.name, args, key, call_id)
        run.event(EventKind.TOOL_STARTED, tool.name, tool=tool.name, args=args, idempotency_key=key)
        if claims:
            taken = [replace(c, call=key) for c in claims]
            if not await take_claims(run, tool.name, args, call_id, taken, _record_decision):
                return
        elif tool.idempotent and not approved:
            await run.claim()
        else:  # durable before a tool that may not run twice: see engine.run
            await run.persist(durable=not tool.idempotent)
        root = run.skill.root
        # A run that waits gives its turn back meanwhile (turns.py); executors turn
        # errors into outcomes, so only a cancellation skips taking it again.
        had_turn = self.executors.waits(tool, root) and run.turn.give()
        span = tool_span(tool.name, call_id, idempotent=tool.idempotent)
        outcome = await self.executors.execute(
            tool, dict(args), idempotency_key=key, skill_root=root
        )
        end_tool(span, ok=outcome.ok)
        if had_turn:
            await run.turn.take()
        state.in_flight = None
        state.history.append(
            HistoryEntry(
                tool.name, args, outcome.result, outcome.ok, outcome.error, outcome.state_changes
            )
        )
        if outcome.ok:
            state.evidence += 1
            run.event(
                EventKind.TOOL_FINISHED,
                tool.name,
                tool=tool.name,
                result=outcome.result,
                state_changes=outcome.state_changes,
            )
            run.answer(call_id, _result_text(outcome.result))
        else:
            run.event(EventKind.TOOL_FAILED, outcome.error, tool=tool.name)
            run.answer(call_id, f"ERROR: {outcome.error}")
        if not outcome.ok and gives_back_on_failure(tool):
            await run.persist(released=[key])  # a failed run gives its claims back
        elif not tool.idempotent:
            await run.persist()


def _result_text(result: Any) -> str:
    """A tool result as the planner reads it: compact JSON (orjson for a plain value,
    else the standard library, anything odd as its ``str``)."""
    data = plain_dumps(result)
    return data.decode() if data is not None else json.dumps(result, default=str)


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
        EventKind.INPUTS_APPLIED, ", ".join(sorted(filled)), tool=proposal.tool, inputs=filled
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
    denial = next((d for d in run.state.denials if args_key(d.tool, d.args) == key), None)
    if denial is None:
        return False
    run.event(
        EventKind.DENIED_BEFORE,
        f"{name} was denied by {denial.role}",
        reason_code="APPROVAL_DENIED",
        tool=name,
        args=proposal.args,
    )
    run.answer(
        proposal.call_id,
        f"DENIED earlier by {denial.role}: {name} with these arguments does not run.",
    )
    return True


def _record_decision(run: JobRun, decision: Decision) -> str:
    """Record the gate's decision; its first reason code."""
    first = decision.reasons[0] if decision.reasons else None
    code = str(first.code) if first else ""
    run.event(
        EventKind.GATE_DECISION,
        f"{decision.kind}: {decision.tool}",
        reason_code=code,
        decision=decision.kind,
        tool=decision.tool,
        args=decision.args,
        reasons=[r.to_dict() for r in decision.reasons],
    )
    return code


def _intents(run: JobRun) -> tuple[str, ...]:
    """The job's active intents (the gate's input, a set; the sub-goals' scope)."""
    return tuple(run.state.intents)


def _other_intent_tools(run: JobRun) -> list[str]:
    """The tools (as models see them) that the job's intents after the first list, in
    order: the offline planner runs them after the first intent's plan."""
    others = run.state.intents[1:]
    if not others:
        return []
    skill = run.skill
    by_id = {i.id: i for i in skill.intents.supported}
    names: list[str] = []
    for intent_id in others:
        for name in by_id[intent_id].tools or () if intent_id in by_id else ():
            tool = skill.tool(name)
            model = model_tool_name(tool.name if tool is not None else name)
            if model not in names:
                names.append(model)
    return names


def _subgoals(run: JobRun, compiled: CompiledSkill) -> list[dict[str, Any]]:
    """The JSON forms of the sub-goals of the workflows that apply to the job's intents,
    each marked done once its tool has run."""
    return compiled.goals_for(_intents(run), {h.tool for h in run.state.history if h.ok})


def _visible_state(run: JobRun, compiled: CompiledSkill) -> dict[str, Any]:
    state = run.state
    return {
        "intent": state.intent,
        "intents": state.intents,
        "other_intent_tools": _other_intent_tools(run),
        "entities": state.entities,
        "inputs": state.inputs,
        "results": [h.seen() for h in state.history],
        "model_tool_names": compiled.model_tool_names,
    }
