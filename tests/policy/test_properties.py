"""Properties of the gate over random skills and random proposals (hypothesis).

Skills are generated as data (random tools with random inputs, ``allowed: never`` or
``always``, ``requires_approval``, guardrail denials, required workflows, approvals),
written as YAML or JSON and loaded like any skill. Proposals name the skill's tools and
unknown ones, with random arguments (wrong types included), random histories and grants.
Whatever the proposal:

- a denied tool, a ``never`` tool, an unknown tool and a call out of workflow order is
  never allowed; nor, in a workflow bound by ``same:``, a call for another key than the
  earlier steps ran for;
- a call missing a required input, or needing an approval not granted, is never allowed;
- an allowed call's arguments satisfy the tool's schema;
- no value with a trailing newline passes an anchored pattern (``^...$``);
- the gate never raises and always gives its reasons;
- applying a tool-access plan twice equals applying it once;
- a merged policy is never weaker than the base.
"""

from __future__ import annotations

import json
import math
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from tests.policy.helpers import with_required_data

from skillwire.policy import (
    ApprovalGrant,
    BasePolicy,
    Decision,
    Gate,
    ReasonCode,
    ToolRun,
    apply_plan,
    schema_validator,
)
from skillwire.policy.access import AccessState, merge_access
from skillwire.skills import Skill, load_skill
from skillwire.skills.model_package import ShellPolicy, ToolAccessPlan

SETTINGS = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
TOOL_NAMES = [f"tool_{i}" for i in range(8)]
FIELDS = ["amount", "count", "code", "flag", "note"]
TYPES = ["string", "number", "integer", "boolean"]
ROLES = ["supervisor", "manager", "finance"]
ANCHORED = [
    "^ORD-[0-9]{1,5}$",
    "^[A-Z]+$",
    "^.*$",
    "^\\w+$",
    "^(?:x|ORD-1)$",
    "^[^\\n]*$",
    "^(a+)+$",
]
"""Anchored patterns none of whose characters can be a newline."""


@dataclass
class SkillData:
    """A generated skill, and what the properties need to know about it."""

    data: dict[str, Any]
    denied: set[str] = field(default_factory=set)
    always_approval: dict[str, str] = field(default_factory=dict)
    orders: list[list[str]] = field(default_factory=list)
    fmt: str = "yaml"


@st.composite
def tool_specs(draw: st.DrawFn, name: str) -> dict[str, Any]:
    names = draw(st.lists(st.sampled_from(FIELDS), unique=True, max_size=4))
    inputs = [
        {"name": n, "type": draw(st.sampled_from(TYPES)), "required": draw(st.booleans())}
        for n in names
    ]
    for field_spec in inputs:
        if field_spec["type"] == "string" and draw(st.booleans()):
            field_spec["pattern"] = draw(st.sampled_from(ANCHORED))
    policy: dict[str, Any] = {"allowed": draw(st.sampled_from(["always", "always", "never"]))}
    approval = draw(st.sampled_from(["never", "never", "always", "conditional"]))
    numeric = [i["name"] for i in inputs if i["type"] in ("number", "integer")]
    if approval == "conditional" and numeric:
        policy["requires_approval"] = "conditional"
        policy["condition"] = f"{numeric[0]} > {draw(st.integers(-5, 5))}"
    elif approval == "always":
        policy["requires_approval"] = "always"
        policy["approver"] = draw(st.sampled_from(ROLES))
    if draw(st.booleans()) and numeric:
        limit = round(draw(st.floats(-10, 10, allow_nan=False)), 1)
        policy["conditions"] = [{"when": f"{numeric[-1]} >= {limit}", "action": "deny"}]
    if draw(st.booleans()):
        per = draw(st.sampled_from([None, *names]))
        policy["once_only"] = {"per": per} if per else True
    if draw(st.booleans()):
        policy["max_calls"] = draw(st.integers(0, 3))
    spec: dict[str, Any] = {"name": name, "policy": policy}
    if draw(st.booleans()):
        spec["inputs"] = inputs
    else:
        spec["inputSchema"] = {
            "type": "object",
            "required": [i["name"] for i in inputs if i["required"]],
            "properties": {
                i["name"]: {k: v for k, v in i.items() if k in ("type", "pattern")} for i in inputs
            },
        }
    return spec


