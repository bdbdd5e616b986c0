"""The changes an answer makes to a draft's YAML tree, one function per kind of answer.

Each takes the round-trip tree and changes it in place; new keys go where the spec's
layout puts them, existing entries keep their place and comments. A change that would
replace an entry of the same name replaces it where it stands.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ruamel.yaml.comments import CommentedMap, CommentedSeq

from skillwire.builder.yaml_text import insert_ordered, plain, to_yaml_data

__all__ = [
    "add_approval",
    "add_guardrail",
    "add_intent",
    "add_required_input",
    "add_scenario",
    "add_tool",
    "add_workflow",
    "forbid_tool",
    "list_at",
    "mapping_at",
    "set_identity",
    "set_out_of_domain",
    "set_output_contract",
    "set_persona",
    "set_problem",
    "set_tests",
]

_PROBLEM_ORDER = ("statement", "goals")
_ROLE_ORDER = ("name", "persona", "goals", "limitations", "communication_style")
_INTENTS_ORDER = ("supported", "out_of_domain")
_POLICY_ORDER = ("guardrails", "workflows", "approvals", "escalation")


def mapping_at(
    root: CommentedMap, path: Sequence[str], orders: Sequence[Sequence[str]] = ()
) -> CommentedMap:
    """The mapping at ``path`` under ``root``, made (in layout order) where absent."""
    node = root
    for depth, key in enumerate(path):
        child = node.get(key)
        if not isinstance(child, CommentedMap):
            child = CommentedMap()
            order = orders[depth] if depth < len(orders) else ()
            if depth == 0:
                insert_ordered(node, key, child)
            else:
                insert_ordered(node, key, child, order)
        node = child
    return node


def list_at(parent: CommentedMap, key: str, order: Sequence[str] = ()) -> CommentedSeq:
    """The list ``parent[key]``, made (in ``order``) where absent or null."""
    value = parent.get(key)
    if not isinstance(value, CommentedSeq):
        value = CommentedSeq(value if isinstance(value, list) else [])
        if order:
            insert_ordered(parent, key, value, order)
        else:
            insert_ordered(parent, key, value)
    return value


def _upsert(items: CommentedSeq, key: str, entry: Mapping[str, Any]) -> None:
    """Replace the item whose ``key`` equals the entry's in place, else append."""
    node = to_yaml_data(dict(entry))
    for index, item in enumerate(items):
        if isinstance(item, Mapping) and item.get(key) == entry.get(key):
            items[index] = node
            return
    items.append(node)


def set_identity(root: CommentedMap, skill_id: str, name: str, description: str) -> None:
    """``id``, ``name`` and ``description``; empty values are left out."""
    for key, value in (("id", skill_id), ("name", name), ("description", description)):
        if value:
            insert_ordered(root, key, value)
    if "version" not in root:
        insert_ordered(root, "version", "0.1.0")


def set_problem(root: CommentedMap, statement: str, goals: Sequence[str] | None = None) -> None:
    """``problem.statement`` and, when given, ``problem.goals``."""
    problem = mapping_at(root, ["problem"])
    insert_ordered(problem, "statement", statement, _PROBLEM_ORDER)
    if goals is not None:
        if goals:
            insert_ordered(problem, "goals", CommentedSeq(goals), _PROBLEM_ORDER)
        else:
            problem.pop("goals", None)


def add_scenario(root: CommentedMap, scenario_id: str, title: str, description: str) -> None:
    """A top-level ``scenarios[]`` entry, as authoring tools write them."""
    items = list_at(root, "scenarios")
    _upsert(items, "id", {"id": scenario_id, "title": title, "description": description})


def add_intent(
    root: CommentedMap,
    intent_id: str,
    description: str,
    examples: Sequence[str],
    entities: Sequence[Mapping[str, Any]] = (),
) -> None:
    """An entry of ``intents.supported``."""
    intents = mapping_at(root, ["intents"])
    supported = list_at(intents, "supported", _INTENTS_ORDER)
    entry: dict[str, Any] = {"id": intent_id, "description": description}
    entry["examples"] = list(examples)
    if entities:
        entry["entities"] = [dict(e) for e in entities]
    _upsert(supported, "id", entry)


def set_out_of_domain(root: CommentedMap, action: str, message: str) -> None:
    """``intents.out_of_domain``."""
    intents = mapping_at(root, ["intents"])
    entry = intents.get("out_of_domain")
    if not isinstance(entry, CommentedMap):  # changed in place: its comments stay
        entry = CommentedMap()
        insert_ordered(intents, "out_of_domain", entry, _INTENTS_ORDER)
    entry["action"] = action
    if message:
        entry["message"] = message


