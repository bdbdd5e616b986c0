"""Fewer prompt characters, no lost rule (issue 21).

What each stage sends is cut to what the model cannot do without; every rule is still
enforced, mechanically, whatever the prompt says. Each test below tries to get past a
cut: a rule left out of a prompt must still hold, and what a prompt leaves out must
not come back by another way."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench import lean_job
from tests.engine.helpers import ORDER, approval_script, events_of, kinds, run, runtime_for

from skillwire.core.chat import ChatMessage, ChatRequest, ChatResponse, ToolCall
from skillwire.core.job import JobStatus, OutcomeClass
from skillwire.engine import Runtime
from skillwire.engine.adapter import ModelAdapter
from skillwire.engine.prompts import gate_request, intent_request, model_schema, request_chars
from skillwire.models.offline import OfflineModel
from skillwire.models.offline.similarity import NgramIndex
from skillwire.policy import compile_policy
from skillwire.skills import Skill, load_skill
from skillwire.store import SQLiteJobStore
from skillwire.testing import FunctionModel
from skillwire.tools import Executors

REFUND = Path(__file__).resolve().parents[2] / "examples" / "refund_support" / "domain.yaml"


def test_the_one_tool_job_sends_at_most_2000_characters_in_4_calls() -> None:
    line = lean_job.run()
    assert line["outcome"] == "SUCCESS"
    assert line["model_calls_per_job"] <= 4  # no more than before the cuts
    assert line["prompt_chars_per_job"] <= line["target_prompt_chars"] == 2000


def test_a_tool_result_is_sent_once_and_no_final_answer_tool_is_offered() -> None:
    requests: list[ChatRequest] = lean_job.run()["requests"]
    second = [r for r in requests if r.stage == "planner"][1]
    text = "\n".join(m.content for m in second.messages)
    assert text.count("refunded") == 1  # in the tool message, not again in the state
    assert [t.name for t in second.tools] == ["process_refund"]
    # the full state, results included, is there as structure for the offline model
    assert second.data["results"][0]["result"]["status"] == "refunded"
    assert request_chars(second) == request_chars(replace(second, data={}))  # not sent


def test_rules_the_gate_enforces_are_not_sent_to_the_gate_model() -> None:
    skill = load_skill(REFUND)
    prompt = gate_request(skill, "Refund done.", compile_policy(skill)).messages[0].content
    assert "Never share customer payment information" in prompt  # judged: text only
    assert "Always confirm before making changes" in prompt
    for enforced in ("$500", "delete_customer_record", "order total", "next_steps"):
        assert enforced not in prompt, enforced  # compiled rules, the contract's fields


def test_the_gate_still_refuses_a_missing_field_that_its_prompt_no_longer_names(
    tmp_path: Path,
) -> None:
    """The contract's fields left the gate's prompt; the mechanical check still fails
    an answer without one, before the gate model is asked."""
    script = approval_script()
    final_call = script[4]["tool_call"]
    final_call["arguments"]["fields"] = {"order_id": ORDER, "status": "refunded"}
    script[5:] = [script[4]]  # the planner answers the same again: no new evidence

    async def main() -> None:
        async with runtime_for(tmp_path / "jobs.db", script) as (rt, model):
            job = await rt.start(load_skill(REFUND), "Refund 750 for ORD-12345")
            waiting = job.record.waiting
            assert waiting is not None
            job = await rt.resume(
                job.id,
                approval="approve",
                role="supervisor",
                decided_by="sup",
                correlation_id=waiting.correlation_id,
            )
            failed = events_of(job, "gate_failed")
            assert failed[0].reason_code == "MISSING_REQUIRED_FIELD"
            assert "gate" not in [c.stage for c in model.calls]
            assert job.status is JobStatus.ESCALATED

    run(main())


def test_checked_bounds_leave_the_schema_and_the_gate_still_enforces_them(
    tmp_path: Path,
) -> None:
    schema = {
        "type": "object",
        "required": ["pattern"],
        "properties": {
            "pattern": {"type": "string", "pattern": "^a$", "maxLength": 3},
            "items": {"type": "array", "items": {"type": "integer", "minimum": 1}},
            "kind": {"enum": ["x", "y"], "description": "which"},
        },
    }
    assert model_schema(schema) == {
        "type": "object",
        "required": ["pattern"],
        "properties": {
            "pattern": {"type": "string"},  # a property named pattern stays
            "items": {"type": "array", "items": {"type": "integer"}},
            "kind": {"enum": ["x", "y"], "description": "which"},
        },
    }
    # the refund's order id pattern is not sent, and a call that breaks it is refused
    model = FunctionModel(lean_refund_with_bad_order)

    async def main() -> None:
        async with SQLiteJobStore(tmp_path / "jobs.db") as store:
            runtime = Runtime(store, model, executors=Executors())
            job = await runtime.start(load_skill(lean_job.SKILL), lean_job.MESSAGE)
            planner = next(r for r in model.calls if r.stage == "planner")
            assert "pattern" not in json.dumps(planner.tools[0].parameters)
            decisions = events_of(job, "gate_decision")
            assert decisions[0].data["decision"] != "allow"
            assert "tool_started" not in kinds(job)

    run(main())


def lean_refund_with_bad_order(request: ChatRequest) -> ChatResponse:
    """The lean job's model, proposing a refund of an order id the pattern refuses."""
    if request.stage == "planner" and not any(m.role == "tool" for m in request.messages):
        args = {"order_id": "12345", "amount": 750}
        return ChatResponse(tool_calls=(ToolCall("process_refund", args, json.dumps(args), "c1"),))
    return lean_job.reply(request)