@st.composite
def skills(draw: st.DrawFn) -> SkillData:
    names = draw(st.lists(st.sampled_from(TOOL_NAMES), min_size=1, max_size=5, unique=True))
    tools = [draw(tool_specs(n)) for n in names]
    out = SkillData({"id": "generated", "tools": tools})
    for tool in tools:
        if tool["policy"]["allowed"] == "never":
            out.denied.add(tool["name"])
        if tool["policy"].get("requires_approval") == "always":
            out.always_approval[tool["name"]] = tool["policy"]["approver"]
    sentences = []
    for name in draw(st.lists(st.sampled_from(names), max_size=2, unique=True)):
        sentences.append(f"Never use {name}")
        out.denied.add(name)
    workflows: list[dict[str, Any]] = []
    for _ in range(draw(st.integers(0, 2))):
        steps = draw(st.lists(st.sampled_from([*names, "ask_the_user"]), min_size=1, max_size=4))
        required = draw(st.booleans())
        workflows.append({"name": f"w{len(workflows)}", "steps": steps, "required": required})
        if required:
            out.orders.append([s for s in steps if s in names])
    approvals = []
    for name in draw(st.lists(st.sampled_from(names), max_size=2)):
        approvals.append({"tool_id": name, "approver": draw(st.sampled_from(ROLES))})
    out.data["policy"] = {
        "guardrails": {"never": [*sentences, "Never be rude"]},
        "workflows": workflows,
        "approvals": approvals,
    }
    out.fmt = draw(st.sampled_from(["yaml", "json"]))
    return out


PLAIN_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-10, 10),
    st.floats(-10, 10, allow_nan=False),
    st.sampled_from(["", "x", "750", "ORD-1", "true", "ORD-1\n", "x\n", "a" * 30 + "!"]),
    st.lists(st.integers(0, 3), max_size=2),
)
"""Values a job's state may hold (the gate refuses the rest: see test_plain_state)."""
VALUES = st.one_of(PLAIN_VALUES, st.just(float("nan")))
"""Values a proposal may hold: also NaN, which a JSON parser may give (and is blocked)."""


def _is_nan(value: object) -> bool:
    return isinstance(value, float) and math.isnan(value)


@dataclass
class Proposal:
    tool: str
    args: dict[str, Any]
    history: list[ToolRun]
    grants: list[ApprovalGrant]


@st.composite
def proposals(draw: st.DrawFn, skill: SkillData) -> Proposal:
    names = [t["name"] for t in skill.data["tools"]]
    tool = draw(st.sampled_from([*names, *names, "unknown_tool"]))
    keys = draw(st.lists(st.sampled_from([*FIELDS, "extra"]), unique=True, max_size=5))
    args = {k: draw(VALUES) for k in keys}
    history = [
        ToolRun(
            draw(st.sampled_from([*names, "unknown_tool"])),
            {k: draw(PLAIN_VALUES) for k in draw(st.lists(st.sampled_from(FIELDS), max_size=2))},
            None,
            draw(st.booleans()),
        )
        for _ in range(draw(st.integers(0, 6)))
    ]
    grants = [
        ApprovalGrant(
            tool, {k: v for k, v in args.items() if not _is_nan(v)}, draw(st.sampled_from(ROLES))
        )
        for _ in range(draw(st.integers(0, 2)))
    ]
    return Proposal(tool, args, history, grants)


def load(skill: SkillData, folder: Path) -> Skill:
    path = folder / ("skill.json" if skill.fmt == "json" else "skill.yaml")
    path.write_text(json.dumps(with_required_data(skill.data), indent=2))
    return load_skill(path)


def check(gate: Gate, p: Proposal) -> Decision:
    return gate.check(p.tool, p.args, history=p.history, approvals=p.grants)


def in_order(order: list[str], tool: str, history: list[ToolRun]) -> bool:
    if tool not in order:
        return True
    before = order[: order.index(tool)]
    done = {r.tool for r in history if r.ok}
    return all(step in done for step in before if step != tool)


def schema_of(skill: Skill, tool: str) -> dict[str, Any]:
    found = skill.tool(tool)
    assert found is not None
    return found.input_schema()


@SETTINGS
@given(data=st.data(), skill=skills())
def test_mechanical_guarantees_hold_for_any_proposal(data: st.DataObject, skill: SkillData) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        loaded = load(skill, Path(tmp))
    gate = Gate.for_skill(loaded)
    for _ in range(8):
        p = data.draw(proposals(skill))
        decision = check(gate, p)
        event(f"decision: {decision.kind}")
        assert decision.reasons, decision
        if p.tool == "unknown_tool":
            assert [r.code for r in decision.reasons] == [ReasonCode.UNKNOWN_TOOL]
            continue
        if p.tool in skill.denied:
            assert decision.kind == "block"
        for order in skill.orders:
            if not in_order(order, p.tool, p.history):
                assert decision.kind == "block", (order, p)
        schema = schema_of(loaded, p.tool)
        missing = [n for n in schema.get("required", []) if p.args.get(n) is None]
        if missing:
            assert not decision.allowed
        roles = {a["approver"] for a in skill.data["policy"]["approvals"] if a["tool_id"] == p.tool}
        if p.tool in skill.always_approval:
            roles.add(skill.always_approval[p.tool])
        if not roles <= {g.role for g in p.grants}:
            assert not decision.allowed
        if decision.allowed:
            present = {k: v for k, v in p.args.items() if v is not None}
            strict = {**schema, "additionalProperties": False}
            assert not list(schema_validator(strict).iter_errors(present)), p.args
            patterned = {k for k, v in schema.get("properties", {}).items() if "pattern" in v}
            for key in patterned & present.keys():
                assert not str(present[key]).endswith("\n"), p.args


