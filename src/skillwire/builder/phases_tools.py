"""The interview's phases about what the agent may do: tools, a policy per tool proposed
from what it does, approvals and their roles, workflows."""

from __future__ import annotations

from functools import partial
from typing import Any

from skillwire.builder import edits
from skillwire.builder.condition_view import view_condition
from skillwire.builder.interview import PhaseResult, Question, Session
from skillwire.builder.tool_effects import CHOICE_LABELS, PolicyChoice, propose_policy
from skillwire.builder.yaml_text import plain

__all__ = [
    "APPROVER_ROLES",
    "approvals_phase",
    "parse_inputs",
    "policies_phase",
    "tools_phase",
    "workflows_phase",
]

APPROVER_ROLES = ("supervisor", "manager", "admin", "finance", "security", "other")
"""The roles offered for an approval (``other`` asks for a name)."""
INPUT_TYPES = ("string", "number", "integer", "boolean")
EXECUTORS = ("simulate", "python", "http_request")
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")


def _data(session: Session) -> dict[str, Any]:
    value = plain(session.draft.data)
    return value if isinstance(value, dict) else {}


def _tools(session: Session) -> list[dict[str, Any]]:
    return [t for t in _data(session).get("tools") or [] if isinstance(t, dict)]


def parse_inputs(answer: str) -> list[dict[str, Any]]:
    """``order_id:string, amount:number?`` -> ``inputs[]`` entries (``?``: optional;
    no type: string). Raises :class:`ValueError` saying what is wrong."""
    entries = []
    for part in (p.strip() for p in answer.split(",")):
        if not part:
            continue
        name, _, kind = (x.strip() for x in part.partition(":"))
        optional = kind.endswith("?") or name.endswith("?")
        name, kind = name.rstrip("?"), (kind.rstrip("?") or "string")
        if not name.isidentifier():
            raise ValueError(f"{name!r} is not an argument name (letters, digits and _)")
        if kind not in INPUT_TYPES:
            raise ValueError(f"type of {name} is one of {', '.join(INPUT_TYPES)}, not {kind!r}")
        entries.append({"name": name, "type": kind, "required": not optional})
    return entries


def _executor(session: Session, name: str) -> dict[str, Any] | None:
    kind = session.ask(
        Question(
            "How does it run?",
            EXECUTORS,
            "simulate",
            note="simulate returns its arguments until you give it a real executor",
        )
    )
    if kind is None:
        return None
    if kind == "python":
        target = session.ask(
            Question(
                "Its callable, module:function (a module of the skill's folder)",
                default=f"tools:{name}",
            )
        )
        return None if target is None else {"type": "python", "callable": target}
    if kind == "http_request":
        method = session.ask(Question("HTTP method", METHODS, "GET"))
        url = session.ask(Question("URL ({{argument}} fills in an argument)"))
        if method is None or url is None:
            return None
        return {"type": "http_request", "method": method, "url": url}
    return {"type": "simulate", "result": {"status": "simulated"}}


def tools_phase(session: Session) -> PhaseResult:
    """Tools by hand (imported ones are already in the draft)."""
    tools = _tools(session)
    if session.only_missing and tools:
        return PhaseResult.DONE
    session.say("4. tools: what the agent can do", "note")
    if tools:
        session.say("the draft has: " + ", ".join(str(t.get("name")) for t in tools), "note")
    return session.repeat(
        "Add a tool by hand?", lambda: not _tools(session), partial(_tool, session)
    )


def _tool(session: Session) -> PhaseResult | None:
    """One tool by hand (the first one is offered defaults). Raises
    :class:`ValueError` for arguments that cannot be read."""
    first = not _tools(session)
    name = session.ask(Question("Tool name", default="look_up" if first else ""))
    if name is None:
        return PhaseResult.BACK
    description = session.ask(
        Question("What it does", default="Look up what the user asks about" if first else "")
    )
    if description is None:
        return PhaseResult.BACK
    raw = session.ask(
        Question(
            "Arguments as name:type, comma-separated (? after one: optional)",
            default="query:string" if first else "",
            note=f"types: {', '.join(INPUT_TYPES)}; e.g. order_id:string, amount:number",
        )
    )
    if raw is None:
        return PhaseResult.BACK
    inputs = parse_inputs(raw)  # what is wrong is said, and the question asked again
    executor = _executor(session, name)
    if executor is None:
        return PhaseResult.BACK
    entry: dict[str, Any] = {"name": name, "description": description, "inputs": inputs}
    entry["executor"] = executor
    session.apply(partial(edits.add_tool, tool=entry), f"tool {name}")
    return None


def _decided(data: dict[str, Any], name: str) -> bool:
    tool: dict[str, Any] = next((t for t in data.get("tools") or [] if t.get("name") == name), {})
    if tool.get("policy"):
        return True
    policy = data.get("policy") or {}
    if any(a.get("tool_id") == name for a in policy.get("approvals") or []):
        return True
    return any(
        name in (w.get("steps") or []) for w in policy.get("workflows") or [] if isinstance(w, dict)
    )