def test_the_answer_as_the_last_message_and_a_rejection_answers_it_as_the_user() -> None:
    adapter = ModelAdapter()
    text = json.dumps({"answer": "Done.", "fields": {"order_id": ORDER}})
    proposal, call = adapter.parse(ChatResponse(text=f"```json\n{text}\n```"))
    assert call is None and proposal.answer == "Done."  # type: ignore[union-attr]
    # a JSON reply that is no answer, and prose, are still unusable replies
    for reply in ('{"result": 1}', "I will look into it."):
        try:
            adapter.parse(ChatResponse(text=reply))
        except Exception as exc:
            assert "called no tool" in str(exc)
        else:
            raise AssertionError(f"{reply!r} was taken for an answer")


def test_a_rejected_text_answer_leaves_no_dangling_tool_call_id(tmp_path: Path) -> None:
    """A text answer has no call to answer: the gate's rejection is a user message."""
    answers = iter(
        [
            {"answer": "Done.", "fields": {"order_id": ORDER}},  # fields missing
            lean_job.ANSWER,
        ]
    )

    def reply(request: ChatRequest) -> ChatResponse:
        if request.stage == "planner" and any(m.role == "tool" for m in request.messages):
            if any("REJECTED" in m.content for m in request.messages):
                # after the rejection: a new tool run, as require-new-evidence wants
                return lean_job.reply(request)
            return ChatResponse(text=json.dumps(next(answers)))
        return lean_job.reply(request)

    model = FunctionModel(reply)

    async def main() -> None:
        async with SQLiteJobStore(tmp_path / "jobs.db") as store:
            runtime = Runtime(store, model, executors=Executors())
            job = await runtime.start(load_skill(lean_job.SKILL), lean_job.MESSAGE)
            waiting = job.record.waiting
            assert waiting is not None
            await runtime.resume(
                job.id,
                approval="approve",
                role="supervisor",
                decided_by="sup",
                correlation_id=waiting.correlation_id,
            )
        last = [r for r in model.calls if r.stage == "planner"][-1]
        ids = {c.id for m in last.messages for c in m.tool_calls}
        answered = [m for m in last.messages if m.role == "tool"]
        assert all(m.tool_call_id in ids for m in answered)
        rejected = [m for m in last.messages if "REJECTED" in m.content]
        assert rejected and rejected[0].role == "user"

    run(main())


# -- the intent decided by the offline classifier, without a model call ---------------


def accepting(tmp_path: Path, accept: float) -> Skill:
    text = lean_job.SKILL.read_text()
    text = text.replace(
        "  out_of_domain:", f"  thresholds:\n    accept: {accept}\n  out_of_domain:", 1
    )
    path = tmp_path / "domain.yaml"
    path.write_text(text)
    return load_skill(path)


