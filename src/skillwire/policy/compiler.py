"""The guardrail compiler: every rule a skill declares, in one indexed form.

Each rule becomes a :class:`CompiledRule` with its kind, the tools it applies to, its
condition (compiled once at load), and the file and line it came from. Rules that
have no mechanical meaning stay text for the planner (at most ``MAX_TEXT_RULES`` and
about ``PLANNER_TOKEN_BUDGET`` tokens; a rule cut is a warning, see
:mod:`skillwire.policy.planner_budget`). Nothing is dropped: ``skillwire check
--explain`` lists all of it.

A guardrail sentence understood only in part (``Never call reset_password for inactive
employees``) is neither a total deny nor dropped: every call of the tools it names needs
approval, with the sentence as the reason; :attr:`CompiledPolicy.findings` warns.

Scoping (DESIGN.md): a rule applies to the tool it names, else to the tools whose
inputs define every argument its condition reads, else (a condition over the job's
context only) to every tool.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from skillwire.conditions import compile_condition
from skillwire.core.conditions import Condition
from skillwire.core.errors import ConditionSyntaxError
from skillwire.core.issues import Severity, SkillIssue
from skillwire.core.location import FieldPath, SourceLocation, format_path
from skillwire.policy.crossjob import cross_job_rules
from skillwire.policy.decisions import ReasonCode
from skillwire.policy.planner_budget import fit_planner_budget
from skillwire.policy.provenance_check import provenance_findings
from skillwire.policy.rules import (
    CompiledPolicy,
    CompiledRule,
    RuleKind,
    TextRule,
)
from skillwire.policy.sentences import SentenceMeaning, read_sentence, rewrite_hint
from skillwire.policy.workflows import scope_findings, workflow_scope
from skillwire.skills.model import Skill
from skillwire.skills.model_policy import StructuredRule
from skillwire.skills.model_tools import OnceOnly, PolicyCondition, Tool
from skillwire.skills.prose import reads_as_prose, semantic_trigger_text
from skillwire.skills.semantics import RUNTIME_NAMES, approver_problem, workflow_step_tool

__all__ = ["access_location", "approver_errors", "compile_policy"]


class _Builder:
    def __init__(self, skill: Skill) -> None:
        self.skill = skill
        self.policy = CompiledPolicy(skill_id=skill.id)
        self.approver = skill.policy.default_approver

    def where(self, path: FieldPath) -> tuple[SourceLocation, str]:
        return self.skill.locate(path), format_path(path)

    def cond(self, path: FieldPath) -> Condition | None:
        try:
            return self.skill.condition(path)
        except KeyError:
            return None

    def add(
        self,
        kind: RuleKind,
        text: str,
        tools: Iterable[str],
        path: FieldPath,
        code: ReasonCode,
        *,
        condition: Condition | None = None,
        approver: str | None = None,
        fields: tuple[str, ...] = (),
        per: str | None = None,
        limit: int | None = None,
        after: tuple[str, ...] = (),
        waivable: bool = False,
        note: str = "",
        self_approval: bool = False,
        intents: frozenset[str] | None = None,
    ) -> None:
        source, origin = self.where(path)
        rule = CompiledRule(
            kind,
            text,
            tuple(tools),
            source,
            origin,
            code,
            condition=condition,
            approver=approver,
            fields=fields,
            per=per,
            limit=limit,
            after=after,
            waivable=waivable,
            note=note,
            self_approval=self_approval,
            intents=intents,
        )
        self.policy.rules.append(rule)

    def approval(
        self,
        text: str,
        tools: Iterable[str],
        path: FieldPath,
        *,
        approver: str,
        condition: Condition | None = None,
        waivable: bool = False,
        note: str = "",
        self_approval: bool = False,
    ) -> None:
        """Add a rule that calls of ``tools`` need ``approver``'s approval (when
        ``condition`` holds; always if it is None); ``self_approval``: the job's owner
        may give it."""
        self.add(
            RuleKind.APPROVAL,
            text,
            tools,
            path,
            ReasonCode.APPROVAL_REQUIRED,
            condition=condition,
            approver=approver,
            waivable=waivable,
            note=note,
            self_approval=self_approval,
        )

    def text(self, text: str, polarity: str, path: FieldPath) -> None:
        """Keep a rule as text (which of them the planner gets is decided once all are
        known: :func:`~skillwire.policy.planner_budget.fit_planner_budget`)."""
        source, origin = self.where(path)
        self.policy.text_rules.append(TextRule(text, polarity, source, origin, False, path))

    def scope(self, condition: Condition | None, named: str | None) -> tuple[str, ...] | None:
        """Tools a rule applies to; None when no tool can be found (keep as text)."""
        if named:
            tool = self.skill.tool(named)
            return (tool.name,) if tool else (named,)
        if condition is None:
            return None
        fields = condition.names - RUNTIME_NAMES
        if not fields:
            return ()
        scoped = tuple(t.name for t in self.skill.tools if fields <= set(t.input_names()))
        return scoped or None


def compile_policy(skill: Skill) -> CompiledPolicy:
    """Compile every rule of ``skill``. Conditions come compiled from the loader."""
    b = _Builder(skill)
    for ti, tool in enumerate(skill.tools):
        _tool_rules(b, tool, ("tools", ti))
    for ai, approval in enumerate(skill.policy.approvals):
        target = skill.tool(approval.tool_id)
        name = target.name if target else approval.tool_id
        base: FieldPath = ("policy", "approvals", ai)
        approver = approval.approver or b.approver
        own = approval.self_approval == "allowed"
        whens = [approval.when] if approval.when is not None else []
        whens += [c.when if isinstance(c, PolicyCondition) else c for c in approval.conditions]
        text = approval.reason or f"{name} needs {approver} approval" + (
            f" when {' or '.join(whens)}" if whens else ""
        )
        if approval.when is None and not approval.conditions:
            b.approval(text, [name], base, approver=approver, self_approval=own)
        if approval.when is not None:
            b.approval(
                text,
                [name],
                (*base, "when"),
                condition=b.cond((*base, "when")),
                approver=approver,
                self_approval=own,
            )
        for ci, c in enumerate(approval.conditions):
            p: FieldPath = (
                (*base, "conditions", ci, "when")
                if isinstance(c, PolicyCondition)
                else (*base, "conditions", ci)
            )
            b.approval(
                text,
                [name],
                p,
                condition=b.cond(p),
                approver=approver,
                self_approval=(
                    c.self_approval == "allowed"
                    if isinstance(c, PolicyCondition) and c.self_approval
                    else own
                ),
            )
    _guardrails(b)
    _escalation(b)
    _workflows(b)
    policy = b.policy
    policy.text_rules, cut = fit_planner_budget(policy.text_rules)
    policy.findings.extend(cut)
    policy.findings.extend(scope_findings(skill))
    policy.findings.extend(provenance_findings(skill, policy.rules))
    for tool in skill.tools:
        policy.by_tool[tool.name] = tuple(r for r in policy.rules if r.applies_to(tool.name))
    policy.findings.extend(approver_errors(policy.rules, b.approver))
    return policy


def approver_errors(rules: Iterable[CompiledRule], default: str) -> list[SkillIssue]:
    """An error for each rule asking a role every caller holds (a guardrail sentence's
    "user approval"; the loader reports the fields that name one)."""
    issues = []
    for rule in rules:
        if rule.kind not in (RuleKind.APPROVAL, RuleKind.ESCALATION):
            continue
        problem = approver_problem(rule.approver or default)
        if problem is not None:
            issues.append(
                SkillIssue(
                    Severity.ERROR,
                    f"{rule.origin}: {problem}",
                    rule.source,
                    code="approver-every-caller",
                )
            )
    return issues


def _tool_rules(b: _Builder, tool: Tool, path: FieldPath) -> None:
    pol = tool.policy
    name = tool.name
    if pol.allowed == "never":
        b.add(
            RuleKind.TOOL_DENY,
            f"{name} is never allowed (policy.allowed: never)",
            [name],
            (*path, "policy", "allowed"),
            ReasonCode.TOOL_NEVER_ALLOWED,
        )
    approver = pol.approver or b.approver
    own = pol.self_approval == "allowed"
    asks = pol.requires_approval
    if asks is True or asks == "always":
        b.approval(
            f"{name} always needs {approver} approval",
            [name],
            (*path, "policy", "requires_approval"),
            approver=approver,
            self_approval=own,
        )
    elif asks == "conditional" and pol.condition is not None:
        p = (*path, "policy", "condition")
        b.approval(
            f"{name} needs {approver} approval when {pol.condition}",
            [name],
            p,
            condition=b.cond(p),
            approver=approver,
            self_approval=own,
        )
    elif asks == "conditional" and not any(c.action == "require_approval" for c in pol.conditions):
        b.approval(
            f"{name} needs {approver} approval "
            "(requires_approval: conditional with no condition: fail closed)",
            [name],
            (*path, "policy", "requires_approval"),
            approver=approver,
            self_approval=own,
        )
    if pol.allowed == "conditional" and (
        not pol.conditions or any(c.action == "allow" for c in pol.conditions)
    ):
        # allowed: conditional says the tool runs only when its conditions allow it:
        # a call no allow condition covers (or any call, with none) needs approval.
        b.approval(
            f"{name} needs {approver} approval unless an allow condition holds"
            if pol.conditions
            else f"{name} needs {approver} approval (allowed: conditional with no "
            "conditions: fail closed)",
            [name],
            (*path, "policy", "allowed"),
            approver=approver,
            waivable=True,
            self_approval=own,
        )
    esc = b.skill.policy.escalation
    for ci, c in enumerate(pol.conditions):
        p = (*path, "policy", "conditions", ci, "when")
        text = c.message or f"{c.action} {name} when {c.when}"
        cond = b.cond(p)
        if c.action == "deny":
            b.add(
                RuleKind.THRESHOLD,
                text,
                [name],
                p,
                ReasonCode.TOOL_DENIED,
                condition=cond,
                waivable=True,
            )
        elif c.action == "require_approval":
            b.approval(
                text,
                [name],
                p,
                condition=cond,
                approver=c.approver or approver,
                waivable=True,
                self_approval=(c.self_approval or pol.self_approval) == "allowed",
            )
        elif c.action == "escalate":
            b.add(
                RuleKind.ESCALATION,
                text,
                [name],
                p,
                ReasonCode.ESCALATION_REQUIRED,
                condition=cond,
                approver=(esc.target if esc and esc.target else approver),
                waivable=True,
            )
        else:
            b.add(RuleKind.ALLOW_EXCEPTION, text, [name], p, ReasonCode.ALLOWED, condition=cond)
    for pi, _ in enumerate(tool.preconditions):
        p = (*path, "preconditions", pi)
        b.add(
            RuleKind.PRECONDITION,
            f"{name} needs {tool.preconditions[pi]}",
            [name],
            p,
            ReasonCode.PRECONDITION_FAILED,
            condition=b.cond(p),
        )
    if pol.once_only:
        per = pol.once_only.per if isinstance(pol.once_only, OnceOnly) else None
        text = f"{name} runs once per job" + (f" per {per}" if per else "")
        b.add(
            RuleKind.ONCE_ONLY,
            text,
            [name],
            (*path, "policy", "once_only"),
            ReasonCode.ONCE_ONLY,
            per=per,
        )
    b.policy.rules.extend(cross_job_rules(tool, path, b.where))
    if tool.permanent:
        per = pol.once_only.per if isinstance(pol.once_only, OnceOnly) else None
        b.add(
            RuleKind.PERMANENT,
            f"{name} has permanent effects: it runs once",
            [name],
            (*path, "permanent"),
            ReasonCode.PERMANENT_EFFECT,
            per=per,
        )
    if pol.max_calls is not None:
        b.add(
            RuleKind.MAX_CALLS,
            f"{name} runs at most {pol.max_calls} times per job",
            [name],
            (*path, "policy", "max_calls"),
            ReasonCode.MAX_CALLS,
            limit=pol.max_calls,
        )
    for key, limit in _package_limits(b.skill, name):
        source = access_location(b.skill, ("toolPolicies", key, "maxCallsPerRun"))
        b.policy.rules.append(
            CompiledRule(
                RuleKind.MAX_CALLS,
                f"{name} runs at most {limit} times per job (maxCallsPerRun)",
                (name,),
                source,
                f"guardrails.toolPolicies.{key}.maxCallsPerRun",
                ReasonCode.MAX_CALLS,
                limit=limit,
            )
        )
    allowed = b.skill.allowed_state_changes
    if allowed is not None:
        for ei, effect in enumerate(tool.effects):
            if effect not in allowed:
                b.add(
                    RuleKind.EFFECT,
                    f"{name} changes '{effect}', which the skill does not allow",
                    [name],
                    (*path, "effects", ei),
                    ReasonCode.EFFECT_NOT_ALLOWED,
                )


def _package_limits(skill: Skill, tool: str) -> list[tuple[str, int]]:
    """``guardrails.json`` ``toolPolicies.<key>.maxCallsPerRun`` of ``tool``; the key may
    be the tool's full name, its local name or its id."""
    if skill.access is None:
        return []
    return [
        (key, override.maxCallsPerRun)
        for key, override in skill.access.toolPolicies.items()
        if override.maxCallsPerRun is not None
        and (found := skill.tool(key)) is not None
        and found.name == tool
    ]


