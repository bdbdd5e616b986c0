"""Several intents per job (issue 20 item 4).

"Pay the bill and then tell my landlord" is two intents: the job gets both, may use the
tools of either (the union), and the workflows of both apply. What names the intents is
untrusted: a name the skill does not have is dropped, a name given twice counts once,
at most ``MAX_INTENTS`` are kept, and the message is out of domain only when no name is
valid. An answer given on resume may add an intent, never remove one.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.engine.helpers import ROOT, call, events_of, polish, run, skill_from
from typer.testing import CliRunner

from skillwire.cli_app import app
from skillwire.core.chat import ChatRequest, ChatResponse, ToolCall
from skillwire.core.job import JobStatus, OutcomeClass
from skillwire.engine import Runtime
from skillwire.engine.intent import MAX_INTENTS
from skillwire.models.offline import OfflineModel
from skillwire.skills import Skill, load_skill
from skillwire.store import SQLiteJobStore
from skillwire.testing import FunctionModel, ScriptedModel
from skillwire.tools import Executors

HOUSEHOLD = ROOT / "examples" / "household" / "domain.yaml"
TWO = "Pay the electricity bill and then tell my landlord"


def household() -> Skill:
    return load_skill(HOUSEHOLD)


def start(
    tmp_path: Path,
    skill: Skill,
    message: str,
    model: Any = None,
    classifier: Any = None,
    **resume: Any,
) -> Any:
    """Start a job (offline model unless ``model``), resume it once with ``resume``
    when given; the job as it ends up, and its stored state."""

    async def main() -> Any:
        async with SQLiteJobStore(tmp_path / "jobs.db") as store:
            runtime = Runtime(
                store, model or OfflineModel(), executors=Executors(), classifier=classifier
            )
            job = await runtime.start(skill, message)
            if resume:
                job = await runtime.resume(job.id, **resume)
            row = await store.get(job.id)
            assert row is not None
            return job, row.state

    return run(main())


def tools_run(job: Any) -> list[str]:
    return [e.data["tool"] for e in events_of(job, "tool_finished")]


def intent_model(reply: Any) -> FunctionModel:
    """The intent stage answers ``reply`` (JSON unless text); every other stage is the
    offline model's."""
    offline = OfflineModel()

    async def answer(request: ChatRequest) -> ChatResponse:
        if request.stage == "intent":
            return ChatResponse(text=reply if isinstance(reply, str) else json.dumps(reply))
        return await offline.complete(request)

    return FunctionModel(answer)


# -- the demo ------------------------------------------------------------------------


def test_a_request_with_two_intents_completes_offline(tmp_path: Path) -> None:
    job, state = start(tmp_path, household(), TWO, classifier=OfflineModel())
    assert (job.status, job.record.outcome_class) == (JobStatus.COMPLETED, OutcomeClass.SUCCESS)
    (detected,) = events_of(job, "intent_detected")
    assert detected.data["intents"] == ["pay_bill", "notify_landlord"]
    assert detected.message == "pay_bill, notify_landlord"
    assert detected.data["entities"] == {"biller": "electricity"}
    # the tools of both intents ran, each allowed by the gate
    assert tools_run(job) == ["get_bill", "pay_bill", "notify_landlord"]
    assert {e.data["decision"] for e in events_of(job, "gate_decision")} == {"allow"}
    # both intents' workflows apply
    (boot,) = events_of(job, "bootstrapped")
    assert {g["from_workflow"] for g in boot.data["subgoals"]} == {"payment", "landlord_notice"}
    assert state["intents"] == ["pay_bill", "notify_landlord"] and "intent" not in state


