"""ScriptedModel and FunctionModel: scripts from YAML, JSON and inline, and every error."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest

import skillwire.testing
from skillwire.core.chat import (
    ChatMessage,
    ChatModel,
    ChatRequest,
    ChatResponse,
    Stage,
    ToolCall,
    Usage,
)
from skillwire.core.errors import ModelError, ModelUnavailableError
from skillwire.testing import (
    FunctionModel,
    IncompleteScriptError,
    ScriptedModel,
    ScriptedReply,
    ScriptError,
    ScriptExhaustedError,
    ScriptFormatError,
    StageMismatchError,
)

DOCS = Path(__file__).resolve().parents[2] / "docs" / "testing.md"


def request(stage: Stage, text: str = "hi") -> ChatRequest:
    return ChatRequest(stage, (ChatMessage("user", text),))


def ask(model: ChatModel, stage: Stage) -> ChatResponse:
    return asyncio.run(model.complete(request(stage)))


def run_all(model: ScriptedModel, stages: list[Stage]) -> list[ChatResponse]:
    async def go() -> list[ChatResponse]:
        return [await model.complete(request(stage)) for stage in stages]

    return asyncio.run(go())


# ---------------------------------------------------------------- reply kinds


def test_every_reply_kind_inline() -> None:
    model = ScriptedModel(
        [
            {"stage": "intent", "json": {"intent": "intent_refund", "entities": {"amount": 120}}},
            {"stage": "planner", "tool_call": {"name": "verify_identity", "arguments": {"a": 1}}},
            {"stage": "gate", "json": {"passed": True, "score": 1.0, "reasons": []}},
            {
                "stage": "polisher",
                "text": "Done.",
                "usage": {"input_tokens": 7, "output_tokens": 3},
            },
        ]
    )
    intent, planner, gate, polisher = run_all(model, ["intent", "planner", "gate", "polisher"])
    assert json.loads(intent.text) == {"intent": "intent_refund", "entities": {"amount": 120}}
    assert intent.tool_calls == () and intent.finish_reason == "stop"
    assert planner.text == "" and planner.finish_reason == "tool_calls"
    assert planner.tool_calls == (
        ToolCall("verify_identity", {"a": 1}, raw_arguments='{"a": 1}', id="call_1"),
    )
    assert json.loads(gate.text)["passed"] is True
    assert polisher.text == "Done."
    assert polisher.usage == Usage(7, 3)
    assert intent.usage == Usage()
    assert {r.model for r in (intent, planner, gate, polisher)} == {"scripted:inline"}
    assert model.name == "scripted:inline"
    model.assert_complete()


def test_a_json_reply_is_json_dumps_of_the_object() -> None:
    obj = {"passed": False, "reasons": [{"code": "MISSING_REQUIRED_FIELD", "detail": "x"}]}
    model = ScriptedModel([{"stage": "gate", "json": obj}])
    assert ask(model, "gate").text == json.dumps(obj)


def test_finish_reason_and_empty_text_can_be_scripted() -> None:
    model = ScriptedModel([{"stage": "polisher", "text": "", "finish_reason": "length"}])
    response = ask(model, "polisher")
    assert (response.text, response.finish_reason) == ("", "length")


def test_model_is_a_chat_model() -> None:
    assert isinstance(ScriptedModel([]), ChatModel)
    assert isinstance(FunctionModel(lambda r: ChatResponse()), ChatModel)


# ---------------------------------------------------------------- tool calls


def test_several_tool_calls_are_numbered_across_the_script() -> None:
    model = ScriptedModel(
        [
            {
                "stage": "planner",
                "tool_calls": [
                    {"name": "verify_identity", "arguments": {"order_id": "ORD-12345"}},
                    {"name": "check_eligibility", "arguments": {"amount": 120}},
                ],
            },
            {"stage": "planner", "tool_call": {"name": "process_refund", "id": "mine"}},
            {"stage": "planner", "tool_call": {"name": "final_answer", "arguments": {}}},
        ]
    )
    first, second, third = run_all(model, ["planner", "planner", "planner"])
    assert [(c.name, c.id) for c in first.tool_calls] == [
        ("verify_identity", "call_1"),
        ("check_eligibility", "call_2"),
    ]
    assert first.tool_calls[1].arguments == {"amount": 120}
    assert second.tool_calls == (ToolCall("process_refund", {}, "{}", "mine"),)
    assert third.tool_calls[0].id == "call_4"


@pytest.mark.parametrize(
    ("raw", "arguments"),
    [
        ('{"order_id": "ORD-1', None),  # not JSON at all
        ('["ORD-12345"]', None),  # JSON, but not an object
        ("null", None),
        ('{"order_id": "ORD-12345"}', {"order_id": "ORD-12345"}),
    ],
)
def test_arguments_given_as_a_string_are_raw_text(raw: str, arguments: Any) -> None:
    model = ScriptedModel([{"stage": "planner", "tool_call": {"name": "t", "arguments": raw}}])
    (call,) = ask(model, "planner").tool_calls
    assert call.arguments == arguments
    assert call.raw_arguments == raw


def test_replies_built_in_python_get_ids_and_raw_arguments() -> None:
    model = ScriptedModel(
        [
            ScriptedReply("planner", tool_calls=(ToolCall("a", {"x": 1}),)),
            ScriptedReply("planner", tool_calls=(ToolCall("b", None, "oops", "id-b"),)),
        ]
    )
    first, second = run_all(model, ["planner", "planner"])
    assert first.tool_calls == (ToolCall("a", {"x": 1}, '{"x": 1}', "call_1"),)
    assert second.tool_calls == (ToolCall("b", None, "oops", "id-b"),)


def test_a_scripted_reply_checks_itself() -> None:
    with pytest.raises(ScriptFormatError, match="exactly one payload"):
        ScriptedReply("gate")
    with pytest.raises(ScriptFormatError, match="exactly one payload"):
        ScriptedReply("gate", text="a", json={})
    with pytest.raises(ScriptFormatError, match="unknown stage 'judge'"):
        ScriptedReply("judge", text="a")  # type: ignore[arg-type]


# ---------------------------------------------------------------- files

YAML_SCRIPT = """\
# a refund, the short way
- stage: intent
  json: {intent: intent_refund, entities: {order_id: ORD-12345}}

