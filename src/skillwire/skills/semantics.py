"""Checks that span fields: references between parts, workflows, conditions, schemas.

Pydantic checks each field's shape; this module checks what only the whole skill
can tell: that an approval names a real tool, that a condition parses and reads only
names the skill defines, that a tool's input schema is a valid JSON Schema. It also
compiles every condition once, for the runtime to use.
"""

from __future__ import annotations

import difflib
import functools
from collections.abc import Callable, Iterator
from typing import Any

from skillwire.conditions import RUNTIME_NAMES, compile_condition, compile_expression
from skillwire.core.conditions import Condition
from skillwire.core.errors import ConditionSyntaxError
from skillwire.core.issues import Severity, SkillIssue
from skillwire.core.location import FieldPath, SourceLocation
from skillwire.core.patterns import PatternError, compile_pattern, schema_pattern_problem
from skillwire.skills._schema_check import schema_problem
from skillwire.skills.entity_checks import entity_findings
from skillwire.skills.facts import check_facts
from skillwire.skills.model import DomainFile
from skillwire.skills.model_policy import StructuredRule, WorkflowStep
from skillwire.skills.model_tools import ONCE_PER_NAMES, OnceOnly, PolicyCondition, Tool
from skillwire.skills.prose import reads_as_prose
from skillwire.skills.simulation import check_contract_supply

__all__ = [
    "EVERY_CALLER_ROLES",
    "RUNTIME_NAMES",
    "approver_problem",
    "approver_sites",
    "check_domain",
    "condition_sites",
    "input_names",
    "workflow_step_tool",
]


Locate = Callable[[FieldPath], SourceLocation]

EVERY_CALLER_ROLES = frozenset({"user"})
"""Roles every caller who can start a job holds (the server's ``user``): an approver
role among them would let a job's owner approve their own call."""


def _error(locate: Locate, path: FieldPath, message: str, code: str, hint: str = "") -> SkillIssue:
    return SkillIssue(Severity.ERROR, message, locate(path), path, code=code, hint=hint)


def _warn(locate: Locate, path: FieldPath, message: str, code: str, hint: str = "") -> SkillIssue:
    return SkillIssue(Severity.WARNING, message, locate(path), path, code=code, hint=hint)


def workflow_step_tool(skill: DomainFile, step: str | WorkflowStep) -> Tool | None:
    """The tool a workflow step names, or None for a conversational step."""
    if isinstance(step, WorkflowStep):
        return skill.tool(step.tool) if step.tool else None
    return skill.tool(step)


def condition_sites(skill: DomainFile) -> Iterator[tuple[FieldPath, str, Tool | None]]:
    """Every condition of the skill: its path, its text, and the tool it is scoped to."""
    for ti, tool in enumerate(skill.tools):
        base: FieldPath = ("tools", ti)
        if tool.policy.condition is not None:
            yield (*base, "policy", "condition"), tool.policy.condition, tool
        for ci, cond in enumerate(tool.policy.conditions):
            yield (*base, "policy", "conditions", ci, "when"), cond.when, tool
        for pi, pre in enumerate(tool.preconditions):
            yield (*base, "preconditions", pi), pre, tool
    for ai, approval in enumerate(skill.policy.approvals):
        target = skill.tool(approval.tool_id)
        if approval.when is not None:
            yield ("policy", "approvals", ai, "when"), approval.when, target
        for ci, c in enumerate(approval.conditions):
            if isinstance(c, PolicyCondition):
                yield ("policy", "approvals", ai, "conditions", ci, "when"), c.when, target
            else:
                yield ("policy", "approvals", ai, "conditions", ci), c, target
    for kind in ("never", "always"):
        for gi, rule in enumerate(getattr(skill.policy.guardrails, kind)):
            if isinstance(rule, StructuredRule) and rule.when is not None:
                scoped = skill.tool(rule.tool) if rule.tool else None
                yield ("policy", "guardrails", kind, gi, "when"), rule.when, scoped
    if skill.policy.escalation is not None:
        for ci, c in enumerate(skill.policy.escalation.conditions):
            if isinstance(c, PolicyCondition):
                yield ("policy", "escalation", "conditions", ci, "when"), c.when, None
            else:
                yield ("policy", "escalation", "conditions", ci), c, None


