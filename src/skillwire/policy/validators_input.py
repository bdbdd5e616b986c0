"""The last three validators: argument validation, required inputs, approvals.

Arguments are validated against the tool's schema without coercion. Missing required
values become one ``NeedInput`` that asks for all of them at once (with the prompt
text of ``required_inputs`` where the skill gives one). Approval is judged only on
complete arguments, and an approval binds the exact arguments it was given for.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from skillwire.core.errors import ConditionEvaluationError
from skillwire.policy.call import ApprovalGrant, GateCall
from skillwire.policy.decisions import Reason, ReasonCode
from skillwire.policy.rules import RuleKind
from skillwire.policy.tooling import ToolFacts
from skillwire.policy.validators import Findings, holds, holds_or_fails_closed
from skillwire.policy.workflows import applies, input_scope

__all__ = ["Approvals", "ArgumentValidation", "RequiredInputs", "lookup_path"]


def lookup_path(values: Mapping[str, Any], path: str) -> Any:
    """The value at a dotted ``path`` (``identity.email``) in nested mappings, or None.

    A key that itself holds the dots (``{"identity.email": ...}``) is found too.
    """
    if path in values:
        return values[path]
    node: Any = values
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def _given(value: Any) -> bool:
    """A value the user gave (an input or an entity): ``""`` is none."""
    return value is not None and not (type(value) is str and not value)


def _argument(value: Any) -> bool:
    """An argument the call gives: only an absent (or null) one is missing; ``""`` is a
    value, and the schema (``minLength``) decides whether it is acceptable."""
    return value is not None


class ArgumentValidation:
    """The arguments given match the tool's input schema (no silent coercion)."""

    def check(self, call: GateCall, facts: ToolFacts, found: Findings) -> None:
        for problem in facts.argument_errors(call.args):
            found.block(ReasonCode.ARGUMENT_INVALID, problem)


class RequiredInputs:
    """Required arguments, ``required_inputs`` before the first tool call (those that
    apply to the job's intents; one scoped to an intent after it too, until the job has
    it), and ``require_input`` rules."""

    def check(self, call: GateCall, facts: ToolFacts, found: Findings) -> None:
        missing = facts.missing_required(call.args)
        if missing:
            found.need(
                missing,
                Reason(
                    ReasonCode.MISSING_REQUIRED_INPUT, f"{facts.name} needs {', '.join(missing)}"
                ),
            )
        required_inputs = facts.skill.required_inputs
        if required_inputs:
            started = any(run.ok for run in call.history)
            # Before the job's first tool call, every input that applies is asked. After
            # it, one scoped to an intent is asked still when the job never had it: the
            # intent was added later (an answer on resume), and a job of that intent
            # alone would have had to give it before anything ran.
            asked = [
                req.path
                for req in required_inputs
                if applies(input_scope(req), call.scope)
                and not (started and input_scope(req) is None)
                and not self._has(call, req.path)
                and not (started and self._given_before(call, req.path))
            ]
            if asked:
                found.need(
                    asked,
                    Reason(
                        ReasonCode.MISSING_REQUIRED_INPUT,
                        "the skill needs " + ", ".join(asked) + " before its first tool call",
                    ),
                )
        for rule in facts.rules_of(RuleKind.REQUIRE_INPUT):
            if not holds_or_fails_closed(rule, call, facts):
                continue
            wanted = [
                f
                for f in rule.fields
                if not _argument(call.args.get(f)) and not _given(lookup_path(call.inputs, f))
            ]
            if wanted:
                found.need(wanted, Reason(rule.code, rule.text, rule.text, rule.source), rule.text)

    @staticmethod
    def _given_before(call: GateCall, path: str) -> bool:
        """Whether an earlier run of the job had ``path`` (its last part) as an argument."""
        leaf = path.rsplit(".", 1)[-1]
        return any(_argument(run.args.get(leaf)) for run in call.history)

    @staticmethod
    def _has(call: GateCall, path: str) -> bool:
        leaf = path.rsplit(".", 1)[-1]
        return (
            _given(lookup_path(call.inputs, path))
            or _argument(call.args.get(leaf))
            or _given(lookup_path(call.entities, path))
            or _given(call.entities.get(leaf))
        )


class Approvals:
    """Approval and escalation rules, judged on complete arguments only; a grant by
    the rule's role for exactly these arguments, not consumed (and answering the
    call's pause, when the caller names its pauses), satisfies the rule. The grants
    used are listed in the findings: an ``Allow`` says which, and the caller consumes
    them with the call's execution."""

    def check(self, call: GateCall, facts: ToolFacts, found: Findings) -> None:
        if found.missing or found.blocks:
            return  # a blocked or incomplete call is not put to an approver
        granted: dict[str, ApprovalGrant | None] = {}  # rules asking one role: one search
        for rule in facts.asking:
            if found.skips(rule):
                continue
            try:
                verdict = holds(rule, call, facts)
            except ConditionEvaluationError as exc:
                verdict = True
                message = f"{exc}; approval asked (fail closed)"
            else:
                message = rule.text
                if rule.shows_origin and verdict:
                    message = f"{message}: {untrusted_arguments(call)}"
            if not verdict:
                continue
            approver = rule.approver or facts.skill.policy.default_approver
            grant = None
            if call.grants:
                if approver in granted:
                    grant = granted[approver]
                else:
                    grant = granted[approver] = call.grant_for(approver, facts.name)
            if grant is not None:
                if not any(g is grant for g in found.grants):
                    found.grants.append(grant)
                continue
            said = message if rule.shows_origin else rule.text  # the approver sees where
            found.approvals.append((rule, Reason(rule.code, message, said, rule.source)))


def untrusted_arguments(call: GateCall) -> str:
    """Which arguments of ``call`` are untrusted and where each was found, for the
    approver: ``to_iban "GB29..." is in the output of tool:read_inbox (untrusted), not
    in the user's or operator's words``."""
    provenance = call.provenance
    parts: list[str] = []
    for name, value in call.args.items():
        trace = provenance.trace(value)
        if trace is not None:
            where = ", ".join(trace.origins)
            parts.append(
                f"{name} {json.dumps(trace.part, ensure_ascii=False)} is in the output of "
                f"{where} (untrusted), not in the user's or operator's words"
            )
    return "; ".join(parts) or "an argument is in untrusted tool output"
