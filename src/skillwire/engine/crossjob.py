"""The engine's side of limits across jobs (``once_per``, ``rate_limit``).

Before the gate decides about a call, :func:`claim_ledger` reads from the job store the
claims the call would take (the gate imports no store: it reads this snapshot). When
the call starts, :func:`take_claims` saves it in flight together with its claims; the
store takes them in that transaction or refuses the whole save, and then the call is
withdrawn and the refusal recorded as the gate's block (reason ``ONCE_PER`` or
``RATE_LIMITED``). :mod:`skillwire.core.store` describes claims.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from skillwire.core.errors import ClaimConflictError
from skillwire.core.job import EventKind
from skillwire.core.proposal import ToolProposal
from skillwire.core.store import Claim, ClaimLedger, ClaimStore, claim_parts
from skillwire.engine.run import JobRun
from skillwire.policy.decisions import Block, Decision, Reason, ReasonCode
from skillwire.skills.model_tools import Tool

__all__ = ["claim_ledger", "gives_back_on_failure", "limited_across_jobs", "take_claims"]


async def claim_ledger(run: JobRun, proposal: ToolProposal, clock: datetime) -> ClaimLedger | None:
    """What the job store holds of the claims the proposal would take (None when it
    would take none, or the store keeps no claims: the gate then fails closed)."""
    state = run.state
    claims = run.gate.claims(
        proposal.tool,
        proposal.args,
        context=state.context,
        entities=state.entities,
        inputs=state.inputs,
        user=run.record.owner,
        now=clock,
    )
    if not claims or not isinstance(run.store, ClaimStore):
        return None
    return await run.store.claim_ledger(claims)


async def take_claims(
    run: JobRun,
    tool: str,
    args: dict[str, Any],
    call_id: str,
    claims: list[Claim],
    record: Callable[[JobRun, Decision], str],
) -> bool:
    """Save the call in flight with its claims; False (the call withdrawn, the refusal
    recorded and told to the planner) when the store refuses them."""
    try:
        await run.persist(durable=True, claims=claims)
    except ClaimConflictError as exc:
        run.saving = False  # refused before anything was written: the job is as read
        state = run.state
        state.in_flight = None
        started = run.new_events.pop()  # the call never started
        assert started.kind == EventKind.TOOL_STARTED
        state.event_seq -= 1
        declared = run.skill.tool(tool)
        kind = (claim_parts(exc.key)[2:3] or ["once_per"])[0]  # skill, tool, kind, ...
        rule = next((r for r in run.gate.policy.for_tool(tool) if r.kind == kind), None)
        code = rule.code if rule is not None else ReasonCode.ONCE_PER
        held_by = f" (job {', '.join(exc.holders)})" if exc.holders else ""
        text = f"{rule.text if rule else tool}: taken by another job meanwhile{held_by}"
        reason = Reason(code, text, rule.text if rule else "", rule.source if rule else None)
        record(run, Block(tool, args, (reason,)))
        if declared is not None:
            state.blocks.append({"tool": declared.name, "reason": text[:300]})
        run.answer(call_id, f"BLOCKED by the skill's rules: {text}. The call did not run.")
        return False
    return True


def limited_across_jobs(tool: Tool) -> bool:
    """Whether the tool's runs take claims across jobs."""
    return tool.policy.once_per is not None or tool.policy.rate_limit is not None


def gives_back_on_failure(tool: Tool) -> bool:
    """Whether a failed run of the tool gives its claims back: yes, unless the tool is
    ``permanent``, whose effect may have happened though the run reported a failure (a
    timeout after the backend paid), as ``once_only`` counts its runs in a job."""
    return limited_across_jobs(tool) and not tool.permanent
