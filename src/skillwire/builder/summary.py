"""The live summary of a draft: what it holds, and whether it loads now."""

from __future__ import annotations

from typing import Any

from skillwire.builder.draft import Draft
from skillwire.builder.yaml_text import plain

__all__ = ["summarize"]


def _names(items: Any, key: str) -> list[str]:
    if not isinstance(items, list):
        return []
    return [str(i.get(key)) for i in items if isinstance(i, dict) and i.get(key)]


def _tool_line(tool: dict[str, Any], approvals: list[dict[str, Any]]) -> str:
    name = str(tool.get("name"))
    policy: dict[str, Any] = tool["policy"] if isinstance(tool.get("policy"), dict) else {}
    if policy.get("allowed") == "never":
        rule = "never runs"
    else:
        whens = [str(a.get("when")) for a in approvals if a.get("tool_id") == name]
        rule = "approval " + " / ".join(whens) if whens else "runs freely"
    executor: dict[str, Any] = tool["executor"] if isinstance(tool.get("executor"), dict) else {}
    return f"{name} ({executor.get('type', 'simulated')}; {rule})"


def summarize(draft: Draft) -> str:
    """A few lines: each part of the draft and whether the draft loads now."""
    data = plain(draft.data)
    problem = data.get("problem") or {}
    intents = (data.get("intents") or {}).get("supported") or []
    policy = data.get("policy") or {}
    approvals = [a for a in policy.get("approvals") or [] if isinstance(a, dict)]
    tools = [t for t in data.get("tools") or [] if isinstance(t, dict)]
    role = data.get("role") or {}
    contract = (data.get("output_contract") or {}).get("required_fields") or []
    lines = [
        f"draft {draft.display}",
        f"  problem: {problem.get('statement') or '(missing)'}",
        f"  scenarios: {len(data.get('scenarios') or [])}",
        f"  intents: {', '.join(_names(intents, 'id')) or '(missing)'}",
        f"  tools: {', '.join(_tool_line(t, approvals) for t in tools) or '(missing)'}",
        f"  workflows: {', '.join(_names(policy.get('workflows'), 'name')) or '-'}",
        f"  required inputs: {', '.join(_names(data.get('required_inputs'), 'path')) or '-'}",
        f"  output contract: {', '.join(map(str, contract)) or '-'}",
        f"  persona: {role.get('persona') or '-'}",
    ]
    check = draft.last
    if check.loads:
        lines.append(f"  loads: yes ({len(check.warnings)} warnings)")
    else:
        missing = [i.message.split(" requires ")[-1] for i in check.missing]
        other = [i for i in check.errors if i not in check.missing]
        state = f"missing {'; '.join(missing)}" if missing else f"{len(other)} errors"
        lines.append(f"  loads: not yet ({state})")
    return "\n".join(lines)