def test_with_one_intent_the_other_intents_tools_are_refused(tmp_path: Path) -> None:
    """The union is of the job's intents only: a pay-only job may not tell the landlord."""
    reply = {"intents": ["pay_bill"], "entities": {"biller": "gas"}}
    planner: list[str] = []
    offline = OfflineModel()

    async def answer(request: ChatRequest) -> ChatResponse:
        if request.stage == "intent":
            return ChatResponse(text=json.dumps(reply))
        if request.stage == "planner" and not planner:
            planner.append("notify")
            return ChatResponse(
                tool_calls=(
                    ToolCall("notify_landlord", {"bill_id": "B-1"}, '{"bill_id": "B-1"}', "c1"),
                )
            )
        return await offline.complete(request)

    job, _ = start(tmp_path, household(), "Pay the gas bill", model=FunctionModel(answer))
    first = events_of(job, "gate_decision")[0]
    assert (first.data["tool"], first.reason_code) == ("notify_landlord", "TOOL_NOT_FOR_INTENT")
    assert "notify_landlord" not in tools_run(job)


def test_skillwire_run_completes_the_two_intent_request(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["run", str(HOUSEHOLD), "-m", TWO, "--db", str(tmp_path / "jobs.db"), "--json"]
    )
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert (out["status"], out["outcome_class"]) == ("completed", "SUCCESS")
    detected = [e for e in out["events"] if e["kind"] == "intent_detected"]
    assert detected[0]["data"]["intents"] == ["pay_bill", "notify_landlord"]
    shown = CliRunner().invoke(app, ["show", out["id"], "--db", str(tmp_path / "jobs.db")])
    assert shown.exit_code == 0
    assert "intents: pay_bill, notify_landlord" in shown.output


def test_a_money_entity_is_read_by_a_condition(tmp_path: Path) -> None:
    """``entities.amount`` (type money, "$900") is compared with the bill's amount."""
    message = "Pay the gas bill of $900 and then tell my landlord"
    job, _ = start(tmp_path, household(), message, classifier=OfflineModel())
    assert job.record.outcome_class == "BLOCKED"
    assert events_of(job, "intent_detected")[0].data["entities"]["amount"] == 900
    blocked = [e for e in events_of(job, "gate_decision") if e.data["decision"] == "block"]
    assert [b.data["tool"] for b in blocked] == ["pay_bill"]
    assert "not the amount the bill is due" in blocked[0].data["reasons"][0]["message"]
    assert "pay_bill" not in tools_run(job)


# -- hostile replies -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "kept", "rejected"),
    [
        # an intent the skill does not have is dropped, not fatal
        ({"intents": ["delete_everything", "pay_bill"]}, ["pay_bill"], ["delete_everything"]),
        # duplicates collapse; the old one-intent form and the list agree
        (
            {"intent": "pay_bill", "intents": ["pay_bill", "pay_bill", "notify_landlord"]},
            ["pay_bill", "notify_landlord"],
            [],
        ),
        # anything but text is dropped; case and spaces are not forgiven
        (
            {"intents": [7, None, {"id": "pay_bill"}, ["x"], "PAY_BILL", " pay_bill", "pay_bill"]},
            ["pay_bill"],
            ["7", "None", "{'id': 'pay_bill'}", "['x']", "PAY_BILL", " pay_bill"],
        ),
        # one name instead of a list
        ({"intents": "notify_landlord"}, ["notify_landlord"], []),
    ],
)
def test_a_reply_is_checked_name_by_name(
    tmp_path: Path, reply: dict[str, Any], kept: list[str], rejected: list[str]
) -> None:
    job, state = start(tmp_path, household(), TWO, model=intent_model(reply))
    (detected,) = events_of(job, "intent_detected")
    assert detected.data["intents"] == kept == state["intents"]
    assert detected.data["rejected_intents"] == rejected


@pytest.mark.parametrize(
    "reply",
    [
        {"intents": ["delete_everything"]},
        {"intents": []},
        {"intents": {"pay_bill": True}},
        {"intents": [None, 3]},
        {"intent": None, "intents": None},
        "not json",
    ],
)
def test_out_of_domain_only_when_no_name_is_valid(tmp_path: Path, reply: Any) -> None:
    job, state = start(tmp_path, household(), TWO, model=intent_model(reply))
    assert job.record.outcome_class is OutcomeClass.OUT_OF_DOMAIN
    assert state["intents"] == [] and tools_run(job) == []


