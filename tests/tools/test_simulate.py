"""Simulated tools fill their declared output and the contract fields they stand in for;
a tool with a real executor never gets an invented value; the load report names the
contract fields nothing can supply."""

from __future__ import annotations

import asyncio
import textwrap
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import EXAMPLES

from skillwire.core.executor import ToolOutcome
from skillwire.skills import Skill, Tool, load_paths, load_skill
from skillwire.tools import Executors, SimulatedExecutor
from skillwire.tools.simulate import MARKER, invent

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
SPEC = FIXTURES / "spec_000_domain.yaml"


def run_tool(tool: Tool, args: dict[str, Any], root: Path | None = None) -> ToolOutcome:
    return asyncio.run(Executors().execute(tool, args, idempotency_key="k", skill_root=root))


def skill_text(tmp_path: Path, text: str, name: str = "domain.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).strip("\n") + "\n")
    return path


BASE = """
problem: {statement: "Help with orders"}
intents:
  supported:
    - id: lookup
      description: "Look an order up"
      examples: ["where is my order"]
      entities:
        - {name: order_id, type: string, required: true}
"""


def test_the_spec_tool_stands_in_for_the_contract() -> None:
    skill = load_skill(SPEC)
    tool = skill.tool("process_refund")
    assert tool is not None and tool.simulation().contract_fields == (
        "order_id",
        "status",
        "next_steps",
    )
    outcome = run_tool(tool, {"order_id": "12345", "amount": 120})
    assert outcome.ok
    assert outcome.result == {
        "order_id": "12345",  # its own argument, never made up
        "status": "(simulated status)",
        "next_steps": "(simulated next steps)",
        MARKER: {"tool": "process_refund", "invented": ["status", "next_steps"]},
    }


def test_values_are_deterministic() -> None:
    tool = load_skill(SPEC).tool("process_refund")
    assert tool is not None
    args = {"order_id": "1", "amount": 1}
    assert run_tool(tool, args) == run_tool(tool, dict(args))


def test_declared_output_is_filled_by_type(tmp_path: Path) -> None:
    path = skill_text(
        tmp_path,
        BASE
        + """
tools:
  - name: check
    inputs: [{name: order_id, type: string, required: true}]
    output:
      type: object
      fields:
        - order_id
        - {name: total, type: number}
        - {name: items, type: integer}
        - {name: eligible, type: boolean}
        - {name: tier, type: string, enum: [gold, silver]}
      schema:
        type: object
        properties:
          refund: {type: number, exclusiveMinimum: 0}
          tags: {type: array, items: {type: string}}
          when: {type: string, format: date}
          owner: {type: object, properties: {id: {type: integer, minimum: 3}}}
    executor: {type: simulate, result: {note: "for {{order_id}}"}}
output_contract:
  required_fields: [order_id, total]
""",
    )
    tool = load_skill(path).tool("check")
    assert tool is not None and tool.simulation().contract_fields == ()  # its output is described
    result = run_tool(tool, {"order_id": "A-1"}).result
    assert result == {
        "note": "for A-1",
        "refund": 1,
        "tags": ["(simulated tags)"],
        "when": "2000-01-01",
        "owner": {"id": 3},
        "order_id": "A-1",
        "total": 0,
        "items": 0,
        "eligible": True,
        "tier": "gold",
        MARKER: {
            "tool": "check",
            "invented": ["refund", "tags", "when", "owner", "total", "items", "eligible", "tier"],
        },
    }
    assert isinstance(result["total"], int | float) and not isinstance(result["total"], bool)


def test_a_declared_result_wins_and_is_not_marked() -> None:
    skill = load_skill(EXAMPLES / "refund_support" / "domain.yaml")
    tool = skill.tool("check_order_status")
    assert tool is not None
    result = run_tool(tool, {"order_id": "ORD-12345"}).result
    assert result == {
        "order_id": "ORD-12345",
        "status": "shipped",
        "next_steps": "Your parcel arrives within 2 business days.",
    }


def test_a_real_executor_never_gets_invented_values(tmp_path: Path) -> None:
    (tmp_path / "mod.py").write_text("def refund(order_id):\n    return {'ok': True}\n")
    path = skill_text(
        tmp_path,
        BASE
        + """
tools:
  - name: refund
    inputs: [{name: order_id, type: string, required: true}]
    output: {type: object, fields: [status]}
    executor: {type: python, callable: "mod:refund", blocking: false}
output_contract:
  required_fields: [order_id, status, next_steps]
""",
    )
    skill = load_skill(path)
    tool = skill.tool("refund")
    assert tool is not None and tool.simulation().contract_fields == ()
    assert run_tool(tool, {"order_id": "A-1"}, tmp_path) == ToolOutcome(True, {"ok": True})
    # and the simulating executor refuses it, were it ever handed one
    refused = asyncio.run(
        SimulatedExecutor().execute(tool, {}, idempotency_key="k", skill_root=tmp_path)
    )
    assert not refused.ok and "not simulated" in refused.error


def test_a_tool_that_is_never_allowed_stands_in_for_nothing(tmp_path: Path) -> None:
    path = skill_text(
        tmp_path,
        BASE
        + """
tools:
  - name: ghost
    inputs: [{name: order_id, type: string}]
    policy: {allowed: never}
output_contract:
  required_fields: [status]
""",
    )
    result = load_paths([path])
    (rep,) = result.report.skills
    codes = [i.code for i in rep.warnings]
    assert "contract-field-unsupplied" in codes
    (skill,) = result.skills.values()
    tool = skill.tool("ghost")
    assert tool is not None and tool.simulation().contract_fields == ()


def test_a_contract_field_the_user_gives_is_not_made_up(tmp_path: Path) -> None:
    """``order_id`` is an entity: a simulated tool that does not take it as an argument
    does not make one up (it would override what the user said)."""
    path = skill_text(
        tmp_path,
        BASE
        + """
tools:
  - name: note
    inputs: [{name: text, type: string}]
output_contract:
  required_fields: [order_id, status]
""",
    )
    tool = load_skill(path).tool("note")
    assert tool is not None and tool.simulation().contract_fields == ("status",)
    result = run_tool(tool, {"text": "x"}).result
    assert "order_id" not in result and result["status"] == "(simulated status)"


def test_an_own_input_not_given_is_not_made_up() -> None:
    tool = load_skill(SPEC).tool("process_refund")
    assert tool is not None
    result = run_tool(tool, {"amount": 5}).result
    assert "order_id" not in result and MARKER in result


def test_the_load_report_names_unsuppliable_fields_with_their_line(tmp_path: Path) -> None:
    (tmp_path / "mod.py").write_text("def refund(order_id):\n    return {}\n")
    path = skill_text(
        tmp_path,
        BASE
        + """
tools:
  - name: refund
    inputs: [{name: order_id, type: string, required: true}]
    output: {type: object, fields: [status]}
    executor: {type: python, callable: "mod:refund"}
output_contract:
  required_fields:
    - order_id
    - status
    - next_steps
""",
    )
    (rep,) = load_paths([path]).report.skills
    found = [i for i in rep.warnings if i.code == "contract-field-unsupplied"]
    assert len(found) == 1
    (issue,) = found
    assert "'next_steps'" in issue.message
    lines = path.read_text().splitlines()
    assert issue.location.line is not None
    assert lines[issue.location.line - 1].strip() == "- next_steps"


@pytest.mark.parametrize(
    "path",
    [SPEC, EXAMPLES / "refund_support" / "domain.yaml", EXAMPLES / "refund_support_pkg"],
    ids=["spec", "yaml", "package"],
)
def test_the_examples_supply_every_contract_field(path: Path) -> None:
    (rep,) = load_paths([path]).report.skills
    assert not [i for i in rep.issues if i.code == "contract-field-unsupplied"]


def test_a_skill_built_by_hand_learns_its_fills_too() -> None:
    skill = Skill.model_validate(
        {
            "id": "hand",
            "tools": [{"name": "t"}],
            "output_contract": {"required_fields": ["answer"]},
        }
    )
    tool = skill.tool("t")
    assert tool is not None and tool.simulation().contract_fields == ("answer",)


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        ({"type": "number"}, 0),
        ({"type": "number", "minimum": 2.5}, 2.5),
        ({"type": "integer", "minimum": 2.5}, 3),
        ({"type": "number", "maximum": -4}, -4),
        ({"type": "integer", "exclusiveMaximum": 0}, -1),
        ({"type": ["null", "integer"]}, 0),
        ({"type": "string", "maxLength": 4}, "(sim"),
        ({"const": "x"}, "x"),
        ({"type": "string", "default": "d"}, "d"),
        ({"type": "string", "examples": ["e"]}, "e"),
        ({"anyOf": [{"type": "boolean"}, {"type": "string"}]}, True),
        ({"type": "object"}, {"simulated": True}),
        ({"type": "array", "minItems": 2, "items": {"type": "integer"}}, [0, 0]),
        ({}, "(simulated f)"),
    ],
)
def test_invent_by_schema(schema: dict[str, Any], expected: Any) -> None:
    value = invent("f", schema)
    assert value == expected and type(value) is type(expected)


