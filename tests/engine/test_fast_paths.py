"""The engine's fast paths agree with the slow ones they replace: what the compiled
skill keeps so that a job does not build it again (entity checks, the finalization
gate's instructions), the cheaper readings of a job's text (claims, added and dropped
values) and state (phases, messages, grants), and the null span while tracing is off."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.engine.helpers import REFUND_DIR, ROOT

from skillwire.core import tracing
from skillwire.core.chat import ChatMessage, ToolCall
from skillwire.engine import evidence, finalization, state
from skillwire.engine.compiled import CompiledSkill
from skillwire.engine.intent import entity_checks
from skillwire.engine.intent_stage import valid_entities
from skillwire.engine.prompts import gate_request
from skillwire.engine.state import PauseKind, Phase
from skillwire.policy.call import ApprovalGrant
from skillwire.skills import load_skill
from skillwire.skills.model_fields import Entity, Intent

ENTITIES = [
    Entity(name="amount", type="money"),
    Entity(name="day", type="date"),
    Entity.model_validate({"name": "codes", "type": "list", "pattern": "^ORD-[0-9]{5}$"}),
    Entity.model_validate({"name": "order_id", "type": "string", "pattern": "^ORD-[0-9]+$"}),
    Entity.model_validate({"name": "n", "type": "integer", "minimum": 1, "maximum": 9}),
]
REFUND = load_skill(REFUND_DIR / "domain.yaml")
INTENTS = [Intent(id="pay", entities=ENTITIES[:3]), Intent(id="look", entities=ENTITIES[2:])]
VALUES: list[Any] = [
    750,
    -5,
    1.005,
    True,
    None,
    "",
    "750",
    "ORD-12345",
    "ORD-1",
    "2026-03-14",
    "2026-02-30",
    ["ORD-12345"],
    ["ORD-1"],
    {"amount": 5},
    0,
    10,
    3,
]


@pytest.mark.parametrize("value", VALUES)
def test_entity_checks_agree_with_checks_built_per_value(value: Any) -> None:
    checks = entity_checks(INTENTS)
    assert len(checks) == 5  # both intents declare the one `codes` object
    for intents in (INTENTS, INTENTS[:1], INTENTS[1:], INTENTS[::-1]):
        raw = {e.name: value for e in ENTITIES}
        assert valid_entities(intents, raw, checks) == valid_entities(intents, raw)


def test_a_check_of_another_entity_object_is_never_used() -> None:
    """A check is used only for the very entity it was built for: another entity (of
    another skill, say) with the same ``id()`` key in the map gets its own check."""
    strict = Entity.model_validate({"name": "order_id", "type": "string", "pattern": "^X$"})
    lax = Entity(name="order_id", type="string")
    forged = {id(lax): (strict, entity_checks([Intent(id="a", entities=[strict])])[id(strict)][1])}
    intent = Intent(id="b", entities=[lax])
    assert valid_entities([intent], {"order_id": "ORD-1"}, forged) == ({"order_id": "ORD-1"}, [])


def test_the_compiled_skill_checks_the_entities_of_its_intents() -> None:
    skill = load_skill(REFUND_DIR / "domain.yaml")
    compiled = CompiledSkill.build(skill)
    declared = [e for i in skill.intents.supported for e in i.entities]
    assert declared, "the refund example declares entities"
    assert {id(e) for e in declared} == set(compiled.entity_checks)
    assert all(compiled.entity_checks[id(e)][0] is e for e in declared)


EXAMPLES = [
    ROOT / "examples" / name
    for name in ("refund_support", "refund_support_pkg", "booking", "household", "inbox_assistant")
]
DRAFTS = ["", "Refund done.", 'line one\nREPLY:\nline {two} "quoted" ✓', "RULES:\n- none"]


@pytest.mark.parametrize("folder", EXAMPLES, ids=lambda p: p.name)
def test_the_gate_request_from_the_kept_head_is_the_one_built_from_the_policy(
    folder: Path,
) -> None:
    skill = load_skill(folder)
    compiled = CompiledSkill.build(skill)
    for draft in DRAFTS:
        kept = gate_request(skill, draft, head=compiled.gate_head)
        built = gate_request(skill, draft, compiled.gate.policy)
        assert kept == built
        assert gate_request(skill, draft) == built  # the policy compiled there
        assert kept.messages[0].content.endswith(f"\nREPLY:\n{draft}")


def _claims_word_by_word(run: Any, texts: list[str]) -> list[tuple[str, str]]:
    """:func:`unsupported_claims` as it was written before its fast paths: each word
    found, then lowered, then looked up."""
    done = {h.tool for h in run.state.history if h.ok}
    forms: dict[str, str] = {}
    for tool in run.skill.tools:
        if tool.idempotent or tool.name in done:
            continue
        for form in evidence._claim_forms(tool.name):
            forms.setdefault(form, tool.name)
    found: list[tuple[str, str]] = []
    for text in texts:
        words = [w.lower() for w in evidence._WORD.findall(text)]
        for i, word in enumerate(words):
            name = forms.get(word)
            if name is None or any(w in evidence._NEGATIONS for w in words[max(0, i - 4) : i]):
                continue
            if (name, word) not in found:
                found.append((name, word))
    return found


CLAIM_PIECES = [
    "Refunded",
    "REFUNDED",
    "refunded",
    "not",
    "never",
    "was",
    "your",
    "order",
    "deleted",
    "DELETED",
    "\u212aelvin",  # the Kelvin sign: lowered, an ASCII k
    "\u0130",  # a dotted capital I: lowered, two characters
    "R\u00e9funded",
    "ORD-12345",
    "750.00",
    "don't",
    "it's",
    " ",
    ", ",
    ".",
    "\n",
]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.lists(st.sampled_from(CLAIM_PIECES), max_size=14).map("".join), max_size=4))
def test_unsupported_claims_agree_with_the_word_by_word_reading(texts: list[str]) -> None:
    run = SimpleNamespace(skill=REFUND, state=SimpleNamespace(history=[]))
    assert evidence.unsupported_claims(run, texts) == _claims_word_by_word(run, texts)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "value",
    [
        *Phase,
        *PauseKind,
        *(k.value for k in (*Phase, *PauseKind)),
        "",
        "Intent",
        1,
        None,
        ["intent"],
        {},
    ],
    ids=repr,
)
def test_a_state_reads_its_phase_and_pause_kind_as_the_enums_do(value: Any) -> None:
    for kind, by_text in ((Phase, state._PHASES), (PauseKind, state._PAUSE_KINDS)):
        try:
            expected: Any = kind(value)
        except ValueError as exc:
            expected = type(exc)
        try:
            got: Any = state._member(kind, by_text, value)
        except ValueError as exc:
            got = type(exc)
        assert got == expected and type(got) is type(expected)


@pytest.mark.parametrize(
    "data",
    [
        {"role": "user", "content": "hi", "tool_calls": [], "tool_call_id": ""},
        {"role": "user"},
        {"role": "tool", "content": "{}", "tool_calls": None, "tool_call_id": "c1"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"name": "a", "arguments": {"x": 1}, "raw_arguments": '{"x":1}', "id": "c1"},
                {"name": "b", "arguments": None},
            ],
            "tool_call_id": "",
        },
    ],
)
def test_a_message_reads_back_as_written(data: dict[str, Any]) -> None:
    message = state.message_from_dict(data)
    calls = tuple(ToolCall(**c) for c in data.get("tool_calls") or ())
    assert message == ChatMessage(
        data["role"], data.get("content", ""), calls, data.get("tool_call_id", "")
    )
    assert state.message_from_dict(state.message_to_dict(message)) == message
    with pytest.raises(TypeError):
        state.message_from_dict({"role": "assistant", "tool_calls": [{"nome": "a"}]})


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(CLAIM_PIECES), max_size=10).map("".join),
    st.lists(st.sampled_from(CLAIM_PIECES), max_size=10).map("".join),
    st.lists(st.sampled_from([*CLAIM_PIECES, "750", "1,250.5", "12345"]), max_size=10).map("".join),
)
def test_added_values_asks_for_the_evidence_only_when_it_needs_it(
    draft: str, polished: str, evidence_text: str
) -> None:
    asked: list[bool] = []

    def evidence_of() -> str:
        asked.append(True)
        return evidence_text

    added = evidence.added_values(draft, polished, evidence_of)
    assert added == evidence.added_values(draft, polished, evidence_text)
    if asked:
        assert any(v not in draft for v in evidence._values(polished))
    else:
        assert added == []


def _dropped_by_renderings(draft: str, polished: str, fields: dict[str, Any]) -> list[str]:
    """:func:`dropped_values` with every value read through its renderings."""
    dropped = []
    for name, value in fields.items():
        forms = finalization._renderings(value)
        if any(f in draft for f in forms) and not any(f in polished for f in forms):
            dropped.append(name)
    return dropped


FIELD_VALUES = st.one_of(
    st.sampled_from(CLAIM_PIECES),
    st.sampled_from([750, 750.0, 1250.5, True, None, 0, "", Phase.DONE]),
    st.text(max_size=6),
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from([*CLAIM_PIECES, "750", "750.00", "True", "done"]), max_size=10).map(
        "".join
    ),
    st.lists(st.sampled_from([*CLAIM_PIECES, "750", "1,250.50", "None", "done"]), max_size=10).map(
        "".join
    ),
    st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), FIELD_VALUES, max_size=4),
)
def test_dropped_values_agree_with_reading_every_value_by_its_renderings(
    draft: str, polished: str, fields: dict[str, Any]
) -> None:
    expected = _dropped_by_renderings(draft, polished, fields)
    assert finalization.dropped_values(draft, polished, fields) == expected


@pytest.mark.parametrize("consumed", [False, True])
def test_a_ruling_gives_the_grant_it_holds(consumed: bool) -> None:
    ruling = state.Ruling("refund", {"amount": 750}, "supervisor", "c-1", "cli:sam", consumed)
    grant = ruling.grant()
    assert grant == ApprovalGrant("refund", {"amount": 750}, "supervisor", "c-1", consumed)
    assert ruling.to_dict() == {
        "tool": "refund",
        "args": {"amount": 750},
        "role": "supervisor",
        "correlation_id": "c-1",
        "decided_by": "cli:sam",
        "consumed": consumed,
    }
    assert grant.consumed is consumed


def test_consume_marks_only_the_grants_used() -> None:
    grants = [
        state.Ruling("refund", {"amount": 750}, "supervisor", "c-1"),
        state.Ruling("refund", {"amount": 750}, "manager", "c-2"),
        state.Ruling("refund", {"amount": 10}, "supervisor", "", consumed=False),
    ]
    job = state.JobState("m", grants=list(grants))
    job.consume([grants[1].grant(), ApprovalGrant("x", {}, "r", "")])
    assert job.grants == [
        grants[0],
        dataclasses.replace(grants[1], consumed=True),
        grants[2],
    ]
    assert job.grants[0] is grants[0] and job.grants[2] is grants[2]


def test_while_tracing_is_off_a_unit_of_work_uses_the_one_null_context() -> None:
    assert not tracing.enabled()
    span = tracing.job_span("job", "skill", "start")
    assert span is tracing.job_span("other", "skill", "resume", "00-x")  # one, made once
    with span as traceparent:
        assert traceparent is None
