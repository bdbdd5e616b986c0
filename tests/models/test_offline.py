"""The offline backend carries both example skills through every path, with no network."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import EXAMPLES

from skillwire.core.chat import ChatMessage, ChatRequest
from skillwire.core.job import JobStatus, OutcomeClass
from skillwire.engine import JobView, Runtime
from skillwire.engine.prompts import intent_request
from skillwire.models.offline import OfflineModel
from skillwire.models.offline.entities import extract_entities, shape_of
from skillwire.models.offline.similarity import NgramIndex
from skillwire.skills import load_skill
from skillwire.store import SQLiteJobStore
from skillwire.tools import Executors

SKILLS = [EXAMPLES / "refund_support" / "domain.yaml", EXAMPLES / "refund_support_pkg"]


def run_flow(path: Path, tmp_path: Path, message: str, answers: list[dict[str, Any]]) -> JobView:
    """Start a job and answer each pause in turn with the next entry of ``answers``."""

    async def flow() -> JobView:
        store = SQLiteJobStore(tmp_path / "jobs.db")
        runtime = Runtime(store, OfflineModel(), executors=Executors())
        try:
            job = await runtime.start(load_skill(path), message, context={"user_id": "u1"})
            for answer in answers:
                assert job.status is JobStatus.PAUSED
                given = dict(answer)
                if "approval" in given:  # a decision names its pause and who decides
                    waiting = job.record.waiting
                    assert waiting is not None
                    given.update(decided_by="sup", correlation_id=waiting.correlation_id)
                job = await runtime.resume(job.id, **given)
            return job
        finally:
            await store.close()

    return asyncio.run(flow())


@pytest.mark.parametrize("path", SKILLS, ids=["yaml", "package"])
def test_missing_input_then_approval_then_completion(path: Path, tmp_path: Path) -> None:
    job = run_flow(
        path,
        tmp_path,
        "I want a refund of $750",
        [
            {"input": {"order_id": "ORD-12345"}},
            {"approval": "approve", "role": "supervisor"},
        ],
    )
    record = job.record
    assert (record.status, record.outcome_class) == (JobStatus.COMPLETED, OutcomeClass.SUCCESS)
    assert record.fields["order_id"] == "ORD-12345" and record.fields["status"] == "refunded"
    assert "ORD-12345" in (record.reply or "")
    kinds = [e.kind for e in job.events]
    assert kinds.count("paused") == 2 and "gate_passed" in kinds and "polished" in kinds
    stages = [c.stage for c in job.model_calls]
    assert stages[0] == "intent" and stages[-2:] == ["gate", "polisher"]


@pytest.mark.parametrize("path", SKILLS, ids=["yaml", "package"])
def test_small_refund_needs_no_approval(path: Path, tmp_path: Path) -> None:
    job = run_flow(path, tmp_path, "Please refund $120 for order ORD-12345", [])
    assert job.record.outcome_class is OutcomeClass.SUCCESS
    assert not any(e.kind == "paused" for e in job.events)
    ran = [e.data["tool"] for e in job.events if e.kind == "tool_finished"]
    assert [t.rsplit(".", 1)[-1] for t in ran] == [
        "verify_identity",
        "check_eligibility",
        "process_refund",
    ]


@pytest.mark.parametrize("path", SKILLS, ids=["yaml", "package"])
def test_denial_ends_with_an_answer_and_the_tool_never_runs(path: Path, tmp_path: Path) -> None:
    job = run_flow(
        path, tmp_path, "Refund $750 for ORD-12345", [{"approval": "deny", "role": "supervisor"}]
    )
    assert job.record.status is JobStatus.COMPLETED
    assert job.record.fields["status"] == "denied"
    assert "denied by supervisor" in (job.record.reply or "")
    ran = [e.data["tool"] for e in job.events if e.kind == "tool_finished"]
    assert not any(t.endswith("process_refund") for t in ran)


@pytest.mark.parametrize("path", SKILLS, ids=["yaml", "package"])
def test_out_of_domain(path: Path, tmp_path: Path) -> None:
    job = run_flow(path, tmp_path, "What's the weather like in Paris tomorrow?", [])
    assert (job.record.status, job.record.outcome_class) == (
        JobStatus.COMPLETED,
        OutcomeClass.OUT_OF_DOMAIN,
    )
    assert job.record.reply == "I can only help with orders and refunds"
    assert [c.stage for c in job.model_calls] == ["intent"]


@pytest.mark.parametrize("path", SKILLS, ids=["yaml", "package"])
def test_order_status_uses_only_the_intents_tools(path: Path, tmp_path: Path) -> None:
    job = run_flow(path, tmp_path, "Where is my order ORD-55555?", [])
    assert job.record.fields == {
        "order_id": "ORD-55555",
        "status": "shipped",
        "next_steps": "Your parcel arrives within 2 business days.",
    }
    ran = [e.data["tool"] for e in job.events if e.kind == "tool_finished"]
    assert [t.rsplit(".", 1)[-1] for t in ran] == ["check_order_status"]


def test_invalid_input_keeps_asking_under_the_same_correlation_id(tmp_path: Path) -> None:
    async def flow() -> None:
        store = SQLiteJobStore(tmp_path / "jobs.db")
        runtime = Runtime(store, OfflineModel(), executors=Executors())
        job = await runtime.start(load_skill(SKILLS[0]), "I want a refund of $750")
        first = job.record.waiting
        assert first is not None
        again = await runtime.resume(job.id, input={"order_id": "12345"})
        waiting = again.record.waiting
        assert waiting is not None and again.status is JobStatus.PAUSED
        assert waiting.correlation_id == first.correlation_id
        assert waiting.last_prompt_at >= first.last_prompt_at
        assert waiting.error and "order_id" in waiting.error
        assert len(again.model_calls) == len(job.model_calls)
        await store.close()

    asyncio.run(flow())


def request_for(text: str, path: Path = SKILLS[0]) -> ChatRequest:
    return intent_request(load_skill(path), text)


def classify(text: str) -> dict[str, Any]:
    response = asyncio.run(OfflineModel().complete(request_for(text)))
    result: dict[str, Any] = json.loads(response.text)
    return result


def test_intent_and_entities() -> None:
    got = classify("Please refund $1,250.50 on ord-12345")
    assert got["intent"] == "intent_refund"
    assert got["entities"] == {"order_id": "ORD-12345", "amount": 1250.5}
    assert classify("Track my parcel ORD-77777")["intent"] == "intent_order_status"
    assert classify("Tell me a joke")["intent"] is None


def test_skill_threshold_overrides_the_default(tmp_path: Path) -> None:
    text = (
        (SKILLS[0])
        .read_text()
        .replace("  out_of_domain:", "  thresholds:\n    reject: 0.99\n  out_of_domain:", 1)
    )
    strict = tmp_path / "domain.yaml"
    strict.write_text(text)
    request = intent_request(load_skill(strict), "Refund please for ORD-12345")
    response = asyncio.run(OfflineModel().complete(request))
    assert json.loads(response.text)["intent"] is None


def test_entity_shapes() -> None:
    assert shape_of("ORD-12345") == "ORD\\-[0-9]{5}"
    specs = [
        {"name": "ticket", "type": "string", "examples": ["TCK-001"]},
        {"name": "priority", "type": "string", "enum": ["low", "high"]},
        {"name": "count", "type": "integer"},
    ]
    found = extract_entities("ticket TCK-042 is HIGH, 3 items", specs)
    assert found == {"ticket": "TCK-042", "priority": "high", "count": 3}


def test_similarity_prefers_content_words() -> None:
    index = NgramIndex([("a", "refund my money"), ("b", "where is my parcel")])
    scores = index.scores("I want my money back")
    assert scores["a"] > scores["b"]


def test_gate_is_mechanical_and_says_so() -> None:
    """The engine checks the output contract before asking; the offline gate passes a
    reply that says something, and refuses an empty one."""

    def verdict(reply: str) -> dict[str, Any]:
        prompt = f"Does the reply meet the goal? JSON: {{...}}\nGOAL: Refunds\nREPLY:\n{reply}"
        request = ChatRequest("gate", (ChatMessage("user", prompt),), response_format="json")
        result: dict[str, Any] = json.loads(asyncio.run(OfflineModel().complete(request)).text)
        return result

    assert verdict("Done")["passed"] is True
    empty = verdict("")
    assert empty["passed"] is False and empty["reasons"][0]["code"] == "OUTPUT_INCOMPLETE"
    assert "mechanical" in empty["note"]


def test_polisher_keeps_content() -> None:
    prompt = (
        "You are a reply formatter.\n\nPERSONA: Friendly helper\n\nFORMAT this\n\n"
        "RESPONSE TO FORMAT:\nRefund 750 done.\n\nReturn the formatted response text only."
    )
    request = ChatRequest("polisher", (ChatMessage("user", prompt),))
    text = asyncio.run(OfflineModel().complete(request)).text
    assert "Refund 750 done." in text and text != "Refund 750 done."
