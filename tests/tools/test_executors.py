"""Executors: python callables (sync and async, the idempotency key, ``blocking``, the
JSON form of results), simulate with ``{{arg}}`` templates, unknown executor types, and a
failing tool as the planner sees it."""

from __future__ import annotations

import asyncio
import enum
import json
import math
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest
from tests.engine.helpers import (
    ORDER,
    events_of,
    lookup_script,
    lookup_yaml,
    run,
    runtime_for,
    skill_from,
)

from skillwire.core.executor import ToolOutcome
from skillwire.core.job import JobStatus
from skillwire.skills import Tool
from skillwire.tools import Executors, PythonCallableExecutor, SimulatedExecutor, fill_template
from skillwire.tools.python_callable import as_json

MODULE = """
import asyncio
import threading

SEEN = []


def where(order_id):
    return {"thread": threading.get_ident()}


async def where_async(order_id):
    return {"thread": threading.get_ident()}


def returns_coroutine(order_id):
    return where_async(order_id)


def plain(order_id, amount=1):
    SEEN.append(("plain", threading.current_thread().name))
    return {"order_id": order_id, "amount": amount}


def keyed(order_id, idempotency_key):
    return {"order_id": order_id, "key": idempotency_key}


def anything(**kwargs):
    return {"got": sorted(kwargs)}


async def later(order_id, idempotency_key=""):
    await asyncio.sleep(0)
    SEEN.append(("later", threading.current_thread().name))
    return {"order_id": order_id, "key": idempotency_key}


def broken(order_id):
    raise ValueError(f"order {order_id} is locked")


def not_json(order_id):
    return {"when": object()}


def tupled(order_id):
    return {"pair": (1, 2), "nested": [(3,)]}


class Callable:
    async def __call__(self, order_id):
        return {"async_object": order_id}


instance = Callable()
"""


def python_tool(name: str, target: str, **executor: Any) -> Tool:
    """A tool running ``tools_mod:<target>``, with more executor fields if given."""
    return Tool.model_validate(
        {
            "name": name,
            "inputs": [{"name": "order_id", "type": "string", "required": True}],
            "executor": {"type": "python", "callable": f"tools_mod:{target}", **executor},
        }
    )


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A skill folder holding ``tools_mod.py``."""
    (tmp_path / "tools_mod.py").write_text(textwrap.dedent(MODULE))
    return tmp_path


def execute(
    root: Path, target: str, args: dict[str, Any], key: str = "job:0", **executor: Any
) -> ToolOutcome:
    """Run ``tools_mod:<target>`` through the registry of executors."""
    tool = python_tool(target, target, **executor)
    return asyncio.run(Executors().execute(tool, args, idempotency_key=key, skill_root=root))


def thread_of(root: Path, target: str, **executor: Any) -> tuple[int, int]:
    """The thread ``tools_mod:<target>`` ran on, and the event loop's thread."""

    async def main() -> tuple[int, int]:
        tool = python_tool(target, target, **executor)
        outcome = await Executors().execute(
            tool, {"order_id": ORDER}, idempotency_key="k", skill_root=root
        )
        assert outcome.ok, outcome.error
        return outcome.result["thread"], threading.get_ident()

    return asyncio.run(main())


def test_blocking_is_true_unless_declared() -> None:
    assert python_tool("t", "where").executor.blocking is True  # type: ignore[union-attr]
    declared = python_tool("t", "where", blocking=False).executor
    assert declared.blocking is False  # type: ignore[union-attr]


def test_a_sync_callable_runs_off_the_loop_by_default(root: Path) -> None:
    tool_thread, loop_thread = thread_of(root, "where")
    assert tool_thread != loop_thread
    tool_thread, loop_thread = thread_of(root, "where", blocking=True)
    assert tool_thread != loop_thread


def test_a_non_blocking_sync_callable_runs_on_the_loop(root: Path) -> None:
    tool_thread, loop_thread = thread_of(root, "where", blocking=False)
    assert tool_thread == loop_thread


