"""Attacks on the validator chain: every declared rule holds whatever the model says."""

from __future__ import annotations

from pathlib import Path

from tests.sim.helpers import FLOOD, FunctionProposer, answer, cycle, edit, results_of, simulate

from skillwire.sim import load_experiment
from skillwire.sim.governance import AgentHistory, Governance

EXP = load_experiment(FLOOD)


def test_a_skill_the_agent_type_may_not_use_is_rejected(flood_copy: Path) -> None:
    edit(
        flood_copy / "skill_registry.yaml",
        'eligible_agent_types: ["*"]\n    preconditions:\n      - "not relocated"',
        'eligible_agent_types: ["landlord"]\n    preconditions:\n      - "not relocated"',
    )
    records, sim = simulate(
        flood_copy, FunctionProposer(cycle([answer("relocate", "VH")])), agents=1, steps=1
    )
    first = records[0]
    assert first["outcome"] == "rejected" and first["executed_skill"] is None
    assert ("admissibility", "eligible_agent_types") in results_of(first, ok=False)
    assert records[-1]["outcome"] == "fallback" and records[-1]["executed_skill"] == "do_nothing"
    assert sim.agents[0].state["relocated"] is False


def test_an_unknown_skill_is_rejected_by_admissibility() -> None:
    gov = Governance(EXP, "strict")
    pre, post = gov.check("household", "fly", {"elevated": False}, {}, AgentHistory(), 1)
    assert [(r.validator, r.rule, r.ok) for r in pre] == [("admissibility", "skill_exists", False)]
    assert post == []


def test_a_relocated_agent_proposing_again_is_rejected() -> None:
    gov = Governance(EXP, "disabled")
    state = dict(EXP.agents[0].state, relocated=True)
    history = AgentHistory(((2, "relocate"),))
    pre, _ = gov.check("household", "buy_insurance", state, {}, history, 3)
    failed = {(r.validator, r.rule) for r in pre if not r.ok}
    assert ("institutional", "permanent") in failed
    pre, _ = gov.check("household", "relocate", state, {}, history, 3)
    failed = {(r.validator, r.rule) for r in pre if not r.ok}
    assert {
        ("institutional", "permanent"),
        ("institutional", "once_only"),
        ("feasibility", "not relocated"),
    } <= failed
    assert gov.inactive(state, history)


def test_a_relocated_agent_is_never_asked_again() -> None:
    proposer = FunctionProposer(cycle([answer(3, "VH")]))
    records, sim = simulate(EXP, proposer, agents=2, steps=4)
    assert {(r["step"], r["agent"]) for r in records} == {(1, "Agent_1"), (1, "Agent_2")}
    assert all(r["executed_skill"] == "relocate" for r in records)
    assert len(proposer.requests) == 2
    assert all(a.state["relocated"] for a in sim.agents)


def test_once_only_holds_across_steps(flood_copy: Path) -> None:
    # no precondition and no rules: only once_only stands between an agent and a
    # second elevation
    edit(
        flood_copy / "skill_registry.yaml",
        '    preconditions:\n      - "not elevated"\n',
        "    preconditions: []\n",
    )
    proposer = FunctionProposer(cycle([answer("elevate_house", "VH")]))
    records, _ = simulate(flood_copy, proposer, profile="disabled", agents=1, steps=3)
    executed = [r["executed_skill"] for r in records if r["executed_skill"]]
    assert executed.count("elevate_house") == 1
    second = next(r for r in records if r["step"] == 2)
    assert ("institutional", "once_only") in results_of(second, ok=False)
    assert "step 1" in next(r["message"] for r in second["results"] if r["rule"] == "once_only")
    assert [r["outcome"] for r in records if r["step"] == 2] == ["rejected"] * 4 + ["fallback"]


def test_annual_means_once_per_step() -> None:
    gov = Governance(EXP, "disabled")
    history = AgentHistory(((3, "buy_insurance"),))
    pre, _ = gov.check("household", "buy_insurance", {"elevated": False}, {}, history, 3)
    assert ("institutional", "annual") in {(r.validator, r.rule) for r in pre if not r.ok}
    pre, _ = gov.check("household", "buy_insurance", {"elevated": False}, {}, history, 4)
    assert all(r.ok for r in pre)


def test_a_hook_changing_state_outside_allowed_state_changes_is_rolled_back(
    flood_copy: Path,
) -> None:
    edit(
        flood_copy / "world.py",
        '    state["has_insurance"] = True\n',
        '    state["has_insurance"] = True\n    state["trust_in_insurance"] = 1.0\n'
        '    state["bribe"] = 1\n',
    )
    records, sim = simulate(
        flood_copy, FunctionProposer(cycle([answer(1, "H")])), agents=1, steps=1
    )
    attempts = [r for r in records if r["outcome"] == "rejected"]
    assert len(attempts) == 4  # the first try and three retries
    first = attempts[0]
    failed = [r for r in first["results"] if not r["ok"]]
    assert [(r["validator"], r["rule"]) for r in failed] == [
        ("effect_safety", "allowed_state_changes")
    ]
    assert (
        "bribe, trust_in_insurance" in failed[0]["message"]
        and "rolled back" in failed[0]["message"]
    )
    assert first["executed_skill"] is None and first["state_after"] == first["state_before"]
    assert "bribe" not in sim.agents[0].state
    assert records[-1]["outcome"] == "fallback" and records[-1]["executed_skill"] == "do_nothing"
    before = records[0]["state_before"]
    assert sim.agents[0].state["trust_in_insurance"] != 1.0 and before["trust_in_insurance"] == 0.34