def test_invent_stops_at_depth() -> None:
    deep: dict[str, Any] = {"type": "object", "properties": {}}
    node = deep
    for _ in range(10):
        child: dict[str, Any] = {"type": "object", "properties": {}}
        node["properties"]["n"] = child
        node = child
    value = invent("f", deep)
    for _ in range(4):
        value = value["n"]
    assert value == {"simulated": True}


MIXED = """
problem: {statement: "Refunds"}
intents:
  supported:
    - id: refund
      description: "Customer wants a refund"
      examples: ["refund my order"]
      entities:
        - {name: order_id, type: string, required: true}
tools:
  - name: verify
    description: "Verify the customer"
    inputs: [{name: order_id, type: string, required: true}]
    output:
      type: object
      fields: [order_id, {name: verified, type: boolean}, customer_id]
  - name: refund
    description: "Refund the order"
    inputs: [{name: order_id, type: string, required: true}]
    executor: {type: python, callable: "mod:refund", blocking: false}
policy:
  guardrails:
    never:
      - rule: "Never refund an unverified customer"
        tool: refund
        when: "!history.exists(h, h.tool == 'verify' && h.ok && h.result.verified == true)"
        action: block
  workflows:
    - name: refund
      steps: [verify, refund]
      required: true
output_contract:
  required_fields: [order_id, status]
"""