def check_domain(
    skill: DomainFile, locate: Locate, locate_value: Locate
) -> tuple[list[SkillIssue], dict[FieldPath, Condition]]:
    """All cross-field findings of a skill, and its compiled conditions by path."""
    issues: list[SkillIssue] = []
    issues += _check_tools(skill, locate)
    issues += _check_references(skill, locate)
    issues += _check_workflows(skill, locate)
    issues += _check_patterns(skill, locate)
    issues += _check_approvers(skill, locate)
    issues += check_contract_supply(skill, locate)
    issues += entity_findings(skill, locate)
    compiled, cond_issues = _compile_conditions(skill, locate_value)
    issues += cond_issues
    issues += check_facts(skill.facts, compiled, locate_value)
    return issues, compiled


def _check_tools(skill: DomainFile, locate: Locate) -> Iterator[SkillIssue]:
    seen: dict[str, int] = {}
    for ti, tool in enumerate(skill.tools):
        path: FieldPath = ("tools", ti)
        if tool.name in seen:
            yield _error(
                locate,
                (*path, "name"),
                f"duplicate tool name '{tool.name}' (also tools[{seen[tool.name]}])",
                "duplicate-tool",
            )
        seen.setdefault(tool.name, ti)
        if tool.inputs is not None and tool.inputSchema is not None:
            yield _warn(
                locate,
                (*path, "inputSchema"),
                "both inputs and inputSchema are given; inputSchema is used",
                "schema-twice",
            )
        yield from check_input_schema(tool, locate, path)
        names = [i.name for i in tool.inputs or []]
        dupes = {n for n in names if names.count(n) > 1}
        for n in sorted(dupes):
            yield _error(locate, (*path, "inputs"), f"input '{n}' is declared twice", "dup-input")
        pol = tool.policy
        if (
            isinstance(pol.once_only, OnceOnly)
            and pol.once_only.per is not None
            and (arguments := input_names(tool)) is not None
            and pol.once_only.per not in arguments
        ):
            yield _error(
                locate,
                (*path, "policy", "once_only", "per"),
                f"once_only.per names '{pol.once_only.per}', which is not an input of "
                f"'{tool.name}'",
                "unknown-input",
            )
        if pol.once_per is not None:
            yield from _once_per_reads(pol.once_per, locate, (*path, "policy", "once_per"))
        if pol.allowed == "conditional" and not pol.conditions:
            yield _warn(
                locate,
                (*path, "policy", "allowed"),
                "allowed: conditional without "
                "conditions[]: read the fail-closed way, approval is always asked",
                "conditional-without-condition",
            )
        if (
            pol.requires_approval == "conditional"
            and pol.condition is None
            and not any(c.action == "require_approval" for c in pol.conditions)
        ):
            yield _warn(
                locate,
                (*path, "policy", "requires_approval"),
                "requires_approval: conditional without a condition: approval is "
                "always asked (fail closed)",
                "conditional-without-condition",
            )
        if pol.condition is not None and pol.requires_approval not in ("conditional",):
            yield _warn(
                locate,
                (*path, "policy", "condition"),
                "policy.condition is used only with requires_approval: conditional",
                "condition-unused",
            )
        if tool.effects and skill.allowed_state_changes is not None:
            for ei, effect in enumerate(tool.effects):
                if effect not in skill.allowed_state_changes:
                    yield _warn(
                        locate,
                        (*path, "effects", ei),
                        f"effect '{effect}' is not in "
                        "allowed_state_changes: the gate will block this tool",
                        "effect-not-allowed",
                    )


def _once_per_reads(text: str, locate: Locate, path: FieldPath) -> Iterator[SkillIssue]:
    """A warning for a ``once_per`` keyed by what the message said (``entities``,
    ``inputs``) but by no argument of the call: the call may do something else."""
    try:
        names = compile_expression(text, known_names=ONCE_PER_NAMES).names
    except ConditionSyntaxError:
        return  # the model reports it
    if "args" not in names and names & {"entities", "inputs"}:
        yield _warn(
            locate,
            path,
            f"once_per: {text} reads what the user said, not the call's arguments: a call "
            "that acts on another value than it reads is keyed by the value it reads",
            "once-per-not-args",
            "key by the argument that names what the call acts on (args.order_id)",
        )


