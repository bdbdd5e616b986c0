"""The finalization gate (spec 000 section 4.4) and the reply polisher (section 4.5).

The output contract is checked mechanically first; only then, when the gate is enabled,
does a model judge goal coverage and the guardrails stated as text (one call; nothing
checked mechanically is in its prompt: see
:func:`~skillwire.engine.prompts.gate_request`); ``finalization_gate.enabled: false``
skips that call, never the checks. A failed gate sends the planner back with the
reasons, at most ``max_retries`` times, and a retry counts only if new evidence was
gathered since (a tool ran or the user gave input): require-new-evidence is always on.
After the last failure the job escalates.

Before any of that, :func:`~skillwire.engine.evidence.shortfall` reads the job's
record: when a call the request needed was denied, blocked or failed (and that tool
never ran successfully later), the job completes with ``DENIED``, ``BLOCKED`` or
``TOOL_FAILED`` and a reply that says what was not done and why, with no gate or
polisher call. An answer that claims an action no tool performed fails the gate
mechanically (``GOAL_NOT_MET``), before any model is asked.

The polisher applies the persona and nothing else: if the polished text drops a value
of a contract field, adds a number or an identifier found neither in the draft nor in
the evidence, or holds text that is not UTF-8, the unpolished text is kept and the
event says why.
"""

from __future__ import annotations

from typing import Any

from skillwire.core.chat import ChatModel
from skillwire.core.job import EventKind, JobStatus, OutcomeClass
from skillwire.core.plainjson import plain_dumps
from skillwire.core.proposal import FinalAnswer
from skillwire.engine.adapter import parse_json_object
from skillwire.engine.evidence import (
    Shortfall,
    added_values,
    evidence_text,
    shortfall,
    unsupported_claims,
)
from skillwire.engine.prompts import gate_request, polisher_request
from skillwire.engine.run import JobRun
from skillwire.engine.state import PauseKind, Phase, RetryPoint

__all__ = ["ACTION_CODES", "REASON_CODES", "FinalizationGate", "ReplyPolisher"]

REASON_CODES = (
    "GOAL_NOT_MET",
    "GUARDRAIL_VIOLATED",
    "MISSING_REQUIRED_FIELD",
    "OUTPUT_INCOMPLETE",
    "TONE_MISMATCH",
)
"""The finalization gate's reason codes (spec 000 section 4.4)."""

ACTION_CODES = ("TOOL_CALL", "CLARIFY_USER", "REWRITE", "ESCALATE")
"""The finalization gate's suggested actions (spec 000 section 4.4)."""


def _empty(value: Any) -> bool:
    return value is None or value in ("", [], {})


