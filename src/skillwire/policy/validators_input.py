"""The last three validators: argument validation, required inputs, approvals.

Arguments are validated against the tool's schema without coercion. Missing required
values become one ``NeedInput`` that asks for all of them at once (with the prompt
text of ``required_inputs`` where the skill gives one). Approval is judged only on
complete arguments, and an approval binds the exact arguments it was given for.
"""

from __future__ import annotations

from typing import Any

from skillwire.core.conditions import ConditionEvaluationError
from skillwire.policy.call import GateCall, args_key
from skillwire.policy.compiler import RuleKind
from skillwire.policy.decisions import Reason, ReasonCode
from skillwire.policy.tooling import ToolFacts
from skillwire.policy.validators import Findings, holds, holds_quietly

__all__ = ["Approvals", "ArgumentValidation", "RequiredInputs", "lookup_path"]


def lookup_path(values: Any, path: str) -> Any:
    """The value at a dotted ``path`` (``identity.email``) in nested mappings, or None."""
    node = values
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


class ArgumentValidation:
    """The arguments given match the tool's input schema (no silent coercion)."""

    def check(self, call: GateCall, facts: ToolFacts, found: Findings) -> None:
        for problem in facts.argument_errors(call.args):
            found.block(ReasonCode.ARGUMENT_INVALID, problem)


class RequiredInputs:
    """Required arguments, ``required_inputs`` before the first tool call, and
    ``require_input`` rules."""

    def check(self, call: GateCall, facts: ToolFacts, found: Findings) -> None:
        skill = facts.skill
        missing = sorted(facts.missing_required(call.args), key=facts.required.index)
        if missing:
            found.need(
                missing,
                Reason(
                    ReasonCode.MISSING_REQUIRED_INPUT, f"{call.tool} needs {', '.join(missing)}"
                ),
            )
        if not any(run.ok for run in call.history):
            asked = []
            for req in skill.required_inputs:
                leaf = req.path.rsplit(".", 1)[-1]
                have = (
                    lookup_path(dict(call.inputs), req.path) is not None
                    or call.inputs.get(req.path) is not None
                    or call.args.get(leaf) is not None
                    or call.entities.get(leaf) is not None
                )
                if not have:
                    asked.append(req.path)
            if asked:
                found.need(
                    asked,
                    Reason(
                        ReasonCode.MISSING_REQUIRED_INPUT,
                        "the skill needs " + ", ".join(asked) + " before its first tool call",
                    ),
                )
        for rule in facts.rules_of(RuleKind.REQUIRE_INPUT):
            if not holds_quietly(rule, call, facts) and rule.condition is not None:
                continue
            wanted = [
                f
                for f in rule.fields
                if call.args.get(f) in (None, "") and lookup_path(dict(call.inputs), f) is None
            ]
            if wanted:
                found.need(wanted, Reason(rule.code, rule.text, rule.text, rule.source))


class Approvals:
    """Approval and escalation rules, judged on complete arguments only."""

    def check(self, call: GateCall, facts: ToolFacts, found: Findings) -> None:
        if found.missing:
            return
        key = None
        for rule in facts.rules_of(RuleKind.APPROVAL, RuleKind.ESCALATION):
            if facts.waived_by_exception(rule, found.waived):
                continue
            try:
                verdict = holds(rule, call, facts)
            except ConditionEvaluationError as exc:
                verdict = True
                message = f"cannot evaluate the condition ({exc}): approval asked (fail closed)"
            else:
                message = rule.text
            if not verdict:
                continue
            if key is None:
                key = args_key(facts.name, call.args)
            approver = rule.approver or facts.skill.policy.default_approver
            if any(
                g.role == approver and args_key(facts.name, g.args) == key
                for g in call.grants
                if g.tool in (facts.name, call.tool)
            ):
                continue
            found.approvals.append((rule, Reason(rule.code, message, rule.text, rule.source)))