def _schema(tool: dict[str, Any]) -> dict[str, Any]:
    if isinstance(tool.get("inputSchema"), dict):
        return dict(tool["inputSchema"])
    props = {i["name"]: {"type": i.get("type", "string")} for i in tool.get("inputs") or []}
    return {"type": "object", "properties": props}


def policies_phase(session: Session) -> PhaseResult:
    """A policy for each tool whose policy is not decided, proposed from what it does."""
    session.say("5. policies: when each tool may run", "note")
    for tool in _tools(session):
        name = str(tool.get("name"))
        if _decided(_data(session), name):
            continue
        schema = _schema(tool)
        method = (tool.get("executor") or {}).get("method")
        description = str(tool.get("description", ""))
        hints = session.tool_hints.get(name)
        proposal = propose_policy(name, description, schema, method, hints=hints)
        session.say(
            f"{name}: {proposal.effect.value}; proposed: "
            f"{CHOICE_LABELS[proposal.choice]} ({proposal.reason})",
            "note",
        )
        others = [str(t.get("name")) for t in _tools(session) if t.get("name") != name]
        choices = tuple(c.value for c in PolicyChoice if c is not PolicyChoice.AFTER or others)
        choice = session.ask(
            Question(
                f"Policy of {name}",
                choices,
                proposal.choice.value,
                note="; ".join(f"{c} = {CHOICE_LABELS[PolicyChoice(c)]}" for c in choices),
            )
        )
        if choice is None:
            return PhaseResult.BACK
        result = _apply_choice(
            session, name, PolicyChoice(choice), proposal.condition, schema, others
        )
        if result is None:
            return PhaseResult.BACK
    return PhaseResult.DONE


def _apply_choice(
    session: Session,
    name: str,
    choice: PolicyChoice,
    condition: str | None,
    schema: dict[str, Any],
    others: list[str],
) -> bool | None:
    if choice is PolicyChoice.FREE:
        return True
    if choice is PolicyChoice.NEVER:
        return session.apply(lambda root: edits.forbid_tool(root, name), f"{name} never runs")
    if choice is PolicyChoice.APPROVAL:
        return session.apply(
            lambda root: edits.add_approval(root, name, "always", "supervisor"),
            f"{name} needs approval",
        )
    if choice is PolicyChoice.AFTER:
        first = session.ask(
            Question(f"Which tool must run before {name}?", tuple(others), others[0])
        )
        if first is None:
            return None
        return session.apply(
            lambda root: edits.add_workflow(root, f"{first} before {name}", [first, name], True),
            f"{name} after {first}",
        )
    arguments = list((schema.get("properties") or {}).keys())

    def change_for(answer: str) -> Any:
        view = view_condition(answer, arguments)
        session.say(str(view), "note" if view.ok else "error")
        if not view.ok:
            raise ValueError("type the condition again (the spoken dialect or CEL)")
        return lambda root: edits.add_approval(root, name, answer, "supervisor")

    return session.settle(
        Question(
            f"When does {name} need approval?",
            default=condition or "",
            note=f"its arguments: {', '.join(arguments) or '(none)'}; e.g. amount > 500 and "
            "currency == 'USD'",
        ),
        change_for,
        f"{name} needs approval when {{}}",
    )


def approvals_phase(session: Session) -> PhaseResult:
    """The role that approves each approval."""
    approvals = (_data(session).get("policy") or {}).get("approvals") or []
    if not approvals or session.only_missing:
        return PhaseResult.DONE
    session.say("6. approvals and roles: who approves", "note")
    for index, approval in enumerate(approvals):
        current = str(approval.get("approver") or "supervisor")
        default = current if current in APPROVER_ROLES else "other"
        role = session.ask(
            Question(
                f"Who approves {approval.get('tool_id')} (when {approval.get('when')})?",
                APPROVER_ROLES,
                default,
            )
        )
        if role is None:
            return PhaseResult.BACK
        if role == "other":
            role = session.ask(Question("The approver role's name", default=current))
            if role is None:
                return PhaseResult.BACK

        if role == approval.get("approver"):
            continue

        def change(root: Any, i: int = index, r: str = role) -> None:
            root["policy"]["approvals"][i]["approver"] = r

        session.apply(change, f"approver {role}")
    return PhaseResult.DONE


def workflows_phase(session: Session) -> PhaseResult:
    """Tools that must run in a set order."""
    if session.only_missing:
        return PhaseResult.DONE
    session.say("7. workflows: tools that must run in order", "note")
    return session.repeat("Must some tools run in a set order?", False, partial(_workflow, session))


def _workflow(session: Session) -> PhaseResult | None:
    """One required workflow. Raises :class:`ValueError` for fewer than two steps."""
    steps = session.ask(Question("The tools in order, comma-separated"))
    if steps is None:
        return PhaseResult.BACK
    names = [s.strip() for s in steps.split(",") if s.strip()]
    if len(names) < 2:
        raise ValueError("a workflow orders at least two tools")
    title = session.ask(Question("Its name", default=" then ".join(names)))
    if title is None:
        return PhaseResult.BACK
    session.apply(
        partial(edits.add_workflow, name=title, steps=names, required=True), f"workflow {title}"
    )
    return None