def test_a_hook_that_raises_is_audited_and_nothing_changes(flood_copy: Path) -> None:
    edit(
        flood_copy / "world.py",
        '    state["elevated"] = True\n',
        '    state["elevated"] = True\n    raise RuntimeError("crane broke")\n',
    )
    records, sim = simulate(
        flood_copy,
        FunctionProposer(cycle([answer(2, "VH")])),
        profile="disabled",
        agents=1,
        steps=1,
    )
    assert "crane broke" in records[0]["results"][-1]["message"]
    assert sim.agents[0].state["elevated"] is False


def test_a_warning_rule_never_reaches_the_retry_prompt() -> None:
    # strict: low coping (WARNING) and low threat with elevation (ERROR) at once
    proposer = FunctionProposer(cycle([answer(2, "L", "VL"), answer(1, "L", "VL")]))
    records, _ = simulate(EXP, proposer, agents=1, steps=1)
    first, second = records[0], records[1]
    levels = {r["rule"]: (r["level"], r["ok"]) for r in first["results"]}
    assert levels["low_coping_block"] == ("WARNING", False)
    assert levels["elevation_threat_low"] == ("ERROR", False)
    retry = proposer.requests[1].prompt
    assert "Elevation blocked: Your threat appraisal (L) is too low" in retry
    assert "Low coping appraisal" not in retry and "low_coping_block" not in retry
    assert second["outcome"] == "approved" and second["executed_skill"] == "buy_insurance"


def test_a_warning_alone_does_not_reject() -> None:
    records, _ = simulate(EXP, FunctionProposer(cycle([answer(3, "H", "L")])), agents=1, steps=1)
    assert records[0]["outcome"] == "approved" and records[0]["executed_skill"] == "relocate"
    assert ("consistency", "low_coping_block") in results_of(records[0], ok=False)


def test_identity_rule_and_precondition_stop_a_second_elevation_by_name() -> None:
    elevated = next(a for a in EXP.agents if a.state["elevated"])
    gov = Governance(EXP, "strict")
    pre, post = gov.check(
        "household",
        "elevate_house",
        elevated.state,
        {"TP_LABEL": "VH", "CP_LABEL": "H"},
        AgentHistory(),
        1,
    )
    failed = {(r.validator, r.rule) for r in (*pre, *post) if not r.ok}
    assert failed == {("feasibility", "not elevated"), ("consistency", "elevation_block")}


def test_relaxed_turns_errors_into_recorded_warnings() -> None:
    records, _ = simulate(
        EXP, FunctionProposer(cycle([answer(4, "H")])), profile="relaxed", agents=1, steps=1
    )
    assert records[0]["outcome"] == "approved"
    assert ("consistency", "relaxed.thinking_rules[0]") in results_of(records[0], ok=False)


def test_malformed_outputs_retry_with_the_reason_then_fall_back() -> None:
    proposer = FunctionProposer(cycle(["", "garbage", START_ONLY, '{"decision": 1']))
    records, _ = simulate(EXP, proposer, agents=1, steps=1)
    assert [r["outcome"] for r in records] == ["rejected"] * 4 + ["fallback"]
    assert all(r["results"][0]["validator"] == "format" for r in records[:4])
    assert "the answer is empty" in proposer.requests[1].prompt
    assert records[-1]["raw_output"] is None and records[-1]["proposal"] == {
        "skill": "do_nothing",
        "fallback": True,
    }
    assert records[-1]["attempt"] == 5


START_ONLY = "<<<DECISION_START>>> {'decision': "


def test_conditions_may_read_the_agent_type(flood_copy: Path) -> None:
    edit(
        flood_copy / "skill_registry.yaml",
        '- "not relocated"',
        "- \"not relocated and agent_type == 'tenant'\"",
    )
    exp = load_experiment(flood_copy)
    pre, _ = Governance(exp, "disabled").check(
        "household", "relocate", exp.agents[0].state, {}, AgentHistory(), 1
    )
    failed = [r for r in pre if not r.ok]
    assert [(r.validator, r.rule) for r in failed] == [
        ("feasibility", "not relocated and agent_type == 'tenant'")
    ]


def test_a_condition_over_a_list_column_is_a_load_error(flood_copy: Path) -> None:
    from skillwire.sim import read_experiment

    edit(flood_copy / "skill_registry.yaml", '- "not relocated"', '- "size(memory) > 2"')
    issues = [str(i) for i in read_experiment(flood_copy).issues]
    assert any("memory" in i and "skill_registry.yaml" in i and "error" in i for i in issues), (
        issues
    )