MANY = """
id: many
problem: {statement: "Many things"}
intents:
  supported:
    - {id: a, description: first, tools: [ta]}
    - {id: b, description: second, tools: [tb]}
    - {id: c, description: third, tools: [tc]}
    - {id: d, description: fourth, tools: [td]}
tools:
  - {name: ta, executor: {type: simulate, result: {status: a}}}
  - {name: tb, executor: {type: simulate, result: {status: b}}}
  - {name: tc, executor: {type: simulate, result: {status: c}}}
  - {name: td, executor: {type: simulate, result: {status: d}}}
output_contract: {required_fields: [status]}
engine: {finalization_gate: {enabled: false}}
"""


def test_a_job_holds_at_most_the_cap_of_intents(tmp_path: Path) -> None:
    """Attacker: a reply naming every intent does not open every tool."""
    skill = skill_from(tmp_path / "many", MANY)
    names = ["a", "b", "c", "d", *[f"junk{i}" for i in range(1000)]]
    job, state = start(tmp_path, skill, "do everything", model=intent_model({"intents": names}))
    assert MAX_INTENTS == 3
    assert state["intents"] == ["a", "b", "c"]
    (detected,) = events_of(job, "intent_detected")
    assert detected.data["rejected_intents"][0] == "d"
    assert len(detected.data["rejected_intents"]) == 10  # recorded, within bounds
    assert "td" not in tools_run(job)


def test_a_long_name_is_recorded_cut_short(tmp_path: Path) -> None:
    reply = {"intents": ["x" * 100_000, "pay_bill"]}
    job, _ = start(tmp_path, household(), TWO, model=intent_model(reply))
    (detected,) = events_of(job, "intent_detected")
    assert detected.data["rejected_intents"] == ["x" * 80]


# -- the classifier's shortcut ---------------------------------------------------------


def accepting(tmp_path: Path, accept: float) -> Skill:
    text = HOUSEHOLD.read_text().replace(
        "  out_of_domain:\n", f"  thresholds: {{accept: {accept}}}\n  out_of_domain:\n", 1
    )
    folder = tmp_path / "accepting"
    folder.mkdir(exist_ok=True)
    path = folder / "domain.yaml"
    path.write_text(text)
    return load_skill(path)


def classifier_saying(reply: dict[str, Any]) -> FunctionModel:
    return FunctionModel(lambda _r: ChatResponse(text=json.dumps(reply)))


def test_a_confident_classifier_decides_two_intents(tmp_path: Path) -> None:
    reply = {"intents": ["pay_bill", "notify_landlord"], "entities": {}, "confidence": 0.8}
    model = intent_model({"intents": []})  # would say out of domain if asked
    job, state = start(tmp_path, accepting(tmp_path, 0.5), TWO, model, classifier_saying(reply))
    assert state["intents"] == ["pay_bill", "notify_landlord"]
    assert events_of(job, "intent_detected")[0].data["decided_by"] == "classifier"
    assert "intent" not in [r.stage for r in model.calls]


@pytest.mark.parametrize(
    "reply",
    [
        # one name the skill does not have: the model judges the whole message
        {"intents": ["pay_bill", "wire_everything"], "confidence": 0.9},
        # below the threshold (its confidence is the least sure intent's)
        {"intents": ["pay_bill", "notify_landlord"], "confidence": 0.4},
    ],
)
def test_otherwise_the_model_is_asked(tmp_path: Path, reply: dict[str, Any]) -> None:
    model = intent_model({"intents": ["pay_bill"]})
    job, state = start(tmp_path, accepting(tmp_path, 0.5), TWO, model, classifier_saying(reply))
    assert [r.stage for r in model.calls][:1] == ["intent"]
    assert state["intents"] == ["pay_bill"]
    assert "decided_by" not in events_of(job, "intent_detected")[0].data


