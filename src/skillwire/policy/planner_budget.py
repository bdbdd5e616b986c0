"""Which text rules the planner gets: at most ``MAX_TEXT_RULES`` rules and about
``PLANNER_TOKEN_BUDGET`` tokens (spec 000 sections 1 and 4.2).

The planner runs on every step of a job, so its guardrail text is kept small. Only
rules with no mechanical meaning are candidates: a rule the pre-tool gate enforces is
enforced whether the model knows it or not, so it is not spent from the budget (spec
000 section 4.1). Before the reply, the planner is the only enforcement of a text rule;
the finalization gate judges the draft reply against every guardrail afterwards.

Order: the rules as the author wrote them, ``never`` before ``always`` (each list in its
order): the author puts first what the model must not miss. Each rule is added while
the block stays within the budget; a rule that would pass it is cut, and the shorter
rules after it are still tried. Each rule cut is a warning at its line, naming the rule.

Tokens are estimated without a tokenizer (:func:`~skillwire.policy.rules.estimate_tokens`:
about four characters a token, at least one a word), over the whole block as the
planner gets it, ``SKILL GUARDRAILS:`` header included.
"""

from __future__ import annotations

from dataclasses import replace

from skillwire.core.issues import Severity, SkillIssue
from skillwire.policy.rules import (
    MAX_TEXT_RULES,
    PLANNER_TOKEN_BUDGET,
    TextRule,
    estimate_tokens,
    planner_block,
)

__all__ = ["fit_planner_budget"]

_QUOTED = 60
"""Characters of a cut rule quoted in its warning."""


def fit_planner_budget(
    rules: list[TextRule],
    *,
    budget: int = PLANNER_TOKEN_BUDGET,
    max_rules: int = MAX_TEXT_RULES,
) -> tuple[list[TextRule], list[SkillIssue]]:
    """``rules`` (in the compiler's order: ``never`` then ``always``, each as written),
    each marked given to the planner or cut with the reason, and a warning per rule cut."""
    kept: list[str] = []
    out: list[TextRule] = []
    for rule in rules:
        if len(kept) >= max_rules:
            why = f"the planner gets at most {max_rules} text rules"
        elif estimate_tokens(planner_block([*kept, rule.text])) > budget:
            why = (
                f"the planner's guardrail text is limited to about {budget} tokens "
                f"(estimated at 4 characters a token) and the rules kept before it use "
                f"{estimate_tokens(planner_block(kept))}"
            )
        else:
            kept.append(rule.text)
            out.append(replace(rule, to_planner=True, cut=""))
            continue
        out.append(replace(rule, to_planner=False, cut=why))
    return out, [_warning(rule) for rule in out if not rule.to_planner]


def _warning(rule: TextRule) -> SkillIssue:
    text = rule.text if len(rule.text) <= _QUOTED else rule.text[: _QUOTED - 3] + "..."
    return SkillIssue(
        Severity.WARNING,
        f"the guardrail {text!r} is not given to the planner: {rule.cut}. No mechanical "
        "check enforces it (it has no mechanical meaning); only the finalization gate "
        "judges the draft reply against it",
        rule.source,
        rule.path,
        code="planner-budget",
        hint="shorten the rules the planner gets, move this one up its list, or write it "
        "as a structured rule the pre-tool gate enforces",
    )