- stage: planner
  tool_call:
    name: verify_identity
    arguments: {order_id: ORD-12345}
- stage: polisher
  text: All done.
"""


def test_from_yaml_file(tmp_path: Path) -> None:
    path = tmp_path / "refund.yaml"
    path.write_text(YAML_SCRIPT, encoding="utf-8")
    model = ScriptedModel.from_file(path)
    assert model.name == "scripted:refund.yaml"
    assert [r.line for r in model.replies] == [2, 5, 9]
    intent, planner, polisher = run_all(model, ["intent", "planner", "polisher"])
    assert json.loads(intent.text)["entities"] == {"order_id": "ORD-12345"}
    assert planner.tool_calls[0].arguments == {"order_id": "ORD-12345"}
    assert polisher.text == "All done."
    assert polisher.model == "scripted:refund.yaml"


def test_from_json_file_with_a_replies_key(tmp_path: Path) -> None:
    path = tmp_path / "refund.json"
    path.write_text(
        '{"replies": [\n'
        '  {"stage": "gate", "json": {"passed": true, "score": 0.9}},\n'
        '  {"stage": "planner",\n'
        '   "tool_calls": [{"name": "a", "arguments": "{bad"}]}\n'
        "]}\n",
        encoding="utf-8",
    )
    model = ScriptedModel.from_file(path)
    assert model.name == "scripted:refund.json"
    assert [r.line for r in model.replies] == [2, 3]
    gate, planner = run_all(model, ["gate", "planner"])
    assert json.loads(gate.text) == {"passed": True, "score": 0.9}
    assert planner.tool_calls[0].arguments is None


def test_yml_suffix_and_explicit_format(tmp_path: Path) -> None:
    (tmp_path / "s.yml").write_text("- {stage: gate, text: ok}\n", encoding="utf-8")
    assert len(ScriptedModel.from_file(tmp_path / "s.yml").replies) == 1
    (tmp_path / "s.txt").write_text('[{"stage": "gate", "text": "ok"}]', encoding="utf-8")
    with pytest.raises(ScriptFormatError, match=r"\.yaml, \.yml or \.json"):
        ScriptedModel.from_file(tmp_path / "s.txt")
    assert len(ScriptedModel.from_file(tmp_path / "s.txt", fmt="json").replies) == 1


def test_from_text_in_both_formats() -> None:
    yaml_model = ScriptedModel.from_text(YAML_SCRIPT, "yaml", name="refund")
    assert yaml_model.name == "scripted:refund"
    json_model = ScriptedModel.from_text('[{"stage": "polisher", "text": "x"}]', "json")
    assert json_model.name == "scripted:inline"
    assert ask(json_model, "polisher").text == "x"


def test_an_empty_script_allows_no_call() -> None:
    model = ScriptedModel.from_text("replies: []", "yaml")
    model.assert_complete()
    with pytest.raises(ScriptExhaustedError, match="after all 0 replies"):
        ask(model, "intent")


# ---------------------------------------------------------------- errors at run time


def test_stage_mismatch_names_the_reply_and_both_stages(tmp_path: Path) -> None:
    path = tmp_path / "refund.yaml"
    path.write_text(YAML_SCRIPT, encoding="utf-8")
    model = ScriptedModel.from_file(path)
    ask(model, "intent")
    with pytest.raises(StageMismatchError) as caught:
        ask(model, "gate")
    error = caught.value
    assert (error.index, error.expected, error.called) == (1, "planner", "gate")
    assert (error.file, error.line) == (str(path), 5)
    message = str(error)
    assert message.startswith(f"{path}:5: replies[1]: ")
    assert "'planner'" in message and "'gate'" in message and "earlier calls: intent" in message
    # the reply was not used: the script can go on once the right call comes
    assert [r.stage for r in model.remaining] == ["planner", "polisher"]
    assert ask(model, "planner").tool_calls[0].name == "verify_identity"


def test_running_out_of_replies() -> None:
    model = ScriptedModel([{"stage": "intent", "json": {"intent": "x", "entities": {}}}])
    ask(model, "intent")
    with pytest.raises(ScriptExhaustedError) as caught:
        ask(model, "planner")
    assert (caught.value.index, caught.value.expected, caught.value.called) == (1, None, "planner")
    assert "call 2 (stage 'planner') came after all 1 replies" in str(caught.value)


def test_assert_complete_lists_the_unused_replies() -> None:
    model = ScriptedModel.from_text(YAML_SCRIPT, "yaml")
    ask(model, "intent")
    assert len(model.remaining) == 2
    with pytest.raises(IncompleteScriptError) as caught:
        model.assert_complete()
    assert caught.value.unused == [(1, "planner"), (2, "polisher")]
    assert str(caught.value) == (
        "2 of 3 replies not used: replies[1] (planner, line 5), replies[2] (polisher, line 9)"
    )
    run_all(model, ["planner", "polisher"])
    model.assert_complete()
    assert not model.remaining


def test_skip_continues_a_resumed_script() -> None:
    model = ScriptedModel.from_text(YAML_SCRIPT, "yaml")
    model.skip(2)
    assert ask(model, "polisher").text == "All done."
    model.assert_complete()
    assert len(model.calls) == 1
    with pytest.raises(ScriptExhaustedError, match="cannot skip 1 replies: 0 of 3 are left"):
        model.skip(1)
    with pytest.raises(ValueError, match="negative"):
        model.skip(-1)


def test_every_call_is_recorded_even_a_failing_one() -> None:
    model = ScriptedModel([{"stage": "intent", "json": {}}])
    first, second = request("intent", "refund ORD-12345"), request("planner")

    async def go() -> None:
        await model.complete(first)
        with pytest.raises(ScriptExhaustedError):
            await model.complete(second)

    asyncio.run(go())
    assert model.calls == [first, second]
    assert model.calls[0].messages[0].content == "refund ORD-12345"


def test_script_errors_are_assertions_not_model_errors() -> None:
    assert issubclass(ScriptError, AssertionError)
    assert not issubclass(ScriptError, ModelError)
    for cls in (ScriptFormatError, StageMismatchError, ScriptExhaustedError, IncompleteScriptError):
        assert issubclass(cls, ScriptError)


def test_latency_awaits_asyncio_sleep(monkeypatch: pytest.MonkeyPatch) -> None:
    waits: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        waits.append(seconds)

    monkeypatch.setattr(asyncio, "sleep", fake_sleep)  # the one scripted.py awaits
    replies: list[dict[str, Any]] = [{"stage": "gate", "text": "a"}]
    ask(ScriptedModel(replies, latency=0.25), "gate")
    ask(ScriptedModel(replies), "gate")
    assert waits == [0.25]
    with pytest.raises(ValueError, match="latency"):
        ScriptedModel(replies, latency=-1)


# ---------------------------------------------------------------- bad scripts


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        ("{text: hi}", "missing 'stage'"),
        ("{stage: judge, text: hi}", "unknown stage 'judge'; use one of intent, planner"),
        ("{stage: gate, text: hi, json: {passed: true}}", "found text and json"),
        ("{stage: gate}", "found none"),
        ("{stage: gate, txt: hi}", "unknown key(s) txt"),
        ("{stage: gate, text: 42}", "text must be a string, not a number"),
        ("{stage: gate, json: [1, 2]}", "json must be an object, not a list"),
        ("{stage: gate, json: {at: 2024-01-01}}", "json is not plain JSON data"),
        ("{stage: gate, json: {x: .nan}}", "json is not plain JSON data"),
        ("{stage: planner, tool_calls: []}", "tool_calls must be a non-empty list"),
        ("{stage: planner, tool_call: {arguments: {}}}", "'name' must be a non-empty string"),
        ("{stage: planner, tool_call: {name: t, arguments: 3}}", "'arguments' must be a mapping"),
        ("{stage: planner, tool_call: {name: t, args: {}}}", "unknown key(s) args"),
        ("{stage: planner, tool_calls: [{name: t}, 5]}", "tool_calls[1] must be a mapping"),
        ("{stage: gate, text: a, usage: {input_tokens: -1}}", "usage.input_tokens"),
        ("{stage: gate, text: a, usage: {tokens: 1}}", "usage must be a mapping"),
        ("[stage, gate]", "a reply must be a mapping, not a list"),
    ],
)
def test_a_bad_reply_names_its_file_index_and_line(
    tmp_path: Path, reply: str, message: str
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(f"replies:\n  - {{stage: intent, text: ok}}\n\n  - {reply}\n", encoding="utf-8")
    with pytest.raises(ScriptFormatError) as caught:
        ScriptedModel.from_file(path)
    assert (caught.value.file, caught.value.index, caught.value.line) == (str(path), 1, 4)
    assert str(caught.value).startswith(f"{path}:4: replies[1]: ")
    assert message in str(caught.value)


@pytest.mark.parametrize(
    ("text", "fmt", "message", "line"),
    [
        ("- {stage: gate, text: [\n", "yaml", "invalid YAML", 2),
        ("- a\n---\n- b\n", "yaml", "invalid YAML", 2),
        ("- {stage: gate, text: a, text: b}\n", "yaml", "invalid YAML: found duplicate key", 1),
        ("- {stage: gate, text: !custom a}\n", "yaml", "invalid YAML", 1),
        ("", "yaml", "not null", 0),
        ("stage: gate\ntext: a\n", "yaml", "found unknown key(s) stage, text", 0),
        ("{replies: {stage: gate}}", "yaml", "not a mapping", 0),
        ('[\n{"stage": "gate",,}]', "json", "invalid JSON", 2),
        ('[{"stage": "gate", "text": "a", "text": "b"}]', "json", "duplicate key 'text'", 0),
        ('[{"stage": "gate", "json": {"x": NaN}}]', "json", "NaN is not JSON", 0),
        ('{"stage": "gate"}', "json", "found unknown key(s) stage", 0),
    ],
)
def test_a_bad_script_is_refused_clearly(text: str, fmt: str, message: str, line: int) -> None:
    with pytest.raises(ScriptFormatError) as caught:
        ScriptedModel.from_text(text, fmt)  # type: ignore[arg-type]
    assert message in str(caught.value)
    assert caught.value.line == line
    assert caught.value.index is None


def test_a_bad_inline_reply_names_its_index() -> None:
    with pytest.raises(ScriptFormatError, match=re.escape("replies[2]: missing 'stage'")):
        ScriptedModel([{"stage": "gate", "text": "a"}] * 2 + [{"text": "b"}])


def test_a_file_that_is_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_bytes(b"- {stage: gate, text: \xff}\n")
    with pytest.raises(ScriptFormatError, match="not UTF-8"):
        ScriptedModel.from_file(path)


# ---------------------------------------------------------------- FunctionModel


def test_function_model_with_a_plain_function() -> None:
    def reply(req: ChatRequest) -> ChatResponse:
        return ChatResponse(text=f"{req.stage}: {req.messages[-1].content}")

    model = FunctionModel(reply)
    response = ask(model, "polisher")
    assert response.text == "polisher: hi"
    assert response.model == model.name == "function:reply"
    assert [c.stage for c in model.calls] == ["polisher"]


def test_function_model_with_an_async_function_and_a_name() -> None:
    async def reply(req: ChatRequest) -> ChatResponse:
        await asyncio.sleep(0)
        return ChatResponse(text="async", model="kept")

    model = FunctionModel(reply, name="fake:gpt")
    assert model.name == "fake:gpt"
    response = ask(model, "gate")
    assert (response.text, response.model) == ("async", "kept")


def test_function_model_passes_errors_through_and_checks_the_result() -> None:
    def down(req: ChatRequest) -> ChatResponse:
        raise ModelUnavailableError("gate model down")

    with pytest.raises(ModelUnavailableError, match="gate model down"):
        ask(FunctionModel(down), "gate")

    def wrong(req: ChatRequest) -> Any:
        return "not a response"

    with pytest.raises(TypeError, match="returned str, not a ChatResponse"):
        ask(FunctionModel(wrong), "gate")


# ---------------------------------------------------------------- the package and the docs


def test_the_export_list() -> None:
    assert sorted(skillwire.testing.__all__) == [
        "ChatFunction",
        "FunctionModel",
        "IncompleteScriptError",
        "MemoryJobStore",
        "ScriptError",
        "ScriptExhaustedError",
        "ScriptFormat",
        "ScriptFormatError",
        "ScriptedModel",
        "ScriptedReply",
        "StageMismatchError",
    ]
    for name in skillwire.testing.__all__:
        assert getattr(skillwire.testing, name) is not None


def test_the_refund_script_in_the_docs_runs() -> None:
    blocks = re.findall(r"```yaml\n(.*?)```", DOCS.read_text(encoding="utf-8"), re.DOTALL)
    model = ScriptedModel.from_text(blocks[0], "yaml", name="refund.yaml")
    stages: list[Stage] = ["intent", "planner", "planner", "planner", "planner", "gate", "polisher"]
    responses = run_all(model, stages)
    model.assert_complete()
    assert json.loads(responses[0].text) == {
        "intent": "intent_refund",
        "entities": {"order_id": "ORD-12345", "amount": 120},
    }
    names = [call.name for r in responses[1:5] for call in r.tool_calls]
    assert names == ["verify_identity", "check_eligibility", "process_refund", "final_answer"]
    assert set(responses[4].tool_calls[0].arguments or {}) == {"answer", "fields"}
    assert json.loads(responses[5].text)["passed"] is True
    assert responses[6].text