def run_lean(tmp_path: Path, skill: Skill, classifier: Any) -> tuple[Any, FunctionModel]:
    model = FunctionModel(lean_job.reply)

    async def main() -> Any:
        async with SQLiteJobStore(tmp_path / "jobs.db") as store:
            runtime = Runtime(store, model, executors=Executors(), classifier=classifier)
            return await runtime.start(skill, lean_job.MESSAGE)

    return run(main()), model


def test_a_confident_classifier_decides_the_intent_without_a_model_call(tmp_path: Path) -> None:
    job, model = run_lean(tmp_path, accepting(tmp_path, 0.1), OfflineModel())
    assert [r.stage for r in model.calls] == ["planner"]
    detected = events_of(job, "intent_detected")[0]
    assert detected.data["decided_by"] == "classifier"
    assert detected.data["intent"] == "intent_refund"
    assert detected.data["entities"] == {"order_id": ORDER, "amount": 750}
    assert detected.data["confidence"] >= 0.1
    assert [c.stage for c in job.model_calls] == ["planner"]  # nothing recorded for it
    assert job.record.outcome_class is OutcomeClass.APPROVAL_REQUIRED


def test_below_the_threshold_or_without_one_the_model_is_asked(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    job, model = run_lean(tmp_path / "a", accepting(tmp_path / "a", 0.99), OfflineModel())
    assert [r.stage for r in model.calls][:1] == ["intent"]
    assert "decided_by" not in events_of(job, "intent_detected")[0].data
    (tmp_path / "b").mkdir()
    asked: list[ChatRequest] = []

    def spy(request: ChatRequest) -> ChatResponse:
        asked.append(request)
        return ChatResponse(text="{}")

    job, model = run_lean(tmp_path / "b", load_skill(lean_job.SKILL), FunctionModel(spy))
    assert asked == []  # no accept threshold: the classifier is not even asked
    assert [r.stage for r in model.calls][:1] == ["intent"]


def test_a_classifier_reply_that_is_not_a_confident_known_intent_is_not_used(
    tmp_path: Path,
) -> None:
    """Its reply is untrusted: an unknown intent, a confidence as text or a boolean, a
    reply that is no JSON object, all leave the decision to the model."""
    replies = [
        {"intent": "intent_delete_everything", "entities": {}, "confidence": 1.0},
        {"intent": "intent_refund", "entities": {}, "confidence": "0.99"},
        {"intent": "intent_refund", "entities": {}, "confidence": True},
        {"intent": "intent_refund", "entities": {}},
        "not json",
    ]
    for i, bad in enumerate(replies):
        folder = tmp_path / str(i)
        folder.mkdir()
        text = bad if isinstance(bad, str) else json.dumps(bad)
        classifier = FunctionModel(lambda _r, t=text: ChatResponse(text=t))
        job, model = run_lean(folder, accepting(folder, 0.1), classifier)
        assert model.calls[0].stage == "intent", bad
        assert "decided_by" not in events_of(job, "intent_detected")[0].data


def test_the_classifier_s_confidence_is_its_lead_over_the_next_intent() -> None:
    index = NgramIndex(
        [("refund", "refund my order"), ("status", "where is my order"), ("x", "weather")]
    )
    label, score, confidence = index.best("refund my order please")
    assert label == "refund" and 0 < confidence < score  # "order" is shared
    alone, score, confidence = index.best("what is the weather")
    assert alone == "x" and confidence == score  # no other intent is related
    assert index.best("zzz qqq") == ("", 0.0, 0.0)


def test_the_intent_prompt_is_one_line_per_intent_with_no_examples() -> None:
    skill = load_skill(REFUND)
    model = OfflineModel()
    request = intent_request(skill, "Track my parcel")
    system = request.messages[0].content
    assert len(system.splitlines()) == 1 + len(skill.intents.supported)
    assert "I want my money back" not in system  # examples stay in data
    assert "^ORD-" not in system  # a pattern is checked, not sent
    assert request.data["intents"][0]["examples"]
    reply = json.loads(run(model.complete(request)).text)
    assert reply["intent"] == "intent_order_status"  # the offline model reads data
    assert ChatMessage("user", "Track my parcel") in request.messages
