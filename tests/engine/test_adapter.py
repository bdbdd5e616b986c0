"""The model adapter (spec 002): parse a reply into a proposal, or a retry prompt that
lists the errors, up to a bound, then do-nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.engine.helpers import (
    FILES_SKILL,
    ORDER,
    call,
    events_of,
    final,
    gate,
    intent,
    polish,
    run,
    runtime_for,
    skill_from,
)

from skillwire.core.chat import ChatResponse, ToolCall
from skillwire.core.errors import ParseFailure
from skillwire.core.job import JobStatus
from skillwire.core.proposal import FinalAnswer, ToolProposal
from skillwire.engine import EngineLimits
from skillwire.engine.adapter import ModelAdapter
from skillwire.skills import load_skill

ADAPTER = ModelAdapter()


def parse_errors(response: ChatResponse) -> list[str]:
    """The errors the adapter finds in ``response``."""
    with pytest.raises(ParseFailure) as caught:
        ADAPTER.parse(response)
    return caught.value.errors


def test_a_tool_call_becomes_a_tool_proposal() -> None:
    proposal, source = ADAPTER.parse(
        ChatResponse(
            text="checking", tool_calls=(ToolCall("pkg__check", {"a": 1}, '{"a": 1}', "c9"),)
        )
    )
    assert proposal == ToolProposal("pkg.check", {"a": 1}, "c9", reasoning="checking")
    assert source is not None and source.id == "c9"


def test_final_answer_becomes_a_final_answer() -> None:
    args = {"answer": "done", "fields": {"order_id": ORDER}}
    proposal, _ = ADAPTER.parse(ChatResponse(tool_calls=(ToolCall("final_answer", args),)))
    assert proposal == FinalAnswer("done", {"order_id": ORDER})


@pytest.mark.parametrize(
    ("response", "expected"),
    [
        (ChatResponse(text=""), "the reply was empty"),
        (ChatResponse(text="I will check the order"), "the reply called no tool"),
        (
            ChatResponse(tool_calls=(ToolCall("a", {}), ToolCall("b", {}))),
            "the reply called 2 tools (a, b): call exactly one tool per step",
        ),
        (
            ChatResponse(tool_calls=(ToolCall("a", None, "{oops"),)),
            "the arguments of a are not a JSON object: '{oops'",
        ),
        (
            ChatResponse(tool_calls=(ToolCall("final_answer", {"answer": " ", "fields": []}),)),
            "final_answer.answer must be a non-empty string",
        ),
    ],
)
def test_unusable_replies_say_what_is_wrong(response: ChatResponse, expected: str) -> None:
    assert parse_errors(response)[0].startswith(expected)


def test_final_answer_reports_every_error_at_once() -> None:
    bad = ChatResponse(tool_calls=(ToolCall("final_answer", {"answer": 3, "fields": []}),))
    assert parse_errors(bad) == [
        "final_answer.answer must be a non-empty string",
        "final_answer.fields must be an object",
    ]


def test_the_retry_prompt_lists_the_errors() -> None:
    prompt = ADAPTER.retry_prompt(["first problem", "second problem"])
    assert "- first problem\n- second problem" in prompt
    assert prompt.endswith("Reply again with one tool call.")


BAD_REPLIES = [
    {"stage": "planner", "text": "Let me think about the order first."},
    {"stage": "planner", "tool_call": {"name": "check_order_status", "arguments": "{oops"}},
    {
        "stage": "planner",
        "tool_calls": [
            {"name": "check_order_status", "arguments": {}},
            {"name": "verify_identity", "arguments": {}},
        ],
    },
]
STATUS = {"order_id": ORDER, "status": "shipped", "next_steps": "Arrives in 2 days."}


def test_unusable_replies_are_retried_with_their_errors_then_do_nothing(
    tmp_path: Path, refund_yaml: Path
) -> None:
    script = [
        intent("intent_order_status", order_id=ORDER),
        *BAD_REPLIES,
        call("check_order_status", "s1", order_id=ORDER),
        final("ORD-12345 is shipped (status: shipped). Arrives in 2 days.", STATUS),
        gate(),
        polish("ORD-12345 is shipped (status: shipped). Arrives in 2 days."),
    ]

    async def main() -> None:
        async with runtime_for(tmp_path / "jobs.db", script) as (rt, model):
            job = await rt.start(load_skill(refund_yaml), "Where is ORD-12345?")
            model.assert_complete()
            assert job.status is JobStatus.COMPLETED
            errors = [e.data["errors"] for e in events_of(job, "parse_error")]
            assert [e[0].split(":")[0] for e in errors] == [
                "the reply called no tool",
                "the arguments of check_order_status are not a JSON object",
                "the reply called 2 tools (check_order_status, verify_identity)",
            ]
            for retry, error in zip(model.calls[2:4], errors[:2], strict=True):
                last = retry.messages[-1]
                assert last.role == "user" and f"- {error[0]}" in last.content
                assert last.content.startswith("Your last reply could not be used")
            nothing = events_of(job, "do_nothing")
            assert len(nothing) == 1 and "no usable reply after 3 tries" in nothing[0].message
            after = model.calls[4].messages[-1]
            assert after.content.startswith("No action was taken")
            # retries are model calls, not iterations; do-nothing spent one iteration
            assert job.record.state["iterations"] == 3
            assert job.record.state["model_calls"] == 8

    run(main())


def test_the_retry_bound_comes_from_the_limits(tmp_path: Path) -> None:
    skill = skill_from(tmp_path / "files", FILES_SKILL)
    script = [intent("intent_tidy"), BAD_REPLIES[0], call("listFiles", "l1", folder="/")]

    async def main() -> None:
        limits = EngineLimits(max_parse_retries=0, max_iterations=2)
        async with runtime_for(tmp_path / "jobs.db", script, limits=limits) as (rt, model):
            job = await rt.start(skill, "tidy my files")
            model.assert_complete()
            assert len(events_of(job, "parse_error")) == 1
            assert len(events_of(job, "do_nothing")) == 1
            assert events_of(job, "tool_finished")[0].data["tool"] == "listFiles"
            assert events_of(job, "budget_exhausted")

    run(main())
