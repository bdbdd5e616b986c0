"""The model adapter: raw text -> proposal. Formats models really write, near-JSON that
smart repair mends, and outputs that must be refused with a reason (never a crash)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.sim.helpers import END, FLOOD, START, answer

from skillwire.sim import load_experiment
from skillwire.sim.adapter import Proposal, parse_output, repair_json, retry_prompt

EXP = load_experiment(FLOOD)
SPEC = EXP.agent_types["household"]
PLAIN = {"elevated": False}
ELEVATED = {"elevated": True}


def parse(raw: str, state: dict[str, Any] | None = None) -> Proposal | list[str]:
    return parse_output(
        raw, SPEC, state or PLAIN, EXP.response_fields, EXP.delimiters, list(EXP.skills)
    )


def test_a_numeric_decision_goes_through_the_skill_map() -> None:
    found = parse(answer(2, "H", "L"))
    assert isinstance(found, Proposal)
    assert found.skill == "elevate_house" and found.constructs["TP_LABEL"] == "H"
    assert found.constructs["CP_LABEL"] == "L" and not found.repaired


def test_an_elevated_agent_has_its_own_map() -> None:
    found = parse(answer(2), ELEVATED)
    assert isinstance(found, Proposal) and found.skill == "relocate"
    assert parse(answer(4), ELEVATED) == ["the decision 4 is not one of the options 1, 2, 3"]


@pytest.mark.parametrize(
    ("decision", "skill"),
    [
        ("1", "buy_insurance"),
        (" 3 ", "relocate"),
        ("4. Do nothing", "do_nothing"),
        ("[HE]", "elevate_house"),
        ("Buy flood insurance", "buy_insurance"),
        ("MOVE", "relocate"),
        ("do_nothing", "do_nothing"),
        (1.0, "buy_insurance"),
    ],
)
def test_aliases_digits_and_skill_ids(decision: Any, skill: str) -> None:
    found = parse(answer(decision))
    assert isinstance(found, Proposal) and found.skill == skill


@pytest.mark.parametrize("decision", [9, "0", 2.5, True, None, [1], {"a": 1}, "fly away"])
def test_decisions_that_name_no_option_are_refused_with_a_reason(decision: Any) -> None:
    found = parse(answer(decision))
    assert isinstance(found, list) and found and "decision" in found[0]


def test_the_last_delimited_block_counts() -> None:
    raw = f"thinking... {START} not json {END}\nfinal:\n{answer(1)}"
    found = parse(raw)
    assert isinstance(found, Proposal) and found.skill == "buy_insurance"


def test_labels_are_whole_words_in_any_shape() -> None:
    raw = answer(1).replace('{"label": "M", "reason": "t"}', '"H - my house flooded"')
    found = parse(raw)
    assert isinstance(found, Proposal) and found.constructs["TP_LABEL"] == "H"
    raw = answer(1).replace('{"label": "M", "reason": "t"}', '"Medium"')
    assert parse(raw) == ["threat_appraisal needs one of the labels VL, L, M, H, VH"]


@pytest.mark.parametrize(
    "raw",
    [
        START
        + '\n{"reasoning": "x", "threat_appraisal": H, "coping_appraisal": L, "decision": 1}\n'
        + END,
        START
        + "\n{'reasoning': 'x', 'threat_appraisal': 'H', 'coping_appraisal': 'L', 'decision': 1,}\n"
        + END,
        START
        + '\n```json\n{"reasoning": "x", "threat_appraisal": "H", '
        + '"coping_appraisal": "L", "decision": 1\n```\n'
        + END,
        '{reasoning: "x", threat_appraisal: {label: VH, reason: "y"}, '
        "coping_appraisal: M, decision: 1,}",
    ],
)
def test_smart_repair_mends_near_json(raw: str) -> None:
    found = parse(raw)
    assert isinstance(found, Proposal), found
    assert found.skill == "buy_insurance" and found.repaired


def test_repair_keeps_quoted_text_intact() -> None:
    mended = repair_json("{'a': 'it is H, \"really\"', b: H,}", ["H"])
    assert json.loads(mended) == {"a": 'it is H, "really"', "b": "H"}


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("", "empty"),
        ("I would like to buy insurance.", "no JSON object"),
        (START + "\n[1, 2]\n" + END, "JSON object"),
        (START + '\n{"decision": }\n' + END, "not valid JSON"),
        (answer(1).replace('"decision": 1', '"verdict": 1'), "no decision"),
        (answer(1).replace('"reasoning": "test", ', ""), "reasoning is required"),
        (answer(1, magnitude_pct=99), "magnitude_pct must lie between 1 and 30"),
        ("x" * 300_000, "longer than"),
    ],
)
def test_malformed_outputs_are_refused_with_a_reason(raw: str, reason: str) -> None:
    found = parse(raw)
    assert isinstance(found, list) and any(reason in e for e in found), found


def test_retry_prompt_names_the_errors_up_to_the_limit() -> None:
    text = retry_prompt("PROMPT", ["e1", "e2", "e3", "e4"], 3)
    assert text.startswith("PROMPT") and "- e1\n- e2\n- e3\n- and 1 more" in text


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=400) | st.binary(max_size=200).map(lambda b: b.decode("latin-1")))
def test_format_breaker_any_text_parses_or_is_refused(raw: str) -> None:
    found = parse(raw)
    assert isinstance(found, Proposal | list)


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=0, max_value=len(answer(1))))
def test_format_breaker_truncated_answers(cut: int) -> None:
    found = parse(answer(1, "H", "H")[:cut])
    assert isinstance(found, Proposal | list)
    if isinstance(found, Proposal):
        assert found.skill == "buy_insurance"


def test_deeply_nested_json_is_refused_not_a_crash() -> None:
    raw = START + "{" + '"a":[' * 5000 + "]" * 5000 + "}" + END
    assert isinstance(parse(raw), list)