def check_input_schema(tool: Tool, locate: Locate, path: FieldPath) -> Iterator[SkillIssue]:
    """Rule 4: the tool's input schema is a valid JSON Schema with root ``type: object``."""
    schema = tool.input_schema()
    where: FieldPath = (*path, "inputSchema") if tool.inputSchema is not None else path
    patterns = schema_pattern_problem(schema)
    if patterns is not None:
        message, sub = patterns
        yield _error(
            locate, _in_tool(tool, where, sub), f"input schema: {message}", "invalid-schema"
        )
        return
    problem = schema_problem(schema)
    if problem is not None:
        message, sub = problem
        yield _error(
            locate,
            _in_tool(tool, where, sub),
            f"input schema is not a valid JSON Schema: {message}",
            "invalid-schema",
        )
        return
    if schema.get("type") != "object":
        yield _error(locate, where, "input schema must have root type: object", "invalid-schema")
    if not _has_ref(schema):
        return
    for ref_path, ref in _refs(schema, ()):
        if not ref.startswith("#"):
            yield _error(
                locate,
                (*where, *ref_path),
                f"remote $ref '{ref}' is not allowed: skillwire never fetches schemas",
                "remote-ref",
            )


def _in_tool(tool: Tool, where: FieldPath, sub: tuple[str, ...]) -> FieldPath:
    """The path in the skill file of ``sub``, a path in the tool's input schema: for a
    tool written with ``inputs[]``, ``properties.<name>`` is that input's entry."""
    if tool.inputSchema is None and tool.inputs and len(sub) >= 2 and sub[0] == "properties":
        for index, field in enumerate(tool.inputs):
            if field.name == sub[1]:
                return (*where, "inputs", index, *sub[2:])
    return (*where, *sub)


def _has_ref(node: Any) -> bool:
    """Whether any mapping inside ``node`` has a ``$ref`` string (the quick test before
    :func:`_refs` collects them)."""
    if isinstance(node, dict):
        if isinstance(node.get("$ref"), str):
            return True
        for value in node.values():
            if isinstance(value, dict | list) and _has_ref(value):
                return True
    elif isinstance(node, list):
        for value in node:
            if isinstance(value, dict | list) and _has_ref(value):
                return True
    return False