class FinalizationGate:
    """Checks a final answer before it reaches the polisher."""

    def __init__(self, model: ChatModel) -> None:
        self.model = model

    async def finalize(
        self, run: JobRun, answer: FinalAnswer, call_id: str, polisher: ReplyPolisher
    ) -> bool:
        """True when the job ended (completed or escalated) or paused; False to replan."""
        run.state.draft = {"answer": answer.answer, "fields": answer.fields}
        run.event(EventKind.FINAL_ANSWER, answer.answer[:200], fields=answer.fields)
        return await self.check(run, answer, call_id, polisher)

    async def check(
        self, run: JobRun, answer: FinalAnswer, call_id: str, polisher: ReplyPolisher
    ) -> bool:
        """Check the answer the planner gave (saved as the draft), as :meth:`finalize`
        says; run again as it is when a model outage stopped the gate or the polisher."""
        state = run.state
        run.retry_point = RetryPoint("gate", call_id)
        short = shortfall(run)
        if short is not None:
            await _complete_short(run, answer, short)
            return True
        if (
            state.evidence_at_last_gate is not None
            and state.evidence == state.evidence_at_last_gate
        ):
            await self._escalate(run, "Replan did not gather new evidence")
            return True
        config = run.skill.engine_config().finalization_gate
        required = run.skill.output_contract.required_fields
        missing = [f for f in required if _empty(answer.fields.get(f))]
        reasons: list[dict[str, str]] = [
            {"code": "MISSING_REQUIRED_FIELD", "detail": f"missing field '{f}'"} for f in missing
        ]
        texts = [answer.answer, *(v for v in answer.fields.values() if isinstance(v, str))]
        reasons += [
            {
                "code": "GOAL_NOT_MET",
                "detail": f"the answer says '{word}', but {tool} did not run successfully",
            }
            for tool, word in unsupported_claims(run, texts)
        ]
        action = "TOOL_CALL"
        if not reasons and config.enabled:
            verdict = await self._judge(run, answer)
            if not verdict.get("passed"):
                reasons = _reasons(verdict) or [
                    {"code": "OUTPUT_INCOMPLETE", "detail": "the gate did not pass the answer"}
                ]
                missing = [m for m in verdict.get("missing_fields") or [] if isinstance(m, str)]
                suggested = verdict.get("suggested_action")
                action = suggested if suggested in ACTION_CODES else "TOOL_CALL"
        if not config.enabled:
            run.event(
                EventKind.GATE_SKIPPED,
                "finalization gate disabled; output contract checked mechanically",
                missing_fields=missing,
            )
        if not reasons:
            if config.enabled:
                run.event(EventKind.GATE_PASSED, "the answer passed the finalization gate")
            await polisher.polish(run, answer)
            return True
        codes = sorted({r["code"] for r in reasons})
        run.event(
            EventKind.GATE_FAILED,
            "; ".join(r["detail"] for r in reasons),
            reason_code=codes[0],
            reasons=reasons,
            suggested_action=action,
            attempt=state.gate_attempts + 1,
        )
        if state.gate_attempts >= config.max_retries:
            await self._escalate(run, "Finalization Gate failed after max retries")
            return True
        if action == "ESCALATE":
            await self._escalate(run, "the finalization gate asked to escalate")
            return True
        state.gate_attempts += 1
        state.evidence_at_last_gate = state.evidence
        detail = "; ".join(f"{r['code']}: {r['detail']}" for r in reasons)
        content = (
            f"REJECTED by the finalization gate: {detail}. Gather new evidence (call a "
            "tool, or the platform asks the user) before answering again."
        )
        run.answer(call_id, content)
        if action == "CLARIFY_USER" and missing:
            state.pause_kind = PauseKind.CLARIFY
            prompt = "Please provide: " + ", ".join(m.replace("_", " ") for m in missing) + "."
            run.pause(
                run.new_waiting("CLARIFICATION_REQUIRED", missing, prompt),
                OutcomeClass.USER_ACTION_REQUIRED,
            )
            await run.persist()
            return True
        return False

    async def _judge(self, run: JobRun, answer: FinalAnswer) -> dict[str, Any]:
        compiled = run.compiled
        response = await run.call_model(
            self.model, gate_request(compiled.skill, answer.answer, head=compiled.gate_head)
        )
        verdict = parse_json_object(response.text)
        if verdict is None or not isinstance(verdict.get("passed"), bool):
            run.event(
                EventKind.GATE_UNPARSED,
                "the gate's reply was not a gate result: treated as failed (fail closed)",
                reply=response.text[:300],
            )
            return {
                "passed": False,
                "reasons": [{"code": "OUTPUT_INCOMPLETE", "detail": "unreadable gate result"}],
            }
        return verdict

    async def _escalate(self, run: JobRun, why: str) -> None:
        run.event(
            EventKind.ESCALATED,
            why,
            reason_code=OutcomeClass.FINALIZATION_FAILED,
            draft=run.state.draft,
        )
        run.state.phase = Phase.DONE
        run.record.fields = dict((run.state.draft or {}).get("fields") or {})
        run.set_status(JobStatus.ESCALATED, OutcomeClass.FINALIZATION_FAILED)
        await run.persist()


def _reasons(verdict: dict[str, Any]) -> list[dict[str, str]]:
    out = []
    for item in verdict.get("reasons") or []:
        if isinstance(item, dict):
            code = str(item.get("code", "OUTPUT_INCOMPLETE"))
            out.append(
                {
                    "code": code if code in REASON_CODES else "OUTPUT_INCOMPLETE",
                    "detail": str(item.get("detail", "")),
                }
            )
    return out


