"""The compiled form of a skill's rules: what the gate enforces and the planner reads.

:mod:`skillwire.policy.compiler` builds a :class:`CompiledPolicy` from a skill; the
validators, the gate, ``skillwire check --explain`` and the engine's prompts read it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum

from skillwire.core.conditions import Condition
from skillwire.core.issues import SkillIssue
from skillwire.core.location import FieldPath, SourceLocation
from skillwire.policy.decisions import ReasonCode

__all__ = [
    "MAX_TEXT_RULES",
    "PLANNER_TOKEN_BUDGET",
    "CompiledPolicy",
    "CompiledRule",
    "RuleKind",
    "TextRule",
    "estimate_tokens",
    "planner_block",
]

MAX_TEXT_RULES = 10
"""At most this many text rules are given to the planner (spec 000 section 4.2)."""

PLANNER_TOKEN_BUDGET = 100
"""At most about this many tokens of guardrail text are given to the planner (spec 000
sections 1 and 4.2: "inject only ~100 tokens for guardrails"), as :func:`estimate_tokens`
counts the whole ``SKILL GUARDRAILS`` block."""


class RuleKind(StrEnum):
    """How a rule is enforced."""

    TOOL_DENY = "tool_deny"
    THRESHOLD = "threshold"
    APPROVAL = "approval"
    ESCALATION = "escalation"
    REQUIRE_INPUT = "require_input"
    ALLOW_EXCEPTION = "allow_exception"
    PRECONDITION = "precondition"
    WORKFLOW_ORDER = "workflow_order"
    ONCE_ONLY = "once_only"
    PERMANENT = "permanent"
    MAX_CALLS = "max_calls"
    EFFECT = "effect"
    ONCE_PER = "once_per"
    """At most once per value of an expression across every job of the skill."""
    RATE_LIMIT = "rate_limit"
    """At most ``limit`` runs per ``window`` seconds across jobs, per user or in all."""


@dataclass(frozen=True, slots=True)
class CompiledRule:
    """One mechanically enforced rule."""

    kind: RuleKind
    text: str
    tools: tuple[str, ...]
    source: SourceLocation
    origin: str
    code: ReasonCode
    condition: Condition | None = None
    approver: str | None = None
    fields: tuple[str, ...] = ()
    per: str | None = None
    limit: int | None = None
    after: tuple[str, ...] = ()
    waivable: bool = False
    """An ``allow`` condition of the same tool that holds waives this rule."""
    note: str = ""
    """Why the rule is enforced other than it reads (a sentence understood in part)."""
    self_approval: bool = False
    """An approval the job's owner may give on their own call (``self_approval:
    allowed``); otherwise it must come from someone else."""
    intents: frozenset[str] | None = None
    """The intents whose jobs the rule applies to (a scoped workflow's order); None:
    every intent."""
    shows_origin: bool = False
    """An approval whose reason names the untrusted arguments and where each was found
    (the base policy's ``untrusted_writes``)."""
    window: int | None = None
    """A ``rate_limit``'s window in seconds (its ``per`` is the scope, ``user`` or
    ``skill``; a ``once_per`` rule's ``per`` is its key expression)."""

    def applies_to(self, tool: str) -> bool:
        """Whether the rule's scope includes ``tool`` (empty scope: every tool)."""
        return not self.tools or tool in self.tools


@dataclass(frozen=True, slots=True)
class TextRule:
    """A rule kept as text: given to the planner (and to the finalization gate)."""

    text: str
    polarity: str
    source: SourceLocation
    origin: str
    to_planner: bool
    path: FieldPath = ()
    """Where the rule is in the skill (for the load report)."""
    cut: str = ""
    """Why the rule is not given to the planner (empty when it is)."""


@dataclass
class CompiledPolicy:
    """Everything the gate enforces for one skill, indexed by tool."""

    skill_id: str
    rules: list[CompiledRule] = field(default_factory=list)
    text_rules: list[TextRule] = field(default_factory=list)
    by_tool: dict[str, tuple[CompiledRule, ...]] = field(default_factory=dict)
    findings: list[SkillIssue] = field(default_factory=list)
    """Warnings for the load report: rules enforced other than they read."""

    @property
    def planner_text(self) -> str:
        """The guardrail block injected into the planner's prompt."""
        return planner_block(r.text for r in self.text_rules if r.to_planner)

    @property
    def planner_tokens(self) -> int:
        """Estimated tokens of :attr:`planner_text`."""
        return estimate_tokens(self.planner_text)

    def for_tool(self, tool: str) -> tuple[CompiledRule, ...]:
        """The rules that apply to ``tool``, in declaration order."""
        found = self.by_tool.get(tool)
        if found is None:
            found = tuple(r for r in self.rules if r.applies_to(tool))
        return found


def planner_block(rules: Iterable[str]) -> str:
    """The ``SKILL GUARDRAILS`` block of these rules, one a line (empty with none)."""
    lines = [f"- {text}" for text in rules]
    return "SKILL GUARDRAILS:\n" + "\n".join(lines) if lines else ""


def estimate_tokens(text: str) -> int:
    """A tokenizer-free estimate (about 4 characters a token, at least one per word)."""
    if not text:
        return 0
    return max(len(text.split()), round(len(text) / 4))