def _refs(node: Any, path: tuple[str | int, ...]) -> Iterator[tuple[tuple[str | int, ...], str]]:
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "$ref" and isinstance(v, str):
                yield (*path, k), v
            else:
                yield from _refs(v, (*path, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _refs(v, (*path, i))


def _check_patterns(skill: DomainFile, locate: Locate) -> Iterator[SkillIssue]:
    """Patterns of entities and required inputs are ones the skill pattern engine takes
    (tool inputs are checked with their schema). There is no other engine that could run
    the others safely at run time, so each is an error, not a warning."""
    sites: list[tuple[FieldPath, str | None]] = [
        (("intents", "supported", ii, "entities", ei, "pattern"), entity.pattern)
        for ii, intent in enumerate(skill.intents.supported)
        for ei, entity in enumerate(intent.entities)
    ]
    sites += [
        (("required_inputs", ri, "pattern"), req.pattern)
        for ri, req in enumerate(skill.required_inputs)
    ]
    for path, pattern in sites:
        if pattern is None:
            continue
        try:
            compile_pattern(pattern)
        except PatternError as exc:
            yield _error(locate, path, str(exc), "invalid-pattern", exc.hint)


def _check_references(skill: DomainFile, locate: Locate) -> Iterator[SkillIssue]:
    hint = _known_tools(skill)
    for ai, approval in enumerate(skill.policy.approvals):
        if skill.tool(approval.tool_id) is None:
            yield _error(
                locate,
                ("policy", "approvals", ai, "tool_id"),
                f"approval names unknown tool '{approval.tool_id}'",
                "unknown-tool",
                hint,
            )
    for kind in ("never", "always"):
        for gi, rule in enumerate(getattr(skill.policy.guardrails, kind)):
            if isinstance(rule, StructuredRule):
                p: FieldPath = ("policy", "guardrails", kind, gi)
                if rule.tool and skill.tool(rule.tool) is None:
                    yield _error(
                        locate,
                        (*p, "tool"),
                        f"rule names unknown tool '{rule.tool}'",
                        "unknown-tool",
                        hint,
                    )
                if rule.action == "require_input" and not rule.fields:
                    yield _error(
                        locate,
                        (*p, "fields"),
                        "require_input needs fields[] to ask for",
                        "missing-fields",
                    )
    workflows = {w.key() for w in skill.policy.workflows} | {
        w.id for w in skill.policy.workflows if w.id
    }
    for ii, intent in enumerate(skill.intents.supported):
        for ti, name in enumerate(intent.tools or []):
            if skill.tool(name) is None:
                yield _error(
                    locate,
                    ("intents", "supported", ii, "tools", ti),
                    f"intent names unknown tool '{name}'",
                    "unknown-tool",
                    hint,
                )
        if intent.maps_to_workflow and intent.maps_to_workflow not in workflows:
            yield _unknown_workflow(skill, locate, ii, intent.maps_to_workflow, workflows)
    ids = [i.id for i in skill.intents.supported]
    for ii, iid in enumerate(ids):
        if ids.index(iid) != ii:
            yield _error(
                locate,
                ("intents", "supported", ii, "id"),
                f"duplicate intent id '{iid}'",
                "duplicate-intent",
            )
    yield from _unknown_intents(skill, locate)
    for ri, req in enumerate(skill.required_inputs):
        if req.input_type == "choice" and not req.options:
            yield _error(
                locate,
                ("required_inputs", ri, "options"),
                "input_type: choice needs options[]",
                "missing-options",
            )
    esc = skill.policy.escalation
    uses_escalate = any(c.action == "escalate" for t in skill.tools for c in t.policy.conditions)
    if uses_escalate and (esc is None or not esc.target):
        yield _error(
            locate,
            ("policy", "escalation"),
            "a tool condition uses action: escalate but policy.escalation.target names no role",
            "missing-escalation-target",
        )


def _unknown_workflow(
    skill: DomainFile, locate: Locate, ii: int, name: str, workflows: set[str]
) -> SkillIssue:
    """A ``maps_to_workflow`` that names no workflow. When some workflow is scoped to
    intents (another intent maps to it, or it names ``intents``), the name decides which
    workflows this intent's jobs follow, and a typo could leave one out: an error.
    Otherwise every workflow applies to every intent anyway: a warning."""
    scoped = any(w.intents for w in skill.policy.workflows) or any(
        i.maps_to_workflow in workflows for i in skill.intents.supported
    )
    close = difflib.get_close_matches(name, sorted(workflows), n=1)
    report = _error if scoped else _warn
    return report(
        locate,
        ("intents", "supported", ii, "maps_to_workflow"),
        f"no workflow is named '{name}'"
        + (
            ": workflows are scoped to intents here, so this intent's jobs could miss the one meant"
            if scoped
            else ""
        ),
        "unknown-workflow",
        f"did you mean '{close[0]}'?" if close else "",
    )


def _unknown_intents(skill: DomainFile, locate: Locate) -> Iterator[SkillIssue]:
    """An error for each intent a workflow's or a required input's ``intents`` names that
    the skill does not support (the scope would silently miss the intent meant)."""
    known = [i.id for i in skill.intents.supported]
    sites: list[tuple[FieldPath, list[str] | None]] = [
        (("policy", "workflows", wi, "intents"), wf.intents)
        for wi, wf in enumerate(skill.policy.workflows)
    ]
    sites += [
        (("required_inputs", ri, "intents"), r.intents)
        for ri, r in enumerate(skill.required_inputs)
    ]
    for path, names in sites:
        for ni, name in enumerate(names or ()):
            if name not in known:
                close = difflib.get_close_matches(name, known, n=1)
                yield _error(
                    locate,
                    (*path, ni),
                    f"no intent is named '{name}'",
                    "unknown-intent",
                    f"did you mean '{close[0]}'?"
                    if close
                    else f"intents.supported has: {', '.join(known) or 'none'}",
                )


def approver_sites(skill: DomainFile) -> Iterator[tuple[FieldPath, str]]:
    """Every role the skill names as approving a call: its path and the role."""
    policy = skill.policy
    yield ("policy", "default_approver"), policy.default_approver
    for ai, approval in enumerate(policy.approvals):
        if approval.approver is not None:
            yield ("policy", "approvals", ai, "approver"), approval.approver
    for ti, tool in enumerate(skill.tools):
        if tool.policy.approver is not None:
            yield ("tools", ti, "policy", "approver"), tool.policy.approver
        for ci, cond in enumerate(tool.policy.conditions):
            if cond.approver is not None:
                yield ("tools", ti, "policy", "conditions", ci, "approver"), cond.approver
    for kind in ("never", "always"):
        for gi, rule in enumerate(getattr(policy.guardrails, kind)):
            if isinstance(rule, StructuredRule) and rule.approver is not None:
                yield ("policy", "guardrails", kind, gi, "approver"), rule.approver
    if policy.escalation is not None and policy.escalation.target is not None:
        yield ("policy", "escalation", "target"), policy.escalation.target


def approver_problem(role: str) -> str | None:
    """Why ``role`` may not approve a call (a role every caller holds), or None."""
    if role in EVERY_CALLER_ROLES:
        return (
            f"'{role}' is a role every caller holds: a job's owner could approve their own "
            "call; name the role that approves (e.g. supervisor)"
        )
    return None


def _check_approvers(skill: DomainFile, locate: Locate) -> Iterator[SkillIssue]:
    for path, role in approver_sites(skill):
        problem = approver_problem(role)
        if problem is not None:
            yield _error(
                locate,
                path,
                problem,
                "approver-every-caller",
                "the job's owner never approves their own call unless the rule says "
                "self_approval: allowed",
            )


def _check_workflows(skill: DomainFile, locate: Locate) -> Iterator[SkillIssue]:
    """A step naming a tool is ordered; one that nearly names a tool is an error (a typo
    must not turn an enforced step into a loose one); the rest are said not enforced."""
    tools = _tool_spellings(skill)
    for wi, wf in enumerate(skill.policy.workflows):
        loose = []
        for si, step in enumerate(wf.steps):
            path: FieldPath = ("policy", "workflows", wi, "steps", si)
            if isinstance(step, WorkflowStep) and step.tool:
                if skill.tool(step.tool) is None:
                    near = _near_tool(step.tool, tools)
                    hint = f"did you mean '{near}'?" if near else _known_tools(skill)
                    yield _error(
                        locate,
                        (*path, "tool"),
                        f"workflow step names unknown tool '{step.tool}'",
                        "unknown-tool",
                        hint,
                    )
                continue
            name = step if isinstance(step, str) else step.id
            if workflow_step_tool(skill, step) is not None:
                continue
            near = _near_tool(name, tools) if name else None
            if name is None or near is None:
                loose.append(name or "?")
                continue
            if isinstance(step, str):
                hint = f"did you mean '{near}'? A step that names a tool is ordered"
            else:
                hint = f"write tool: {near} to order it, or name the step apart from the tool"
            yield _error(
                locate,
                path if isinstance(step, str) else (*path, "id"),
                f"workflow step '{name}' nearly names the tool '{near}' but names no tool: "
                "it would not be enforced",
                "step-near-tool",
                hint,
            )
        if loose:
            yield _warn(
                locate,
                ("policy", "workflows", wi, "steps"),
                f"steps {', '.join(repr(s) for s in loose)} name no tool: they stay "
                "sub-goals for the planner and are not enforced",
                "step-not-enforced",
            )
        if not wf.steps:
            yield _warn(
                locate, ("policy", "workflows", wi), "workflow has no steps", "empty-workflow"
            )
        yield from _check_workflow_keys(skill, locate, wi)


def _check_workflow_keys(skill: DomainFile, locate: Locate, wi: int) -> Iterator[SkillIssue]:
    """``same``: every tool step takes the arguments that bind it (a misspelt or missing
    one would leave the step unbound), and a step's own ``same`` binds some earlier step."""
    wf = skill.policy.workflows[wi]
    base: FieldPath = ("policy", "workflows", wi)
    lacking: dict[str, list[str]] = {}
    earlier: list[set[str] | None] = []
    for si, step in enumerate(wf.steps):
        tool = workflow_step_tool(skill, step)
        if tool is None:
            continue
        names = input_names(tool)
        own = isinstance(step, WorkflowStep) and step.same is not None
        for key in wf.keys(step):
            if names is not None and key not in names and not own:
                lacking.setdefault(key, []).append(tool.name)
            elif names is not None and key not in names:
                yield _error(
                    locate,
                    (*base, "steps", si, "same"),
                    f"step {si + 1} binds by {key} (same), but its tool {tool.name} has no "
                    f"{key} input",
                    "unknown-input",
                )
            elif own and earlier and all(n is not None and key not in n for n in earlier):
                yield _error(
                    locate,
                    (*base, "steps", si, "same"),
                    f"step {si + 1} binds by {key} (same), but no earlier step's tool takes "
                    f"{key}: it would bind nothing",
                    "unknown-input",
                )
        earlier.append(set(names) if names is not None else None)
    for key, tools in lacking.items():
        yield _error(
            locate,
            (*base, "same"),
            f"workflow '{wf.key()}' binds its steps by {key} (same), but "
            f"{', '.join(tools)} {'has' if len(tools) == 1 else 'have'} no {key} input",
            "unknown-input",
            hint="give such a step its own same; same: [] leaves it unbound",
        )
    if wf.same is not None and not wf.required:
        yield _warn(
            locate,
            (*base, "same"),
            "same binds the order of a required workflow only: this one is not required",
            "not-enforced",
        )


def _spelling(name: str) -> str:
    """A name with case and word separators dropped: ``Verify-Identity`` -> ``verifyidentity``."""
    return "".join(ch for ch in name.casefold() if ch.isalnum())


def _tool_spellings(skill: DomainFile) -> dict[str, str]:
    """Every way a step may name a tool (name, id, a package tool's local name), by its
    :func:`_spelling`, to the name to suggest."""
    found: dict[str, str] = {}
    for tool in skill.tools:
        for name in (tool.name, tool.id, tool.name.rsplit(".", 1)[-1]):
            if name:
                found.setdefault(_spelling(name), name)
    return found


def _near_tool(name: str, tools: dict[str, str]) -> str | None:
    """The tool ``name`` nearly spells (another case or separator, or a small typo)."""
    spelled = _spelling(name)
    if not spelled:
        return None
    if spelled in tools:
        return tools[spelled]
    if len(spelled) < _NEAR_TOOL_LENGTH:
        return None
    near = difflib.get_close_matches(spelled, list(tools), n=1, cutoff=_NEAR_TOOL)
    return tools[near[0]] if near else None


_NEAR_TOOL = 0.85
"""How alike (difflib's ratio, on :func:`_spelling`) a step and a tool name must be to be a
near miss: one or two letters off in a name of ten or more."""
_NEAR_TOOL_LENGTH = 6
"""Shorter steps are near misses only by case and separators: ``ask`` is not ``task``."""


def _known_tools(skill: DomainFile) -> str:
    names = sorted({t.name for t in skill.tools} | {t.id for t in skill.tools if t.id})
    return f"known tools: {', '.join(names)}" if names else "the skill has no tools"


def input_names(tool: Tool) -> list[str] | None:
    """The tool's argument names; None when ``inputSchema.properties`` is not a mapping
    (an invalid schema, reported as such), so no argument name can be known."""
    if tool.inputs is None and not isinstance(
        (tool.inputSchema or {}).get("properties") or {}, dict
    ):
        return None
    return tool.input_names()


@functools.lru_cache(maxsize=4096)
def _semantic_trigger(text: str, path: FieldPath, where: SourceLocation) -> SkillIssue:
    return SkillIssue(
        Severity.WARNING,
        f"escalation condition {text!r} is a sentence, not a condition: it is given to the "
        "model as an escalation trigger, judged by the model and not enforced",
        where,
        path,
        code="semantic-escalation",
        hint="to enforce it, write a condition, e.g. `severity == 'critical'`",
    )


def _compile(text: str, known: frozenset[str] | None) -> Condition:
    """:func:`compile_condition`, once per text and set of names: compiled conditions are
    immutable and may be shared, and many skills repeat the same few."""
    return compile_condition(text, known_names=known)


def _compile_conditions(
    skill: DomainFile, locate_value: Locate
) -> tuple[dict[FieldPath, Condition], list[SkillIssue]]:
    names = [input_names(t) for t in skill.tools]
    # One tool's unreadable schema (already an error) must not make every condition that
    # reads its arguments an error too: then names are not checked.
    all_inputs = None if None in names else {n for found in names if found for n in found}
    compiled: dict[FieldPath, Condition] = {}
    issues: list[SkillIssue] = []
    for path, text, tool in condition_sites(skill):
        scope = input_names(tool) if tool else all_inputs
        known = None if scope is None else RUNTIME_NAMES | frozenset(scope)
        try:
            compiled[path] = _compile(text, known)
        except ConditionSyntaxError as exc:
            escalation = path[:2] == ("policy", "escalation")
            if escalation and reads_as_prose(text):
                issues.append(_semantic_trigger(text, path, locate_value(path)))
                continue
            col = f" (column {exc.column} of the condition)" if exc.column else ""
            hint = exc.hint
            if escalation:
                hint = (f"{hint}; " if hint else "") + (
                    "or, for the model to judge it, a sentence with no operator"
                )
            issues.append(
                SkillIssue(
                    Severity.ERROR,
                    f"condition {text!r} is invalid: {exc.message}{col}",
                    locate_value(path),
                    path,
                    code="invalid-condition",
                    hint=hint,
                )
            )
    return compiled, issues