def _renderings(value: Any) -> list[str]:
    if isinstance(value, bool) or value is None:
        return [str(value)]
    if isinstance(value, int | float):
        out = [str(value), f"{value:.2f}", f"{value:,.2f}"]
        if float(value).is_integer():
            out.append(str(int(value)))
        return out
    return [str(value)]


def dropped_values(draft: str, polished: str, fields: dict[str, Any]) -> list[str]:
    """Contract values that appear in ``draft`` but in no form in ``polished``."""
    dropped = []
    for name, value in fields.items():
        if type(value) is str:  # most values: its one rendering is itself
            if value in draft and value not in polished:
                dropped.append(name)
            continue
        forms = _renderings(value)
        if any(f in draft for f in forms) and not any(f in polished for f in forms):
            dropped.append(name)
    return dropped


class ReplyPolisher:
    """Applies the persona to the approved answer (format only, content unchanged)."""

    def __init__(self, model: ChatModel) -> None:
        self.model = model

    async def polish(self, run: JobRun, answer: FinalAnswer) -> None:
        """Polish, check, and complete the job."""
        reply = answer.answer
        run.retry_point = RetryPoint("polisher")
        if run.skill.persona_text():
            response = await run.call_model(self.model, polisher_request(run.skill, answer.answer))
            polished = response.text.strip()
            required = {
                k: v
                for k, v in answer.fields.items()
                if k in run.skill.output_contract.required_fields
            }
            lost = dropped_values(answer.answer, polished, required)
            added = added_values(answer.answer, polished, lambda: evidence_text(run))
            claims = unsupported_claims(run, [polished])
            if not polished:
                run.event(
                    EventKind.POLISH_REJECTED,
                    "the polisher returned nothing; the unpolished reply is kept",
                )
            elif plain_dumps(polished) is None:
                run.event(
                    EventKind.POLISH_REJECTED,
                    "the polished text holds a lone surrogate (not UTF-8); "
                    "the unpolished reply is kept",
                )
            elif lost:
                run.event(
                    EventKind.POLISH_REJECTED,
                    f"the polished text dropped {', '.join(lost)}; the unpolished reply is kept",
                    dropped=lost,
                )
            elif added or claims:
                said = added + [word for _, word in claims]
                run.event(
                    EventKind.POLISH_REJECTED,
                    f"the polished text adds {', '.join(said)}, found neither in the answer "
                    "nor in the evidence; the unpolished reply is kept",
                    added=said,
                )
            else:
                reply = polished
                run.event(EventKind.POLISHED, "persona applied")
        else:
            run.event(EventKind.POLISH_SKIPPED, "the skill has no persona")
        run.record.reply = reply
        run.record.fields = dict(answer.fields)
        run.state.phase = Phase.DONE
        run.set_status(JobStatus.COMPLETED, OutcomeClass.SUCCESS)
        await run.persist()


async def _complete_short(run: JobRun, answer: FinalAnswer, short: Shortfall) -> None:
    """Complete a job whose request was not (all) done: the outcome says why, and the
    reply says what was not done, then the planner's answer unless it claims an action
    that did not happen (so are its fields)."""
    claims = unsupported_claims(run, [answer.answer])
    reply = f"I could not do everything you asked. {short.notice}"
    if not claims:
        reply += f"\n\n{answer.answer}"
    fields = {
        name: value
        for name, value in answer.fields.items()
        if not (isinstance(value, str) and unsupported_claims(run, [value]))
    }
    run.event(
        EventKind.REQUEST_NOT_DONE,
        short.notice,
        reason_code=short.outcome,
        tools=list(short.tools),
        claims=[word for _, word in claims],
    )
    run.event(EventKind.POLISH_SKIPPED, "the request was not done: the reply says what and why")
    run.record.reply = reply
    run.record.fields = fields
    run.state.phase = Phase.DONE
    run.set_status(JobStatus.COMPLETED, short.outcome)
    await run.persist()