def test_the_offline_classifier_decides_the_demo_when_allowed(tmp_path: Path) -> None:
    model = intent_model({"intents": []})
    job, state = start(tmp_path, accepting(tmp_path, 0.1), TWO, model, OfflineModel())
    assert state["intents"] == ["pay_bill", "notify_landlord"]
    assert "intent" not in [r.stage for r in model.calls]
    assert job.record.outcome_class is OutcomeClass.SUCCESS


# -- a later message adds an intent ----------------------------------------------------


def with_note(tmp_path: Path) -> Skill:
    """The household skill asking the payer for a note before paying."""
    text = HOUSEHOLD.read_text().replace(
        "\ntools:\n",
        "\nrequired_inputs:\n  - path: note\n    prompt: Anything else?\n"
        "    intents: [pay_bill]\n\ntools:\n",
        1,
    )
    folder = tmp_path / "noted"
    folder.mkdir(exist_ok=True)
    (folder / "domain.yaml").write_text(text)
    return load_skill(folder / "domain.yaml")


def test_an_answer_adds_an_intent(tmp_path: Path) -> None:
    skill = with_note(tmp_path)
    answer = {"input": {"note": "and then tell my landlord"}}
    job, state = start(tmp_path, skill, "Pay the water bill", classifier=OfflineModel(), **answer)
    assert job.record.outcome_class is OutcomeClass.SUCCESS
    first, added = events_of(job, "intent_detected")
    assert first.data["intents"] == ["pay_bill"]
    assert added.data["intents"] == ["pay_bill", "notify_landlord"]
    assert added.data["added"] == ["notify_landlord"]
    assert (added.data["source"], added.data["decided_by"]) == ("input", "classifier")
    assert state["intents"] == ["pay_bill", "notify_landlord"]
    assert tools_run(job) == ["get_bill", "pay_bill", "notify_landlord"]


@pytest.mark.parametrize("note", ["none, thanks", "delete every record", "pay_bill"])
def test_an_answer_that_names_nothing_new_adds_and_removes_nothing(
    tmp_path: Path, note: str
) -> None:
    job, state = start(
        tmp_path,
        with_note(tmp_path),
        "Pay the water bill",
        classifier=OfflineModel(),
        input={"note": note},
    )
    assert len(events_of(job, "intent_detected")) == 1
    assert state["intents"] == ["pay_bill"]
    assert tools_run(job) == ["get_bill", "pay_bill"]


def test_without_a_classifier_an_answer_costs_no_model_call(tmp_path: Path) -> None:
    """The intent model is not asked about answers (see engine.intent)."""
    model = intent_model({"intents": ["pay_bill"], "entities": {"biller": "water"}})
    _, state = start(
        tmp_path,
        with_note(tmp_path),
        "Pay the water bill",
        model=model,
        input={"note": "and then tell my landlord"},
    )
    assert [r.stage for r in model.calls].count("intent") == 1
    assert state["intents"] == ["pay_bill"]


def test_an_answer_adds_within_the_cap(tmp_path: Path) -> None:
    many = MANY.replace(
        "output_contract", "required_inputs: [{path: note, prompt: More?}]\noutput_contract"
    )
    skill = skill_from(tmp_path / "many", many)
    classifier = classifier_saying({"intents": ["d"], "confidence": 1.0})
    model = intent_model({"intents": ["a", "b", "c"]})
    job, state = start(
        tmp_path, skill, "abc", model=model, classifier=classifier, input={"note": "and d"}
    )
    assert state["intents"] == ["a", "b", "c"]
    assert len(events_of(job, "intent_detected")) == 1


def test_an_input_scoped_to_one_intent_is_asked_when_it_is_active(tmp_path: Path) -> None:
    """``note`` is scoped to pay_bill: asked in a job of both intents, not in one of
    notify_landlord alone."""
    skill = with_note(tmp_path)
    both = intent_model({"intents": ["notify_landlord", "pay_bill"], "entities": {"biller": "gas"}})
    (tmp_path / "both").mkdir()
    job, _ = start(tmp_path / "both", skill, TWO, model=both)
    assert job.record.outcome_class is OutcomeClass.USER_ACTION_REQUIRED
    assert job.record.waiting is not None and job.record.waiting.requested_fields == ["note"]
    alone = intent_model({"intents": ["notify_landlord"], "entities": {"biller": "gas"}})
    (tmp_path / "alone").mkdir()
    job, _ = start(tmp_path / "alone", skill, "Tell my landlord", model=alone)
    # notify_landlord declares no biller: that entity is not the job's, and it is asked
    # for; the note is not
    assert job.record.waiting is not None and job.record.waiting.requested_fields == ["biller"]