def access_location(skill: Skill, path: FieldPath) -> SourceLocation:
    """Where a field of ``guardrails.json`` was written: at least the right file."""
    found = skill.locate(("access", *path))
    if skill.package is None:
        return found
    name = skill.package.files.guardrails
    if Path(found.file).name == name:
        return found
    return SourceLocation(str(Path(skill.origin) / name) if skill.origin else name)


def _guardrails(b: _Builder) -> None:
    for polarity in ("never", "always"):
        for gi, rule in enumerate(getattr(b.skill.policy.guardrails, polarity)):
            path: FieldPath = ("policy", "guardrails", polarity, gi)
            if isinstance(rule, StructuredRule):
                _structured(b, rule, path)
                continue
            meaning = read_sentence(rule, b.skill, polarity=polarity)
            if meaning is None:
                b.text(rule, polarity, path)
                continue
            if meaning.unread:
                _understood_in_part(b, rule, meaning, path)
                continue
            try:
                cond = compile_condition(meaning.expression) if meaning.expression else None
            except ConditionSyntaxError:  # a field name CEL cannot read: keep the words
                b.text(rule, polarity, path)
                continue
            if meaning.kind == "tool_deny":
                b.add(RuleKind.TOOL_DENY, rule, meaning.tools, path, ReasonCode.TOOL_DENIED)
            elif meaning.kind == "approval":
                b.approval(
                    rule,
                    meaning.tools,
                    path,
                    condition=cond,
                    approver=meaning.approver or b.approver,
                )
            else:
                b.add(
                    RuleKind.THRESHOLD,
                    rule,
                    meaning.tools,
                    path,
                    ReasonCode.GUARDRAIL_BLOCKED,
                    condition=cond,
                )


