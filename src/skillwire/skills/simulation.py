"""What a simulated tool stands in for, and which output contract fields nothing supplies.

A tool with no executor, or a ``simulate`` one, is simulated: it returns its declared
``result`` (if any) and, for each field its ``output`` declares (``output.fields[]``,
``output.schema`` properties) that the result does not give, the argument of that name.
In a skill where every tool that may be called is simulated (a dry run, such as spec
000's example), it also makes up the declared fields it has no argument for and, when
its output is not described at all (no fields, no schema properties, no result), the
contract fields that nothing else supplies (:mod:`skillwire.tools.simulate` makes the
values). In a skill with a real tool it makes nothing up: a made-up value could reach a
real tool as an argument or satisfy a condition that guards one. A tool with a real
executor is never simulated and never gets invented values.

A contract field is *supplied* by a tool's declared output or simulate result, by a
value the user or the planner gives (a tool input, an intent entity, a required input),
or by a simulated tool that stands in for it. One that nothing supplies fails the
finalization gate on every job: the load report warns, at the line of the contract
field. A simulated tool of a skill with real tools whose result lacks a declared field
is warned about too, at its ``output``: the field is not made up.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from skillwire.core.issues import Severity, SkillIssue
from skillwire.core.location import FieldPath, SourceLocation
from skillwire.skills.model_tools import SimulateExecutor, Simulation, Tool

if TYPE_CHECKING:
    from skillwire.skills.model import DomainFile

__all__ = [
    "all_simulated",
    "assign_simulations",
    "check_contract_supply",
    "contract_fills",
    "declared_output",
    "is_simulated",
]

Locate = Callable[[FieldPath], SourceLocation]


def is_simulated(tool: Tool) -> bool:
    """Whether ``tool`` runs simulated: no executor, or a ``simulate`` one."""
    return tool.executor is None or isinstance(tool.executor, SimulateExecutor)


def declared_output(tool: Tool) -> dict[str, dict[str, Any]]:
    """The fields ``tool`` declares it returns, each with its JSON Schema: the
    properties of ``output.schema``, then ``output.fields[]`` (a name, or an object
    ``{name, type, ...}`` read as a schema). A field with no type is a string."""
    out = tool.output
    if out is None:
        return {}
    fields: dict[str, dict[str, Any]] = {}
    props = (out.schema_ or {}).get("properties")
    if isinstance(props, dict):
        for name, schema in props.items():
            if isinstance(name, str) and name:
                fields[name] = schema if isinstance(schema, dict) else {}
    for entry in out.fields:
        if isinstance(entry, str) and entry:
            fields.setdefault(entry, {"type": "string"})
        elif isinstance(entry, dict) and isinstance(entry.get("name"), str) and entry["name"]:
            schema = {k: v for k, v in entry.items() if k != "name"}
            fields.setdefault(entry["name"], schema or {"type": "string"})
    return fields


def _given(tool: Tool) -> set[str]:
    """Keys of a ``simulate`` executor's declared result."""
    spec = tool.executor
    return set(spec.result) if isinstance(spec, SimulateExecutor) else set()


def _input_names(tool: Tool) -> set[str]:
    return {f.name for f in tool.input_fields()}


def _callable(tool: Tool) -> bool:
    return tool.policy.allowed != "never"


def all_simulated(skill: DomainFile) -> bool:
    """Whether every tool ``skill`` may call is simulated (its runs are a dry run)."""
    return all(is_simulated(t) for t in skill.tools if _callable(t))


def _undescribed(tool: Tool) -> bool:
    """A simulated tool the skill may call whose output says nothing of its fields."""
    return is_simulated(tool) and _callable(tool) and not declared_output(tool) and not _given(tool)


def _user_given(skill: DomainFile) -> set[str]:
    """Names whose values the user or the planner gives: tool inputs, entities,
    required inputs (by their last path segment as well as whole)."""
    names = {n for tool in skill.tools for n in _input_names(tool)}
    names |= {e.name for i in skill.intents.supported for e in i.entities}
    for req in skill.required_inputs:
        names |= {req.path, req.path.rsplit(".", 1)[-1]}
    return names


def _from_outputs(skill: DomainFile) -> set[str]:
    return {n for tool in skill.tools for n in (*declared_output(tool), *_given(tool))}


def contract_fills(skill: DomainFile) -> dict[str, tuple[str, ...]]:
    """For each simulated tool that stands in for the contract, by name: the contract
    fields it returns. Only in a skill whose tools are all simulated, only tools with an
    undescribed output; the fields no tool output gives, less those the user gives
    unless they are the tool's own inputs (their value is then the argument)."""
    if not all_simulated(skill):
        return {}
    required = skill.output_contract.required_fields
    outputs = _from_outputs(skill)
    user = _user_given(skill)
    fills: dict[str, tuple[str, ...]] = {}
    for tool in skill.tools:
        if not _undescribed(tool):
            continue
        own = _input_names(tool)
        names = tuple(
            dict.fromkeys(f for f in required if f not in outputs and (f in own or f not in user))
        )
        if names:
            fills[tool.name] = names
    return fills


def assign_simulations(skill: DomainFile) -> None:
    """Tell each tool of ``skill`` how it runs simulated: what
    :meth:`Tool.simulation` reads."""
    fills = contract_fills(skill)
    invents = all_simulated(skill)
    for tool in skill.tools:
        simulated = is_simulated(tool)
        tool.set_simulation(
            Simulation(invents=invents and simulated, contract_fields=fills.get(tool.name, ()))
        )


def check_contract_supply(skill: DomainFile, locate: Locate) -> Iterator[SkillIssue]:
    """A warning for each contract field that nothing can supply, and for each
    declared output field a simulated tool of a skill with real tools will not return."""
    supplied = _from_outputs(skill) | _user_given(skill)
    stand_in = all_simulated(skill) and any(_undescribed(tool) for tool in skill.tools)
    for i, name in enumerate(skill.output_contract.required_fields):
        if name in supplied or stand_in:
            continue
        path: FieldPath = ("output_contract", "required_fields", i)
        yield SkillIssue(
            Severity.WARNING,
            f"nothing can supply '{name}': no tool's output declares it, no input or "
            "entity has that name, and no simulated tool stands in for it; the "
            "finalization gate fails unless the model writes it from the conversation",
            locate(path),
            path,
            code="contract-field-unsupplied",
            hint=f"add '{name}' to a tool's output.fields",
        )
    if all_simulated(skill):
        return
    for ti, tool in enumerate(skill.tools):
        if not (is_simulated(tool) and _callable(tool)):
            continue
        missing = [f for f in declared_output(tool) if f not in _given(tool)]
        if missing:
            path = ("tools", ti, "output")
            yield SkillIssue(
                Severity.WARNING,
                f"tool '{tool.name}' runs simulated in a skill with real tools, so it makes "
                f"no value up: {', '.join(repr(f) for f in missing)} only come back "
                "when the call has an argument of that name",
                locate(path),
                path,
                code="simulated-output-not-made-up",
                hint="give them in executor.result, or give the tool a real executor",
            )
