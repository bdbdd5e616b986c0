"""What one governed job sends its models: prompt characters and model calls per stage.

Run ``python -m bench.lean_job``. The job is issue 21's measure, the skill in
``bench/lean_refund/domain.yaml``: the intent (model-backed: the model is asked), one
``process_refund`` call that pauses for a supervisor's approval (``amount > 500``), the
resume, the final answer, the finalization gate. The model is a fake that records
every request it is sent and answers as a planner would. One JSON line is printed::

    {"bench": "lean_job", "prompt_chars_per_job": 1790, "model_calls_per_job": 4,
     "by_stage": {"intent": {"calls": 1, "prompt_chars": 402, ...}, ...}, ...}

``prompt_chars`` counts what :func:`skillwire.engine.prompts.request_chars` counts:
message texts, tool-call arguments and the tools offered (their JSON Schemas included).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
from pathlib import Path
from typing import Any

from skillwire.core.chat import ChatRequest, ChatResponse, ToolCall
from skillwire.core.job import JobStatus, OutcomeClass
from skillwire.engine import Runtime
from skillwire.engine.prompts import request_chars
from skillwire.skills import load_skill
from skillwire.store import SQLiteJobStore
from skillwire.testing import FunctionModel
from skillwire.tools import Executors

ROOT = Path(__file__).resolve().parent.parent
SKILL = ROOT / "bench" / "lean_refund" / "domain.yaml"
MESSAGE = "Please refund 750 for order ORD-12345"
ARGS = {"order_id": "ORD-12345", "amount": 750}
NEXT = "The money is back on your card within 5 business days."
ANSWER = {
    "answer": f"Your refund of 750 for ORD-12345 is done. {NEXT}",
    "fields": {"order_id": "ORD-12345", "status": "refunded", "next_steps": NEXT},
}


def reply(request: ChatRequest) -> ChatResponse:
    """The fake model: the refund intent, the refund, then the answer; the gate passes."""
    if request.stage == "intent":
        data = {"intent": "intent_refund", "entities": ARGS, "confidence": 0.9}
        return ChatResponse(text=json.dumps(data))
    if request.stage == "gate":
        return ChatResponse(text=json.dumps({"passed": True, "reasons": []}))
    if request.stage == "polisher":
        raise AssertionError("the lean skill has no persona: no polisher call")
    if any(m.role == "tool" for m in request.messages):  # refunded: the answer, as text
        return ChatResponse(text=json.dumps(ANSWER), finish_reason="stop")
    call = ToolCall("process_refund", ARGS, json.dumps(ARGS), "c1")
    return ChatResponse(tool_calls=(call,), finish_reason="tool_calls")


async def measure(folder: Path) -> dict[str, Any]:
    """Run the job once; its figures, with every request it sent."""
    skill = load_skill(SKILL)
    model = FunctionModel(reply, name="fake")
    async with SQLiteJobStore(folder / "jobs.db") as store:
        runtime = Runtime(store, model, executors=Executors())
        job = await runtime.start(skill, MESSAGE, context={"user_id": "u1"})
        waiting = job.record.waiting
        if job.record.outcome_class is not OutcomeClass.APPROVAL_REQUIRED or waiting is None:
            raise SystemExit(f"expected a pause for approval, got {job.record.outcome_class}")
        job = await runtime.resume(
            job.id,
            approval="approve",
            role="supervisor",
            decided_by="sup",
            correlation_id=waiting.correlation_id,
        )
        if job.status is not JobStatus.COMPLETED:
            raise SystemExit(
                f"expected a completed job, got {job.status} {job.record.outcome_class}"
            )
        recorded = job.model_calls
    by_stage: dict[str, dict[str, int]] = {}
    for request in model.calls:
        stage = by_stage.setdefault(request.stage, {"calls": 0, "prompt_chars": 0})
        stage["calls"] += 1
        stage["prompt_chars"] += request_chars(request)
    total = sum(s["prompt_chars"] for s in by_stage.values())
    if total != sum(c.prompt_chars for c in recorded):
        raise SystemExit("the job's recorded prompt characters differ from what was sent")
    return {
        "bench": "lean_job",
        "prompt_chars_per_job": total,
        "model_calls_per_job": len(model.calls),
        "by_stage": by_stage,
        "outcome": str(job.record.outcome_class),
        "target_prompt_chars": 2000,
        "requests": model.calls,
    }


def run() -> dict[str, Any]:
    """:func:`measure` in a temporary folder."""
    with tempfile.TemporaryDirectory(prefix="skillwire-lean-") as tmp:
        return asyncio.run(measure(Path(tmp)))


def main(argv: list[str] | None = None) -> None:
    """Run the job; print one JSON line (``--show`` prints every request first)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--show", action="store_true", help="print each request's messages")
    ns = parser.parse_args(argv)
    result = run()
    requests: list[ChatRequest] = result.pop("requests")
    if ns.show:
        for request in requests:
            print(f"== {request.stage}: {request_chars(request)} chars")
            for message in request.messages:
                calls = "".join(f" [{c.name} {c.raw_arguments}]" for c in message.tool_calls)
                print(f"-- {message.role}{calls}\n{message.content}")
            for tool in request.tools:
                print(f"-- tool {tool.name}: {tool.description} {json.dumps(tool.parameters)}")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
