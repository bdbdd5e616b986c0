"""What ``skillwire check --explain`` shows: every rule, how it is treated, where it is."""

from __future__ import annotations

from typing import Any

from skillwire.policy.access import BasePolicy
from skillwire.policy.gate import Gate
from skillwire.policy.rules import PLANNER_TOKEN_BUDGET, RuleKind
from skillwire.policy.workflows import IntentScope, input_scope, workflow_scope
from skillwire.skills.model import Skill

__all__ = ["EVERY_INTENT", "explain_skill"]


EVERY_INTENT = "(every intent)"
"""What an unscoped workflow, required input or rule shows as its intents."""


def _scope(scope: IntentScope) -> list[str]:
    return sorted(scope) if scope is not None else [EVERY_INTENT]


def explain_skill(skill: Skill, base: BasePolicy | None = None) -> dict[str, Any]:
    """Every compiled rule (kind, scope, CEL, the arguments a workflow step is bound by,
    the intents it applies to, source), every text rule of ``skill``, each fact (its CEL,
    source and the rules that read it), and the intents each workflow and each required
    input applies to."""
    gate = Gate.for_skill(skill, base=base)
    policy = gate.policy
    rules: list[dict[str, Any]] = []
    for rule in policy.rules:
        rules.append(
            {
                "text": rule.text,
                "kind": str(rule.kind),
                "tools": list(rule.tools) or ["(every tool)"],
                "expression": rule.condition.expression
                if rule.condition
                else (rule.per if rule.kind is RuleKind.ONCE_PER else None),
                "approver": rule.approver,
                "same": list(rule.fields) if rule.kind is RuleKind.WORKFLOW_ORDER else [],
                "code": str(rule.code),
                "source": str(rule.source),
                "origin": rule.origin,
                "note": rule.note or None,
                "intents": _scope(rule.intents),
            }
        )
    for text in policy.text_rules:
        rules.append(
            {
                "text": text.text,
                "kind": "text (planner)"
                if text.to_planner
                else f"text (finalization gate only: {text.cut})",
                "tools": [],
                "expression": None,
                "approver": None,
                "same": [],
                "code": "",
                "source": str(text.source),
                "origin": text.origin,
                "note": None,
                "intents": _scope(None),
            }
        )
    facts = gate.skill_facts
    return {
        "skill": skill.id,
        "rules": rules,
        "facts": [
            {
                "name": name,
                "expression": expression.expression,
                "source": str(skill.locate(("facts", name))),
                "read_by": [f"{rule.text} ({rule.source})" for rule in facts.readers.get(name, [])],
            }
            for name, expression in facts.expressions.items()
        ],
        "workflows": [
            {
                "name": wf.key(),
                "required": wf.required,
                "intents": _scope(workflow_scope(skill, wf)),
                "source": str(skill.locate(("policy", "workflows", wi))),
            }
            for wi, wf in enumerate(skill.policy.workflows)
        ],
        "required_inputs": [
            {
                "path": req.path,
                "intents": _scope(input_scope(req)),
                "source": str(skill.locate(("required_inputs", ri))),
            }
            for ri, req in enumerate(skill.required_inputs)
        ],
        "text_rules": sum(1 for t in policy.text_rules if t.to_planner),
        "text_tokens": policy.planner_tokens,
        "text_token_budget": PLANNER_TOKEN_BUDGET,
        "text_rules_cut": sum(1 for t in policy.text_rules if not t.to_planner),
        "planner_text": policy.planner_text,
        "access": {
            "shell_allowed": list(gate.access.shell_allowed),
            "shell_denied": list(gate.access.shell_denied),
            "write_roots": list(gate.access.write_roots),
            "dropped": list(gate.access.dropped),
        },
    }