def test_async_callables_run_on_the_loop_whatever_blocking_says(root: Path) -> None:
    for blocking in (True, False):
        tool_thread, loop_thread = thread_of(root, "where_async", blocking=blocking)
        assert tool_thread == loop_thread
    # a sync callable returning a coroutine: the coroutine is awaited on the loop
    for blocking in (True, False):
        tool_thread, loop_thread = thread_of(root, "returns_coroutine", blocking=blocking)
        assert tool_thread == loop_thread


def test_a_non_blocking_tool_keeps_the_outcomes(root: Path) -> None:
    assert execute(root, "broken", {"order_id": ORDER}, blocking=False) == ToolOutcome(
        False, error="ValueError: order ORD-12345 is locked"
    )
    not_json = execute(root, "not_json", {"order_id": ORDER}, blocking=False)
    assert not not_json.ok and not_json.error.startswith("result of not_json is not JSON")
    assert execute(root, "tupled", {"order_id": ORDER}, blocking=False).result == {
        "pair": [1, 2],
        "nested": [[3]],
    }
    assert execute(root, "keyed", {"order_id": ORDER}, key="abc:2", blocking=False).result == {
        "order_id": ORDER,
        "key": "abc:2",
    }


def test_a_sync_callable_runs_in_a_worker_thread(root: Path) -> None:
    outcome = execute(root, "plain", {"order_id": ORDER})
    assert outcome == ToolOutcome(True, {"order_id": ORDER, "amount": 1})
    from skillwire.tools.python_callable import resolve_callable

    seen = resolve_callable("tools_mod:plain", root).__globals__["SEEN"]
    assert seen[-1][0] == "plain" and seen[-1][1] != threading.main_thread().name


def test_an_async_callable_is_awaited_on_the_loop(root: Path) -> None:
    outcome = execute(root, "later", {"order_id": ORDER}, key="j:3")
    assert outcome.result == {"order_id": ORDER, "key": "j:3"}
    from skillwire.tools.python_callable import resolve_callable

    seen = resolve_callable("tools_mod:later", root).__globals__["SEEN"]
    assert seen[-1] == ("later", threading.main_thread().name)


def test_an_object_with_an_async_call_is_awaited(root: Path) -> None:
    assert execute(root, "instance", {"order_id": ORDER}).result == {"async_object": ORDER}


def test_the_idempotency_key_is_passed_to_callables_that_take_it(root: Path) -> None:
    assert execute(root, "keyed", {"order_id": ORDER}, key="abc:1").result == {
        "order_id": ORDER,
        "key": "abc:1",
    }
    assert execute(root, "anything", {"order_id": ORDER}).result == {
        "got": ["idempotency_key", "order_id"]
    }
    # a callable without the parameter is called with its arguments only
    assert execute(root, "plain", {"order_id": ORDER}).ok


def test_a_raising_tool_is_an_outcome_not_an_exception(root: Path) -> None:
    outcome = execute(root, "broken", {"order_id": ORDER})
    assert outcome == ToolOutcome(False, error="ValueError: order ORD-12345 is locked")


def test_results_must_be_json_and_come_back_as_plain_json(root: Path) -> None:
    outcome = execute(root, "not_json", {"order_id": ORDER})
    assert not outcome.ok and outcome.error.startswith("result of not_json is not JSON")
    assert execute(root, "tupled", {"order_id": ORDER}).result == {"pair": [1, 2], "nested": [[3]]}


class Colour(enum.IntEnum):
    RED = 1


class Name(str):
    pass


def round_trip(value: Any) -> Any:
    """What storing ``value`` as JSON and reading it back gives."""
    return json.loads(json.dumps(value, allow_nan=False))