@SETTINGS
@given(data=st.data(), skill=skills())
def test_the_same_proposal_gets_the_same_decision(data: st.DataObject, skill: SkillData) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        gate = Gate.for_skill(load(skill, Path(tmp)))
    p = data.draw(proposals(skill))
    first, second = check(gate, p), check(gate, p)
    assert first == second or (first.kind, first.reasons) == (second.kind, second.reasons)


@SETTINGS
@given(
    pattern=st.sampled_from(ANCHORED),
    value=st.text(max_size=10),
    ending=st.sampled_from(["\n", "\r\n", "\n\n", " \n"]),
    form=st.sampled_from(["inputs", "inputSchema", "jsonschema"]),
)
def test_no_value_with_a_trailing_newline_passes_an_anchored_pattern(
    pattern: str, value: str, ending: str, form: str
) -> None:
    field: dict[str, Any] = {"type": "string", "pattern": pattern}
    if form == "jsonschema":
        field["not"] = {"const": "never"}  # a keyword the fast checker leaves to jsonschema
    tool: dict[str, Any] = {"name": "t"}
    if form == "inputs":
        tool["inputs"] = [{"name": "code", "required": True, **field}]
    else:
        tool["inputSchema"] = {
            "type": "object",
            "required": ["code"],
            "properties": {"code": field},
        }
    with tempfile.TemporaryDirectory() as tmp:
        gate = Gate.for_skill(load(SkillData({"id": "p", "tools": [tool]}, fmt="json"), Path(tmp)))
    decision = gate.check("t", {"code": value + ending})
    assert not decision.allowed, (pattern, value + ending)
    assert [r.code for r in decision.reasons] == [ReasonCode.ARGUMENT_INVALID]
    assert list(schema_validator(field).iter_errors(value + ending))


PATHS = [
    "guardrails.shell.allowedPrefixes",
    "guardrails.shell.denyPrefixes",
    "guardrails.shell.denyOperators",
    "guardrails.filesystem.allowedReadRoots",
    "guardrails.filesystem.allowedWriteRoots",
]
WORDS = st.sampled_from(["git", "ls", "rm", "curl", ";", "&&", "/tmp", "/srv", "/etc"])
OPERATIONS = st.one_of(
    st.builds(
        lambda n, e: {"op": "upsert_tool", "toolName": n, "config": {"enabled": e}},
        st.sampled_from(["s.a", "s.b"]),
        st.booleans(),
    ),
    st.builds(
        lambda n: {"op": "add_global_allowlist_tool", "toolName": n},
        st.sampled_from(["s.a", "s.b"]),
    ),
    st.builds(
        lambda p, v: {"op": "append_unique_guardrail_list", "path": p, "values": v},
        st.sampled_from(PATHS),
        st.lists(WORDS, max_size=4),
    ),
)
BASES = st.builds(
    lambda allow, deny, ops, roots: BasePolicy.model_validate(
        {
            "shell": {"allowedPrefixes": allow, "denyPrefixes": deny, "denyOperators": ops},
            "filesystem": {"allowedReadRoots": roots, "allowedWriteRoots": roots},
        }
    ),
    st.lists(WORDS, max_size=3),
    st.lists(WORDS, max_size=3),
    st.lists(WORDS, max_size=2),
    st.lists(WORDS, max_size=2),
)


@settings(max_examples=150, deadline=None)
@given(ops=st.lists(OPERATIONS, max_size=6), base=BASES)
def test_applying_a_plan_twice_equals_once(ops: list[dict[str, Any]], base: BasePolicy) -> None:
    plan = ToolAccessPlan.model_validate({"operations": ops})
    once, dropped = apply_plan(AccessState(), plan, base)
    twice, dropped_again = apply_plan(once, plan, base)
    assert twice == once
    assert dropped_again == dropped


