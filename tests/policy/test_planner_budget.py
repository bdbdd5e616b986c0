"""The planner's guardrail text keeps to spec 000's budget of about 100 tokens (issue 17
item 9); each rule cut is a warning at its line, naming the rule."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from tests.policy.helpers import REFUND_TOOLS, line_of, skill_from
from typer.testing import CliRunner

from skillwire.cli_app import app
from skillwire.core.issues import SkillIssue
from skillwire.core.location import SourceLocation
from skillwire.engine.compiled import CompiledSkill
from skillwire.policy import compile_policy
from skillwire.policy.explain import explain_skill
from skillwire.policy.planner_budget import fit_planner_budget
from skillwire.policy.rules import (
    MAX_TEXT_RULES,
    PLANNER_TOKEN_BUDGET,
    TextRule,
    estimate_tokens,
    planner_block,
)
from skillwire.skills import load_skill

LONG = [
    "Never reveal internal pricing tiers, discount codes or partner margins to any customer",
    "Never speculate about delivery dates that the carrier has not confirmed in writing",
    "Never promise compensation beyond what the published goodwill policy allows",
    "Never discuss other customers' orders, even when the caller claims to know them",
    "Never argue with a customer about the tone of a previous agent's reply",
]
"""Five text rules of about 20 tokens each: together past the budget."""


def _guardrails(never: list[str], always: Sequence[str] = ()) -> str:
    lines = ["policy:", "  guardrails:", "    never:"]
    lines += [f'      - "{r}"' for r in never] or ["      []"]
    if always:
        lines += ["    always:"] + [f'      - "{r}"' for r in always]
    return "\n".join(lines) + "\n"


def _warnings(findings: list[SkillIssue]) -> list[SkillIssue]:
    return [f for f in findings if f.code == "planner-budget"]


def test_rules_past_the_budget_are_cut_with_a_warning_each(tmp_path: Path) -> None:
    skill = skill_from(tmp_path, REFUND_TOOLS, _guardrails(LONG))
    policy = compile_policy(skill)
    assert policy.planner_tokens <= PLANNER_TOKEN_BUDGET
    kept = [r.text for r in policy.text_rules if r.to_planner]
    cut = [r for r in policy.text_rules if not r.to_planner]
    assert kept == LONG[: len(kept)] and cut  # in the order written
    assert all(r.text not in policy.planner_text for r in cut)
    warnings = _warnings(policy.findings)
    assert len(warnings) == len(cut)
    path = tmp_path / "domain.yaml"
    for rule, warning in zip(cut, warnings, strict=True):
        assert warning.severity == "warning"
        assert warning.location.line == line_of(path, rule.text[:40])
        assert rule.text[:40] in warning.message  # names the rule
        assert "about 100 tokens" in warning.message
        assert "finalization gate" in warning.message and "No mechanical" in warning.message


def test_a_rule_too_long_is_cut_and_shorter_ones_after_it_still_fit(tmp_path: Path) -> None:
    huge = "Never " + " ".join(["be unkind to anyone at any time"] * 20)
    skill = skill_from(tmp_path, REFUND_TOOLS, _guardrails([huge, "Never be rude"]))
    policy = compile_policy(skill)
    assert policy.planner_text == "SKILL GUARDRAILS:\n- Never be rude"
    (warning,) = _warnings(policy.findings)
    assert warning.path == ("policy", "guardrails", "never", 0)


def test_never_rules_come_before_always_rules(tmp_path: Path) -> None:
    always = ["Always thank the customer for their patience at the end of every reply"]
    skill = skill_from(tmp_path, REFUND_TOOLS, _guardrails(LONG[:4], always))
    policy = compile_policy(skill)
    assert [r.polarity for r in policy.text_rules if not r.to_planner][-1] == "always"
    assert "thank the customer" not in policy.planner_text


def test_mechanical_rules_are_not_spent_from_the_budget(tmp_path: Path) -> None:
    # Enforced by the gate whether or not the model knows them: not in the planner text.
    mechanical = [
        "Never use process_refund",
        "Never refund amount > 1000",
        "Never process refunds over $500 without supervisor approval",
    ] * 4
    text = ["Never share customer payment information", "Never be dismissive"]
    policy = compile_policy(skill_from(tmp_path, REFUND_TOOLS, _guardrails(mechanical + text)))
    assert policy.planner_text.splitlines() == [
        "SKILL GUARDRAILS:",
        "- Never share customer payment information",
        "- Never be dismissive",
    ]
    assert _warnings(policy.findings) == []


def test_the_rule_cap_is_a_warning_too(tmp_path: Path) -> None:
    rules = [f"Be kind {i}" for i in range(12)]
    policy = compile_policy(skill_from(tmp_path, REFUND_TOOLS, _guardrails(rules)))
    assert sum(r.to_planner for r in policy.text_rules) == MAX_TEXT_RULES
    warnings = _warnings(policy.findings)
    assert [w.path[-1] for w in warnings] == [10, 11]
    assert f"at most {MAX_TEXT_RULES} text rules" in warnings[0].message


def test_the_refund_example_fits_with_no_warning(refund_yaml: Path) -> None:
    policy = compile_policy(load_skill(refund_yaml))
    assert all(r.to_planner for r in policy.text_rules)
    assert _warnings(policy.findings) == []


@pytest.mark.parametrize("budget", [0, 5, 20, 60, 100, 400])
def test_the_block_never_passes_the_budget(budget: int) -> None:
    rules = [
        TextRule(text, "never", SourceLocation("f", i + 1, 1), f"r{i}", False)
        for i, text in enumerate(LONG * 3)
    ]
    fitted, warnings = fit_planner_budget(rules, budget=budget)
    kept = [r.text for r in fitted if r.to_planner]
    assert estimate_tokens(planner_block(kept)) <= budget or not kept
    assert len(warnings) == len(rules) - len(kept)
    assert [r.text for r in fitted] == [r.text for r in rules]  # nothing dropped


def test_the_planner_prompt_holds_only_the_rules_kept(tmp_path: Path) -> None:
    skill = skill_from(tmp_path, REFUND_TOOLS, _guardrails(LONG))
    compiled = CompiledSkill.build(skill)
    policy = compiled.gate.policy
    assert policy.planner_text in compiled.planner_system
    for rule in policy.text_rules:
        assert (rule.text in compiled.planner_system) is rule.to_planner


def test_explain_says_why_a_rule_was_cut(tmp_path: Path) -> None:
    entry = explain_skill(skill_from(tmp_path, REFUND_TOOLS, _guardrails(LONG)))
    cut = [r for r in entry["rules"] if r["kind"].startswith("text (finalization gate only")]
    assert cut and "about 100 tokens" in cut[0]["kind"]
    assert entry["text_rules_cut"] == len(cut)
    assert entry["text_token_budget"] == PLANNER_TOKEN_BUDGET


def test_skillwire_check_warns_naming_each_rule_cut(tmp_path: Path) -> None:
    skill_from(tmp_path, REFUND_TOOLS, _guardrails(LONG))
    path = tmp_path / "domain.yaml"
    result = CliRunner().invoke(app, ["check", str(path)])
    assert result.exit_code == 0, result.output
    cut = [r.text for r in compile_policy(load_skill(path)).text_rules if not r.to_planner]
    output = " ".join(result.stdout.split())
    for text in cut:
        assert f"domain.yaml:{line_of(path, text[:40])}:" in output
        assert text[:40] in output
    strict = CliRunner().invoke(app, ["check", "--strict", str(path)])
    assert strict.exit_code == 1  # --strict makes the warnings count