@pytest.mark.parametrize(
    "value",
    [
        None,
        True,
        0,
        -(2**70),
        1.5,
        -0.0,
        1e300,
        "",
        "caf\u00e9 \ud800",
        [],
        {},
        {"b": 1, "a": [1, 2.5, None, {"x": "y"}], "c": {"d": [[]]}},
        (1, 2),
        {"pair": (1, [2, (3,)])},
        {1: "int key", 2.5: "float key", None: "none key"},
        {True: "bool key", False: 0},
        {"colour": Colour.RED, Colour.RED: "enum key"},
        Name("sub"),
        {Name("k"): [Name("v")]},
        [True, 1, 1.0],
    ],
)
def test_as_json_equals_the_json_round_trip(value: Any) -> None:
    expected = round_trip(value)
    got = as_json(value)
    assert got == expected
    assert json.dumps(got) == json.dumps(expected)  # types and key order, not only equality
    assert repr(got) == repr(expected)


def test_as_json_copies_containers() -> None:
    inner = {"n": 1}
    value = {"inner": inner, "again": inner, "items": [inner]}
    got = as_json(value)
    inner["n"] = 2  # the tool changing its own data later does not change the result
    assert got == {"inner": {"n": 1}, "again": {"n": 1}, "items": [{"n": 1}]}
    assert got["inner"] is not got["again"]


@pytest.mark.parametrize("value", [math.nan, {"x": math.inf}, [-math.inf], {"o": object()}])
def test_as_json_refuses_what_the_round_trip_refuses(value: Any) -> None:
    with pytest.raises((TypeError, ValueError)) as expected:
        round_trip(value)
    with pytest.raises(type(expected.value), match=str(expected.value)):
        as_json(value)


def test_as_json_refuses_cycles() -> None:
    cycle: dict[str, Any] = {}
    cycle["self"] = cycle
    with pytest.raises(ValueError, match="Circular reference"):
        as_json(cycle)
    listed: list[Any] = []
    listed.append(listed)
    with pytest.raises(ValueError, match="Circular reference"):
        as_json(listed)


def test_a_callable_that_cannot_be_loaded_is_an_outcome(root: Path) -> None:
    missing = execute(root, "nope", {"order_id": ORDER})
    assert not missing.ok and missing.error.startswith("cannot load tools_mod:nope")
    tool = Tool.model_validate(
        {"name": "t", "executor": {"type": "python", "callable": "no_such_mod:f"}}
    )
    outcome = asyncio.run(Executors().execute(tool, {}, idempotency_key="k", skill_root=root))
    assert not outcome.ok and "no_such_mod" in outcome.error


def test_the_python_executor_refuses_other_declarations(root: Path) -> None:
    tool = Tool.model_validate({"name": "t", "executor": {"type": "simulate"}})
    outcome = asyncio.run(
        PythonCallableExecutor().execute(tool, {}, idempotency_key="k", skill_root=root)
    )
    assert outcome == ToolOutcome(False, error="t has no python executor")


def simulate(result: Any, state_changes: Any = None, **args: Any) -> ToolOutcome:
    """Run a simulate executor declaring ``result`` and ``state_changes``."""
    spec: dict[str, Any] = {"type": "simulate", "result": result}
    if state_changes is not None:
        spec["state_changes"] = state_changes
    tool = Tool.model_validate({"name": "sim", "executor": spec})
    return asyncio.run(
        SimulatedExecutor().execute(tool, args, idempotency_key="k", skill_root=None)
    )


def test_simulate_fills_arg_templates() -> None:
    outcome = simulate(
        {
            "order_id": "{{order_id}}",
            "note": "refund of {{amount}} for {{order_id}}",
            "amount": "{{amount}}",
            "items": ["{{order_id}}", {"deep": "{{ amount }}"}],
            "unknown": "{{missing}}",
            "fixed": 3,
        },
        {"refund_issued": True, "for": "{{order_id}}"},
        order_id=ORDER,
        amount=750,
    )
    assert outcome.ok
    assert outcome.result == {
        "order_id": ORDER,
        "note": f"refund of 750 for {ORDER}",
        "amount": 750,  # a string that is only a template takes the value and its type
        "items": [ORDER, {"deep": 750}],
        "unknown": "{{missing}}",
        "fixed": 3,
    }
    assert outcome.state_changes == {"refund_issued": True, "for": ORDER}