def _understood_in_part(b: _Builder, rule: str, meaning: SentenceMeaning, path: FieldPath) -> None:
    """A sentence with words the recognizer did not understand: every call of the tools it
    names needs approval (never a total deny, never dropped), and a warning shows the
    structured rule to write instead."""
    approver = meaning.approver or b.approver
    tools = ", ".join(meaning.tools)
    instead = "a conditional approval" if meaning.kind == "approval" else "a block"
    note = (
        f"sentence not fully understood ({meaning.unread!r} is not): every call of {tools} "
        f"needs {approver} approval instead of {instead}"
    )
    b.approval(rule, meaning.tools, path, approver=approver, note=note)
    message = (
        f"only part of this sentence is understood ({meaning.unread!r} is not), so every "
        f"call of {tools} needs {approver} approval, with the sentence as the reason"
    )
    hint = rewrite_hint(rule, meaning, b.skill)
    b.policy.findings.append(
        SkillIssue(
            Severity.WARNING,
            message,
            b.where(path)[0],
            path,
            code="sentence-partly-understood",
            hint=hint,
        )
    )


def _structured(b: _Builder, rule: StructuredRule, path: FieldPath) -> None:
    cond = b.cond((*path, "when")) if rule.when is not None else None
    scope = b.scope(cond, rule.tool)
    if scope is None:
        b.text(rule.rule, str(path[2]), path)
        return
    if rule.action == "block":
        kind = RuleKind.THRESHOLD if cond is not None else RuleKind.TOOL_DENY
        b.add(kind, rule.rule, scope, path, ReasonCode.GUARDRAIL_BLOCKED, condition=cond)
    elif rule.action == "require_approval":
        b.approval(
            rule.rule,
            scope,
            path,
            condition=cond,
            approver=rule.approver or b.approver,
            self_approval=rule.self_approval == "allowed",
        )
    else:
        b.add(
            RuleKind.REQUIRE_INPUT,
            rule.message or rule.rule,
            scope,
            path,
            ReasonCode.MISSING_REQUIRED_INPUT,
            condition=cond,
            fields=tuple(rule.fields),
        )


