"""A whole job through each real SDK: malformed model output takes the adapter's retry path.

The model answers over a mock transport in the providers' wire formats: arguments that
are not JSON and an empty reply become retry prompts listing the errors; a call of an
unknown tool is blocked by the gate and fed back; the job still completes, and the
usage the server reported is recorded with every model call.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from tests.conftest import EXAMPLES
from tests.models import test_anthropic_wire as anth
from tests.models import test_openai_wire as oai

from skillwire.core.chat import ChatModel
from skillwire.core.job import OutcomeClass
from skillwire.engine import JobView, Runtime
from skillwire.skills import load_skill
from skillwire.store import SQLiteJobStore
from skillwire.tools import Executors

ORDER = {"order_id": "ORD-12345"}
REFUND = {"order_id": "ORD-12345", "amount": 120}
FIELDS = {
    "order_id": "ORD-12345",
    "status": "refunded",
    "next_steps": "120.00 will be back on your card within 5 business days.",
}
ANSWER = {"answer": "Refunded 120 for ORD-12345. " + FIELDS["next_steps"], "fields": FIELDS}
GATE = {
    "passed": True,
    "score": 0.95,
    "reasons": [],
    "missing_fields": [],
    "suggested_action": "REWRITE",
}
INTENT = {"intent": "intent_refund", "entities": REFUND}
POLISHED = "Happy to help! Refunded 120 for ORD-12345. " + FIELDS["next_steps"]


def run_job(model: ChatModel, tmp_path: Path) -> JobView:
    async def flow() -> JobView:
        store = SQLiteJobStore(tmp_path / "jobs.db")
        try:
            runtime = Runtime(store, model, executors=Executors())
            skill = load_skill(EXAMPLES / "refund_support" / "domain.yaml")
            return await runtime.start(skill, "Please refund $120 for ORD-12345")
        finally:
            await store.close()

    return asyncio.run(flow())


def check(job: JobView) -> None:
    assert job.record.outcome_class is OutcomeClass.SUCCESS, [e.message for e in job.events]
    assert job.record.fields == FIELDS
    errors = [e for e in job.events if e.kind == "parse_error"]
    assert len(errors) == 2
    assert "not a JSON object" in errors[0].message and "empty" in errors[1].message
    blocked = [e for e in job.events if e.reason_code == "UNKNOWN_TOOL"]
    assert blocked and blocked[0].data["tool"] == "teleport"
    assert all(c.input_tokens and c.output_tokens for c in job.model_calls)
    assert [c.stage for c in job.model_calls].count("planner") == 7


def test_openai_wire_job(tmp_path: Path) -> None:
    wire = oai.Wire(
        oai.text_reply(json.dumps(INTENT)),
        oai.tool_reply(("c1", "verify_identity", '{"order_id": "ORD-1')),
        oai.tool_reply(("c2", "teleport", "{}")),
        oai.text_reply(""),
        oai.tool_reply(("c3", "verify_identity", json.dumps(ORDER))),
        oai.tool_reply(("c4", "check_eligibility", json.dumps(REFUND))),
        oai.tool_reply(("c5", "process_refund", json.dumps(REFUND))),
        oai.text_reply(json.dumps(ANSWER)),  # the answer: the planner's last message
        oai.text_reply(json.dumps(GATE)),
        oai.text_reply(POLISHED),
    )
    job = run_job(oai.model_on(wire), tmp_path)
    check(job)
    assert job.record.reply == POLISHED
    retry = wire.bodies[2]["messages"][-1]
    assert retry["role"] == "user" and "could not be used" in retry["content"]
    after_block = wire.bodies[3]["messages"]
    assert after_block[-1]["role"] == "tool" and after_block[-1]["tool_call_id"] == "c2"
    assert "BLOCKED" in after_block[-1]["content"]
    offered = {t["function"]["name"] for t in wire.bodies[1]["tools"]}
    # no final_answer tool to describe: the planner answers in its last message
    assert "final_answer" not in offered and "delete_customer_record" not in offered


def tool(call_id: str, name: str, arguments: Any) -> Any:
    return anth.message(anth.tool_use(call_id, name, arguments), stop="tool_use")


def test_anthropic_wire_job(tmp_path: Path) -> None:
    wire = anth.Wire(
        anth.message(anth.text(json.dumps(INTENT))),
        tool("t1", "verify_identity", "not an object"),
        tool("t2", "teleport", {}),
        anth.message(),
        tool("t3", "verify_identity", ORDER),
        tool("t4", "check_eligibility", REFUND),
        tool("t5", "process_refund", REFUND),
        tool("t6", "final_answer", ANSWER),
        anth.message(anth.text(json.dumps(GATE))),
        anth.message(anth.text(POLISHED)),
    )
    job = run_job(anth.model_on(wire), tmp_path)
    check(job)
    last = wire.bodies[-1]
    assert last["messages"][0]["role"] == "user"
    planner_after_block = wire.bodies[3]["messages"][-1]
    assert planner_after_block["role"] == "user"
    assert planner_after_block["content"][-1]["type"] == "tool_result"