def test_fill_template_leaves_non_templates_alone() -> None:
    assert fill_template(None, {"a": 1}) is None
    assert fill_template("{{a}} and {{b}}", {"a": 1}) == "1 and {{b}}"


def test_a_tool_without_an_executor_is_simulated() -> None:
    tool = Tool.model_validate({"name": "bare"})
    outcome = asyncio.run(Executors().execute(tool, {}, idempotency_key="k", skill_root=None))
    assert outcome == ToolOutcome(True, {"_simulated": {"tool": "bare", "invented": []}})


def test_an_executor_type_not_available_fails_clearly() -> None:
    tool = Tool.model_validate({"name": "sh", "executor": {"type": "mcp", "server": "files"}})
    executors = Executors()
    executors.by_type.pop("mcp", None)
    outcome = asyncio.run(executors.execute(tool, {}, idempotency_key="k", skill_root=None))
    assert outcome == ToolOutcome(
        False, error="executor type 'mcp' is not available in this runtime yet"
    )


def test_executors_can_be_added_and_replaced() -> None:
    class Echo:
        async def execute(
            self, tool: Tool, args: dict[str, Any], *, idempotency_key: str, skill_root: Path | None
        ) -> ToolOutcome:
            return ToolOutcome(True, {"echo": args, "key": idempotency_key})

    tool = Tool.model_validate(
        {"name": "sh", "executor": {"type": "shell_command", "command": "ls"}}
    )
    outcome = asyncio.run(
        Executors({"shell_command": Echo()}).execute(
            tool, {"x": 1}, idempotency_key="j:0", skill_root=None
        )
    )
    assert outcome.result == {"echo": {"x": 1}, "key": "j:0"}


FAILING_SKILL = lookup_yaml("failing", lookup_order="tools_mod:broken")


def test_a_failing_tool_is_reported_to_the_planner(tmp_path: Path) -> None:
    skill = skill_from(tmp_path / "skill", FAILING_SKILL, tools_mod=MODULE)
    script = lookup_script(f"Sorry, {ORDER} is locked.")

    async def main() -> None:
        async with runtime_for(tmp_path / "jobs.db", script) as (rt, model):
            job = await rt.start(skill, "look up my order ORD-12345")
            model.assert_complete()
            assert job.status is JobStatus.COMPLETED
            failed = events_of(job, "tool_failed")
            assert [(e.data["tool"], e.message) for e in failed] == [
                ("lookup_order", "ValueError: order ORD-12345 is locked")
            ]
            told = [m for m in model.calls[2].messages if m.role == "tool"][-1]
            assert told.tool_call_id == "t1"
            assert told.content == "ERROR: ValueError: order ORD-12345 is locked"
            history = job.record.state["history"]
            assert [(h["ok"], h["error"]) for h in history] == [
                (False, "ValueError: order ORD-12345 is locked")
            ]
            assert job.record.state["evidence"] == 0  # a failure is not evidence

    run(main())


def test_the_tools_api_is_exported_and_documented() -> None:
    import skillwire.tools

    assert sorted(skillwire.tools.__all__) == [
        "CallableRefusedError",
        "Credentials",
        "DEFAULT_SHELL_PATH",
        "DEFAULT_TOOL_TIMEOUT",
        "Executors",
        "HttpExecutor",
        "McpExecutor",
        "McpServer",
        "PythonCallableExecutor",
        "ShellExecutor",
        "SimulatedExecutor",
        "SkillCredentials",
        "ToolThreads",
        "ToolTimeoutError",
        "callable_problem",
        "fill_template",
        "module_listed",
        "resolve_callable",
        "undeclared_effects",
    ]
    for name in skillwire.tools.__all__:
        value = getattr(skillwire.tools, name)
        assert isinstance(value, float | str) or value.__doc__, name