def _escalation(b: _Builder) -> None:
    esc = b.skill.policy.escalation
    if esc is None or not esc.enabled or not esc.target:
        return
    for ci, c in enumerate(esc.conditions):
        path: FieldPath = ("policy", "escalation", "conditions", ci)
        if isinstance(c, PolicyCondition):
            path = (*path, "when")
        cond = b.cond(path)
        sentence = c.when if isinstance(c, PolicyCondition) else c
        if cond is None and reads_as_prose(sentence):
            # A sentence (the loader warned): the model judges it. A condition that
            # did not compile (a skill not built by the loader) escalates every call.
            b.text(semantic_trigger_text(sentence, esc.target), "escalate", path)
            continue
        scope = b.scope(cond, None)
        text = (
            c.message
            if isinstance(c, PolicyCondition) and c.message
            else (f"escalate to {esc.target} when {c if isinstance(c, str) else c.when}")
        )
        b.add(
            RuleKind.ESCALATION,
            text,
            scope or (),
            path,
            ReasonCode.ESCALATION_REQUIRED,
            condition=cond,
            approver=esc.target,
        )


def _workflows(b: _Builder) -> None:
    """One order rule per step (after the first) of each required workflow; a step bound
    by ``same`` gets one rule per set of its arguments that the earlier tools take
    (``fields``: the arguments an earlier run must share with the call). Each rule
    carries the workflow's intent scope."""
    for wi, wf in enumerate(b.skill.policy.workflows):
        if not wf.required:
            continue
        scope = workflow_scope(b.skill, wf)
        done: list[Tool] = []
        for si, step in enumerate(wf.steps):
            tool = workflow_step_tool(b.skill, step)
            if tool is None or any(t.name == tool.name for t in done):
                continue  # a tool named again later adds no order (it would deadlock)
            keys = wf.keys(step)
            groups: dict[tuple[str, ...], list[str]] = {}
            for earlier in done:
                taken = set(earlier.input_names())
                groups.setdefault(tuple(k for k in keys if k in taken), []).append(earlier.name)
            for same, after in groups.items():
                b.add(
                    RuleKind.WORKFLOW_ORDER,
                    f"{wf.key()}: {tool.name} runs after {', '.join(after)}"
                    + (f" with the same {', '.join(same)}" if same else ""),
                    [tool.name],
                    ("policy", "workflows", wi, "steps", si),
                    ReasonCode.WORKFLOW_ORDER,
                    after=tuple(after),
                    fields=same,
                    intents=scope,
                )
            done.append(tool)