MODULE = """
CALLS = []


def refund(order_id):
    CALLS.append(order_id)
    return {"order_id": order_id, "status": "refunded"}
"""


def test_in_a_skill_with_a_real_tool_nothing_is_made_up(tmp_path: Path) -> None:
    """A made-up ``verified: true`` would let the real refund past its guardrail."""
    (tmp_path / "mod.py").write_text(MODULE)
    path = skill_text(tmp_path, MIXED)
    result = load_paths([path])
    (rep,) = result.report.skills
    (warning,) = [i for i in rep.warnings if i.code == "simulated-output-not-made-up"]
    assert "'verified', 'customer_id'" in warning.message
    assert warning.location.line == path.read_text().splitlines().index("    output:") + 1
    (skill,) = result.skills.values()
    verify = skill.tool("verify")
    assert verify is not None and verify.simulation().invents is False
    outcome = run_tool(verify, {"order_id": "A-1"})
    assert outcome.result == {"order_id": "A-1", MARKER: {"tool": "verify", "invented": []}}


def test_the_guardrail_still_blocks_the_real_tool(tmp_path: Path) -> None:
    from skillwire.core.job import OutcomeClass
    from skillwire.engine import Runtime
    from skillwire.models.offline import OfflineModel
    from skillwire.store import SQLiteJobStore

    (tmp_path / "mod.py").write_text(MODULE)
    skill = load_skill(skill_text(tmp_path, MIXED))

    async def flow() -> Any:
        store = SQLiteJobStore(tmp_path / "jobs.db")
        try:
            runtime = Runtime(store, OfflineModel(), executors=Executors())
            return await runtime.start(skill, "refund my order A-100")
        finally:
            await store.close()

    job = asyncio.run(flow())
    ran = [e.data["tool"] for e in job.events if e.kind == "tool_finished"]
    assert ran == ["verify"]
    assert job.record.outcome_class is OutcomeClass.BLOCKED


def test_the_same_skill_all_simulated_is_a_dry_run(tmp_path: Path) -> None:
    path = skill_text(
        tmp_path,
        MIXED.replace(
            '    executor: {type: python, callable: "mod:refund", blocking: false}\n', ""
        ),
    )
    skill = load_skill(path)
    verify = skill.tool("verify")
    assert verify is not None and verify.simulation().invents is True
    result = run_tool(verify, {"order_id": "A-1"}).result
    assert result["verified"] is True and result["customer_id"] == "(simulated customer id)"
    refund = skill.tool("refund")
    assert refund is not None and refund.simulation().contract_fields == ("status",)


def test_a_huge_min_items_makes_a_short_list() -> None:
    assert invent("f", {"type": "array", "minItems": 10**9}) == ["(simulated f)"] * 10
