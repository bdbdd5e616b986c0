"""``skillwire check --explain``: every rule, its treatment, scope and source line."""

from __future__ import annotations

import json
from pathlib import Path

from tests.policy.helpers import REFUND_TOOLS, skill_from

from skillwire.policy.explain import explain_skill
from skillwire.skills import load_skill


def test_explain_lists_every_rule_of_the_refund_example(refund_yaml: Path) -> None:
    entry = explain_skill(load_skill(refund_yaml))
    json.dumps(entry)
    lines = refund_yaml.read_text().splitlines()
    assert entry["skill"] == "refund-support"
    by_text = {r["text"]: r for r in entry["rules"]}
    assert len(by_text) == len(entry["rules"]) - 1  # two rules read the same words
    for rule in entry["rules"]:
        file, line, _column = rule["source"].rsplit(":", 2)
        assert file.endswith("domain.yaml")
        assert 1 <= int(line) <= len(lines)
    sentence = by_text["Never process refunds over $500 without supervisor approval"]
    assert sentence["kind"] == "approval"
    assert sentence["tools"] == ["process_refund"]
    assert sentence["expression"] == "amount > 500"
    assert sentence["approver"] == "supervisor"
    line = int(sentence["source"].rsplit(":", 2)[1])
    assert "Never process refunds over $500" in lines[line - 1]
    order = by_text[
        "Refund Processing: process_refund runs after verify_identity, check_eligibility"
        " with the same order_id"
    ]
    assert order["kind"] == "workflow_order"
    assert order["same"] == ["order_id"]
    assert order["code"] == "WORKFLOW_ORDER"
    once = by_text["process_refund runs once per args.order_id across all jobs of the skill"]
    assert (once["kind"], once["expression"], once["code"]) == (
        "once_per",
        "args.order_id",
        "ONCE_PER",
    )
    assert "once_per: args.order_id" in lines[int(once["source"].rsplit(":", 2)[1]) - 1]
    kinds = sorted({r["kind"] for r in entry["rules"]})
    assert kinds == [
        "approval",
        "once_only",
        "once_per",
        "text (planner)",
        "threshold",
        "tool_deny",
        "workflow_order",
    ]
    assert entry["text_rules"] == 4
    assert entry["planner_text"].startswith("SKILL GUARDRAILS:\n- Never share")
    assert entry["text_tokens"] > 0


def test_explain_shows_scope_and_rules_left_to_the_finalization_gate(tmp_path: Path) -> None:
    never = "\n".join(f"      - Never forget courtesy rule {i}" for i in range(11))
    skill = skill_from(
        tmp_path,
        REFUND_TOOLS,
        f"""policy:
  guardrails:
    never:
{never}
      - {{rule: "Pause on weekends", when: "context.weekend", action: require_approval}}
""",
    )
    entry = explain_skill(skill)
    by_text = {r["text"]: r for r in entry["rules"]}
    assert by_text["Pause on weekends"]["tools"] == ["(every tool)"]
    last = by_text["Never forget courtesy rule 10"]
    assert last["kind"].startswith("text (finalization gate only")
    assert entry["text_rules"] == 10


def test_explain_shows_the_merged_access_of_a_package(refund_pkg: Path) -> None:
    entry = explain_skill(load_skill(refund_pkg))
    assert entry["access"]["shell_denied"] == ["rm", "curl"]
    assert entry["access"]["shell_allowed"] == []
    limits = [r for r in entry["rules"] if r["kind"] == "max_calls"]
    assert limits[0]["tools"] == ["refund-support-pkg.process_refund"]
    assert limits[0]["source"].split(":")[0].endswith("guardrails.json")
    assert limits[0]["origin"] == (
        "guardrails.toolPolicies.refund-support-pkg.process_refund.maxCallsPerRun"
    )