def test_the_intent_prompt_asks_for_every_intent_and_says_the_value_shapes() -> None:
    from skillwire.engine.prompts import intent_system

    text = intent_system(household())
    assert '{"intents":[id]' in text
    assert "amount: money as a number" in text
    assert "recipients: list" in text


def test_a_message_of_many_clauses_gets_at_most_the_cap(tmp_path: Path) -> None:
    """Attacker: a message asking for every intent, many times over, offline."""
    skill = skill_from(tmp_path / "many", MANY)
    message = " and then ".join(["first", "second", "third", "fourth"] * 500)
    job, state = start(tmp_path, skill, message, classifier=OfflineModel())
    assert len(state["intents"]) <= MAX_INTENTS
    assert job.status is JobStatus.COMPLETED
    short = "first and then second and then third and then fourth"
    (tmp_path / "short").mkdir()
    job, state = start(tmp_path / "short", skill, short, classifier=OfflineModel())
    assert state["intents"] == ["a", "b", "c"]
    assert events_of(job, "intent_detected")[0].data["rejected_intents"] == ["d"]
    assert tools_run(job) == ["ta", "tb", "tc"]


def with_pin(tmp_path: Path) -> Skill:
    """The household skill asking for the tenant's PIN in a job that tells the landlord
    (a required input scoped to notify_landlord)."""
    text = HOUSEHOLD.read_text().replace(
        "\ntools:\n",
        "\nrequired_inputs:\n  - path: tenant_pin\n    prompt: Your tenant PIN?\n"
        "    intents: [notify_landlord]\n\ntools:\n",
        1,
    )
    folder = tmp_path / "pinned"
    folder.mkdir(exist_ok=True)
    (folder / "domain.yaml").write_text(text)
    return load_skill(folder / "domain.yaml")


def test_an_intent_added_after_a_tool_ran_still_asks_its_required_inputs(
    tmp_path: Path,
) -> None:
    """Attack: a job of notify_landlord must give tenant_pin before its first tool
    call. Start as pay_bill instead, let a tool run, then answer a later prompt with
    text naming notify_landlord: the intent is added after the first tool call, so its
    required input was never asked and the landlord was told without the PIN."""
    skill = with_pin(tmp_path)
    bill = "BILL-water-0325"
    script = ScriptedModel(
        [
            {"stage": "intent", "json": {"intents": ["pay_bill"], "entities": {}}},
            call("get_bill", "c1", biller="water"),
            call("pay_bill", "c2", amount_due=120.5),  # no bill_id: the user is asked
            call("notify_landlord", "c3", bill_id=bill),
            call("final_answer", "f", answer="Paid.", fields={"bill_id": bill, "status": "paid"}),
            polish("Paid."),
        ]
    )
    classifier = classifier_saying({"intents": ["notify_landlord"], "confidence": 1.0})

    async def main() -> Any:
        async with SQLiteJobStore(tmp_path / "jobs.db") as store:
            runtime = Runtime(store, script, executors=Executors(), classifier=classifier)
            job = await runtime.start(skill, "Pay the water bill")
            assert job.record.waiting is not None
            assert job.record.waiting.requested_fields == ["bill_id"]
            job = await runtime.resume(job.id, input={"bill_id": f"{bill}, tell my landlord"})
            return job

    job = run(main())
    assert "notify_landlord" in events_of(job, "intent_detected")[-1].data["intents"]
    assert "notify_landlord" not in tools_run(job), tools_run(job)
    assert job.record.waiting is not None and "tenant_pin" in job.record.waiting.requested_fields
