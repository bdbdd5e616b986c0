"""The planner's request as the engine builds it, from what its compiled skill keeps
(each intent's tools and workflow, the names models see), is the request built from the
skill alone: keeping them changes nothing a model or a backend reads."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.engine.helpers import REFUND_DIR, skill_from
from tests.engine.test_intent_scope import SKILL as IT_DESK

from skillwire.core.chat import ChatMessage, ToolCall
from skillwire.engine.compiled import CompiledSkill
from skillwire.engine.prompts import planner_intents, planner_request
from skillwire.engine.state import HistoryEntry
from skillwire.skills import Skill, load_skill


def _skills(tmp_path: Path) -> list[Skill]:
    dotted = IT_DESK.replace("verify_identity", "hr.verify_identity")  # a model sees hr__
    return [
        load_skill(REFUND_DIR / "domain.yaml"),
        skill_from(tmp_path / "it", IT_DESK),
        skill_from(tmp_path / "dotted", dotted),
    ]


def _states(compiled: CompiledSkill) -> list[dict[str, Any]]:
    ids = [i.id for i in compiled.skill.intents.supported]
    history = [HistoryEntry("verify_identity", {"order_id": "A-1"}, {"ok": True}).seen()]
    names = {"model_tool_names": compiled.model_tool_names}  # as the engine's state has it
    base = {"entities": {"order_id": "A-1"}, "inputs": {}, "results": history, **names}
    states = [{**base, "intent": i, "intents": [i]} for i in ids]
    states += [
        {**base, "intent": None, "intents": []},
        {**base, "intent": "no_such_intent", "intents": ["no_such_intent"]},
        {**base, "intent": 7, "intents": []},  # not text: no intent, as before
        {"intent": ids[0], "intents": ids, "inputs": {"reason": "x"}, **names},
    ]
    return states


@pytest.mark.parametrize("which", [0, 1, 2])
def test_the_compiled_skill_request_is_the_skill_alone_request(tmp_path: Path, which: int) -> None:
    compiled = CompiledSkill.build(_skills(tmp_path)[which])
    conversation = [
        ChatMessage("user", "Please refund 750 for order A-1"),
        ChatMessage("assistant", "", (ToolCall("verify_identity", {"order_id": "A-1"}, "", "c1"),)),
        ChatMessage("tool", '{"ok":true}', tool_call_id="c1"),
    ]
    for state in _states(compiled):
        for done in ((), {"verify_identity", "hr.verify_identity"}):
            goals = compiled.goals_for(state.get("intents") or [], done)
            args = (
                compiled.skill,
                compiled.planner_system,
                goals,
                state,
                conversation,
                compiled.tools,
                0.2,
            )
            kept = planner_request(
                *args, intents=compiled.planner_intents, model_names=compiled.model_names
            )
            assert kept == planner_request(*args), state


def test_each_intent_is_described_once_by_its_first_declaration(tmp_path: Path) -> None:
    skill = _skills(tmp_path)[1]
    table = planner_intents(skill)
    assert list(table) == [i.id for i in skill.intents.supported]
    assert table["admin_access"].workflow == "admin_access_flow"
    assert table["password_reset"].workflow == "password_flow"
    assert table["password_reset"].description == "Reset a forgotten password"


def test_a_run_is_shown_to_the_planner_without_its_state_changes() -> None:
    entry = HistoryEntry("refund", {"amount": 5}, {"id": "R1"}, False, "boom", {"paid": 5})
    assert entry.seen() == {
        "tool": "refund",
        "args": {"amount": 5},
        "ok": False,
        "result": {"id": "R1"},
        "error": "boom",
    }
    assert entry.seen() is entry.seen()  # built once


def test_a_dotted_tool_is_named_as_models_see_it_in_the_steps(tmp_path: Path) -> None:
    compiled = CompiledSkill.build(_skills(tmp_path)[2])
    state = {"intent": "password_reset", "intents": ["password_reset"]}
    request = planner_request(
        compiled.skill,
        compiled.planner_system,
        compiled.goals_for(["password_reset"], {"hr.verify_identity"}),
        state,
        [],
        compiled.tools,
        None,
        intents=compiled.planner_intents,
        model_names=compiled.model_names,
    )
    line = request.messages[1].content
    assert "steps in order: hr__verify_identity (done), reset_password" in line