def add_tool(root: CommentedMap, tool: Mapping[str, Any]) -> None:
    """A ``tools[]`` entry (replacing one of the same name)."""
    _upsert(list_at(root, "tools"), "name", tool)


def _tool(root: CommentedMap, name: str) -> CommentedMap:
    for item in root.get("tools") or []:
        if isinstance(item, CommentedMap) and name in (item.get("name"), item.get("id")):
            return item
    raise KeyError(f"no tool named {name!r} in the draft")


def forbid_tool(root: CommentedMap, name: str) -> None:
    """``tools[name].policy.allowed: never``: the tool is never run."""
    tool = _tool(root, name)
    policy = tool.get("policy")
    if not isinstance(policy, CommentedMap):
        policy = CommentedMap()
        tool["policy"] = policy
    policy["allowed"] = "never"


def add_approval(root: CommentedMap, tool: str, when: str, approver: str) -> None:
    """A ``policy.approvals[]`` entry: ``tool`` needs ``approver``'s approval ``when``."""
    _tool(root, tool)
    approvals = list_at(mapping_at(root, ["policy"]), "approvals", _POLICY_ORDER)
    entry = {"tool_id": tool, "when": when, "action": "require_approval", "approver": approver}
    for index, item in enumerate(approvals):
        if isinstance(item, Mapping) and item.get("tool_id") == tool and item.get("when") == when:
            approvals[index] = to_yaml_data(entry)
            return
    approvals.append(to_yaml_data(entry))


def add_workflow(root: CommentedMap, name: str, steps: Sequence[str], required: bool) -> None:
    """A ``policy.workflows[]`` entry whose steps name tools, in order."""
    workflows = list_at(mapping_at(root, ["policy"]), "workflows", _POLICY_ORDER)
    _upsert(workflows, "name", {"name": name, "steps": list(steps), "required": required})


def add_guardrail(root: CommentedMap, kind: str, sentence: str) -> None:
    """A sentence under ``policy.guardrails.never`` or ``.always``."""
    if kind not in ("never", "always"):
        raise ValueError(f"a guardrail is `never` or `always`, not {kind!r}")
    guardrails = mapping_at(root, ["policy", "guardrails"], [(), _POLICY_ORDER])
    items = list_at(guardrails, kind, ("never", "always"))
    if sentence not in items:
        items.append(sentence)


def add_required_input(root: CommentedMap, entry: Mapping[str, Any]) -> None:
    """A ``required_inputs[]`` entry (spec 001), by ``path``."""
    _upsert(list_at(root, "required_inputs"), "path", entry)


def set_output_contract(root: CommentedMap, fields: Sequence[str], hint: str = "") -> None:
    """``output_contract.required_fields`` (and ``format_hint``); none removes it."""
    if not fields and not hint:
        root.pop("output_contract", None)
        return
    contract = mapping_at(root, ["output_contract"])
    insert_ordered(contract, "required_fields", CommentedSeq(fields), ("required_fields",))
    if hint:
        contract["format_hint"] = hint


def set_persona(root: CommentedMap, name: str, persona: str, tone: str = "") -> None:
    """``role.name``, ``role.persona`` and ``role.communication_style.tone``."""
    role = mapping_at(root, ["role"])
    if name:
        insert_ordered(role, "name", name, _ROLE_ORDER)
    if persona:
        insert_ordered(role, "persona", persona, _ROLE_ORDER)
    if tone:
        style = role.get("communication_style")
        if not isinstance(style, CommentedMap):
            style = CommentedMap()
            insert_ordered(role, "communication_style", style, _ROLE_ORDER)
        style["tone"] = tone


def set_tests(root: CommentedMap, tests: Sequence[Mapping[str, Any]]) -> None:
    """Entries of the top-level ``tests:`` section (a skill's dry-run tests), by ``id``:
    a test of the same id is replaced where it stands, the others are kept."""
    items = list_at(root, "tests")
    for test in tests:
        same = (i for i in items if isinstance(i, Mapping) and i.get("id") == test.get("id"))
        if plain(next(same, None)) == dict(test):
            continue  # an equal one keeps its comments and spelling
        node = to_yaml_data(dict(test))
        for reply in node.get("script") or []:
            if isinstance(reply, CommentedMap):
                reply.fa.set_flow_style()  # one line a reply, as scripts are written
        _upsert(items, "id", node)
