"""Issue 21's measure: the one-tool refund job's prompt characters and model calls.

``bench.lean_job`` runs the job (model-backed intent, one ``process_refund`` that pauses
for a supervisor, the resume, the final answer, the finalization gate) on a fake model
that records every request; these tests hold the figures it prints to what the job
sends."""

from __future__ import annotations

import json

import pytest
from bench import lean_job

from skillwire.core.chat import ChatMessage, ChatRequest, ToolCall, ToolSpec
from skillwire.engine.prompts import request_chars


def test_the_job_runs_its_stages_and_counts_what_it_sends(
    capsys: pytest.CaptureFixture[str],
) -> None:
    lean_job.main([])
    line = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert line["outcome"] == "SUCCESS"
    stages = line["by_stage"]
    assert stages["intent"]["calls"] == 1  # model-backed: the model is asked
    assert stages["planner"]["calls"] == 2  # the refund, then the answer
    assert stages["gate"]["calls"] == 1
    assert "polisher" not in stages  # no persona
    assert line["model_calls_per_job"] == 4
    assert line["prompt_chars_per_job"] == sum(s["prompt_chars"] for s in stages.values())


def test_request_chars_counts_texts_tool_calls_and_tool_schemas() -> None:
    schema = {"type": "object", "properties": {"x": {"type": "string"}}}
    call = ToolCall("t", {"x": "1"}, '{"x":"1"}', "c1")
    request = ChatRequest(
        "planner",
        (ChatMessage("user", "hello"), ChatMessage("assistant", "", (call,))),
        (ToolSpec("t", "does t", schema),),
    )
    expected = len("hello") + len("t") + len('{"x":"1"}')
    expected += len("t") + len("does t") + len(json.dumps(schema, separators=(",", ":")))
    assert request_chars(request) == expected
    # the same tuple of tools is measured once, and the same answer comes back
    assert request_chars(request) == expected