@settings(max_examples=60, deadline=None)
@given(
    ops=st.lists(OPERATIONS, max_size=5),
    base=BASES,
    shell=st.builds(
        lambda a, d: ShellPolicy(allowedPrefixes=a, denyPrefixes=d),
        st.lists(WORDS, max_size=3),
        st.lists(WORDS, max_size=3),
    ),
    roots=st.lists(WORDS, max_size=3),
)
def test_a_merged_policy_is_never_weaker_than_the_base(
    ops: list[dict[str, Any]], base: BasePolicy, shell: ShellPolicy, roots: list[str]
) -> None:
    skill = Skill.model_validate(
        {
            "id": "s",
            "format": "package",
            "access": {
                "schemaVersion": "ayati-guardrails/v1",
                "skillId": "s",
                "toolAccessPlan": {"operations": ops},
                "shell": shell.model_dump(),
                "filesystem": {"allowedReadRoots": roots, "allowedWriteRoots": roots},
            },
        }
    )
    merged = merge_access(skill, base)
    assert set(merged.shell_allowed) <= set(base.shell.allowedPrefixes)
    assert set(merged.read_roots) <= set(base.filesystem.allowedReadRoots)
    assert set(merged.write_roots) <= set(base.filesystem.allowedWriteRoots)
    assert set(merged.shell_denied) >= set(base.shell.denyPrefixes)
    assert set(merged.shell_deny_operators) >= set(base.shell.denyOperators)
    asked = set(shell.allowedPrefixes) | {
        v
        for op in ops
        if op.get("path") == "guardrails.shell.allowedPrefixes"
        for v in op["values"]
    }
    for value in asked - set(base.shell.allowedPrefixes):
        assert f"guardrails.shell.allowedPrefixes: {value}" in merged.dropped


@SETTINGS
@given(
    data=st.data(),
    skill=skills(),
    deny=st.lists(st.sampled_from(TOOL_NAMES), max_size=2),
    ask=st.lists(st.sampled_from(TOOL_NAMES), max_size=2),
    limit=st.integers(0, 2),
)
def test_base_protections_survive_any_skill(
    data: st.DataObject, skill: SkillData, deny: list[str], ask: list[str], limit: int
) -> None:
    base = BasePolicy.model_validate(
        {
            "deny_tools": deny,
            "approvals": [{"tool": t, "approver": "cfo"} for t in ask],
            "max_calls": dict.fromkeys(TOOL_NAMES, limit),
        }
    )
    with tempfile.TemporaryDirectory() as tmp:
        gate = Gate.for_skill(load(skill, Path(tmp)), base=base)
    for _ in range(5):
        p = data.draw(proposals(skill))
        decision = check(gate, p)
        if p.tool in deny:
            assert decision.kind == "block"
        if p.tool in ask and not any(g.role == "cfo" for g in p.grants):
            assert not decision.allowed
        if sum(1 for r in p.history if r.tool == p.tool) >= limit and p.tool != "unknown_tool":
            assert decision.kind == "block"


KEYS = st.sampled_from(["ORD-1", "ORD-2", "ORD-3"])


@st.composite
def keyed_workflows(draw: st.DrawFn) -> SkillData:
    """Tools that all take an ``order``, and one required workflow over some of them,
    bound by ``same: order``."""
    names = draw(st.lists(st.sampled_from(TOOL_NAMES), min_size=2, max_size=5, unique=True))
    tools = [
        {
            "name": name,
            "inputs": [{"name": "order", "type": "string", "required": draw(st.booleans())}],
        }
        for name in names
    ]
    steps = draw(st.lists(st.sampled_from(names), min_size=2, max_size=5))
    out = SkillData({"id": "keyed", "tools": tools})
    out.data["policy"] = {
        "workflows": [{"name": "w", "required": True, "same": "order", "steps": steps}]
    }
    out.orders.append(steps)
    out.fmt = draw(st.sampled_from(["yaml", "json"]))
    return out


@SETTINGS
@given(data=st.data(), skill=keyed_workflows())
def test_a_call_for_another_key_than_the_earlier_steps_ran_for_is_never_allowed(
    data: st.DataObject, skill: SkillData
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        gate = Gate.for_skill(load(skill, Path(tmp)))
    (order,) = skill.orders
    names = [t["name"] for t in skill.data["tools"]]
    for _ in range(8):
        history = [
            ToolRun(
                data.draw(st.sampled_from(names)),
                {"order": data.draw(st.one_of(KEYS, st.none()))},
                None,
                data.draw(st.booleans()),
            )
            for _ in range(data.draw(st.integers(0, 8)))
        ]
        tool = data.draw(st.sampled_from(order))
        key = data.draw(KEYS)
        decision = gate.check(tool, {"order": key}, history=history)
        event(f"keyed decision: {decision.kind}")
        before = order[: order.index(tool)]
        done_for_key = {r.tool for r in history if r.ok and r.args.get("order") == key}
        if any(step not in done_for_key for step in before if step != tool):
            assert not decision.allowed, (order, tool, key, history)
            assert decision.kind == "block"
        else:
            assert decision.allowed, (order, tool, key, history, decision)
