"""Stored job states of every version load and resume to their end; a newer one is refused.

``fixtures/state_v<N>.json`` is a refund job paused for its supervisor's approval, as
the skillwire of state version N stored it (``fixtures/write_state.py`` says how each
was made). Each is put into a store exactly as written and resumed.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from tests.engine.helpers import (
    ANSWER,
    FIELDS,
    POLISHED,
    REFUND_DIR,
    approval_script,
    call,
    decide,
    final,
    kinds,
    run,
)

from skillwire.core.job import (
    JOB_STATE_VERSION,
    Event,
    JobRecord,
    JobStatus,
    OutcomeClass,
    Waiting,
)
from skillwire.engine import Runtime
from skillwire.engine.state import (
    HistoryEntry,
    InFlightCall,
    JobState,
    PauseKind,
    Phase,
    Ruling,
    StateVersionError,
    upgrade_state,
)
from skillwire.skills import load_skill
from skillwire.store import SQLiteJobStore
from skillwire.testing import ScriptedModel
from skillwire.tools import Executors

FIXTURES = Path(__file__).parent / "fixtures"
VERSIONS = list(range(1, JOB_STATE_VERSION + 1))


def stored(version: int) -> dict[str, Any]:
    """The fixture of ``version``, as written."""
    data: dict[str, Any] = json.loads((FIXTURES / f"state_v{version}.json").read_text())
    return data


def record_of(data: dict[str, Any]) -> tuple[JobRecord, list[Event]]:
    """The job row and events a fixture holds."""
    record = JobRecord(
        data["id"],
        data["skill_id"],
        JobStatus(data["status"]),
        OutcomeClass(data["outcome_class"]),
        data["owner"],
        data["created_at"],
        data["updated_at"],
        version=data["version"],
        waiting=Waiting.from_dict(data["waiting"]),
        reply=data["reply"],
        fields=data["fields"],
        state=data["state"],
        state_version=data["state_version"],
    )
    return record, [Event(job_id=data["id"], **e) for e in data["events"]]


def test_there_is_a_fixture_for_every_state_version() -> None:
    written = sorted(int(p.stem.removeprefix("state_v")) for p in FIXTURES.glob("state_v*.json"))
    assert written == VERSIONS
    for version in VERSIONS:
        assert stored(version)["state_version"] == version
    assert "denials" not in stored(1)["state"]  # as version 1 wrote it before denials


async def resumed(
    tmp_path: Path, version: int, replies: list[dict[str, Any]], approval: str
) -> Any:
    """Store the fixture as written, resume it with ``approval`` as the supervisor and
    the remaining ``replies``; the job as it ends, and its row as stored."""
    record, events = record_of(stored(version))
    skill = load_skill(REFUND_DIR / "domain.yaml")
    store = SQLiteJobStore(tmp_path / "jobs.db")
    try:
        await store.create(record, events)
        model = ScriptedModel(replies)
        model.skip(record.state["model_calls"])
        runtime = Runtime(store, model, executors=Executors(), skills=lambda _record: skill)
        job = await runtime.resume(
            record.id,
            approval=approval,  # type: ignore[arg-type]
            role="supervisor",
            decided_by="sup",
            correlation_id=record.waiting.correlation_id if record.waiting else None,
        )
        model.assert_complete()
        row = await store.get(record.id)
    finally:
        await store.close()
    return job, row


@pytest.mark.parametrize("version", VERSIONS)
def test_a_stored_state_of_each_version_resumes_to_its_end(tmp_path: Path, version: int) -> None:
    job, row = run(resumed(tmp_path, version, approval_script(), "approve"))
    assert (job.status, job.record.outcome_class) == ("completed", OutcomeClass.SUCCESS)
    assert job.record.reply == POLISHED and job.record.fields == FIELDS
    assert kinds(job)[-9:] == [
        "approval_granted",
        "status",
        "gate_decision",
        "tool_started",
        "tool_finished",
        "final_answer",
        "gate_passed",
        "polished",
        "status",
    ]
    history = row.state["history"]
    assert [h["tool"] for h in history] == [
        "verify_identity",
        "check_eligibility",
        "process_refund",
    ]
    assert row.state_version == JOB_STATE_VERSION  # saved in the current version's form
    correlation = stored(version)["waiting"]["correlation_id"]
    assert row.state["grants"] == [
        {
            "tool": "process_refund",
            "args": {"order_id": "ORD-12345", "amount": 750},
            "role": "supervisor",
            "correlation_id": correlation,  # the pause it answered
            "decided_by": "sup",
            "consumed": True,  # by the one run it allowed
        }
    ]
    assert row.state["pending_grants"] == []
    assert row.state["denials"] == []
    seqs = [e.seq for e in job.events]
    assert seqs == list(range(1, len(seqs) + 1))  # the stored events go on without a gap


@pytest.mark.parametrize("version", VERSIONS)
def test_a_denial_in_an_upgraded_state_stops_the_same_call_later(
    tmp_path: Path, version: int
) -> None:
    """The denial lands in ``denials`` (absent from version 1) and is read from there."""
    replies = [
        *approval_script()[:4],
        call("process_refund", "c4", order_id="ORD-12345", amount=750),
        final(ANSWER, call_id="final"),
    ]  # a denied request asks no gate and no polisher
    job, row = run(resumed(tmp_path, version, replies, "deny"))
    assert (job.status, job.record.outcome_class) == ("completed", "DENIED")
    assert "denied_before" in kinds(job)
    assert "process_refund" not in [h["tool"] for h in row.state["history"]]
    assert row.state["denials"] == [
        {
            "tool": "process_refund",
            "args": {"order_id": "ORD-12345", "amount": 750},
            "role": "supervisor",
            "correlation_id": stored(version)["waiting"]["correlation_id"],
            "decided_by": "sup",
            "consumed": False,
        }
    ]


def test_a_version_1_state_reads_as_the_current_version_with_no_denials() -> None:
    v1 = stored(1)["state"]
    before = copy.deepcopy(v1)
    current = {k: v for k, v in before.items() if k != "intent"}
    current |= {"denials": [], "grants": [], "pending_grants": [], "intents": [before["intent"]]}
    upgraded = upgrade_state(v1, 1)
    assert upgraded == current
    assert v1 == before  # the state read is not changed in place
    state = JobState.from_dict(v1, 1)
    assert state.to_dict() == current
    assert state.phase is Phase.PLANNING and state.pause_kind is PauseKind.APPROVAL
    assert state.pending is not None and state.pending.tool == "process_refund"
    assert [h.tool for h in state.history] == ["verify_identity", "check_eligibility"]


@pytest.mark.parametrize(("intent", "intents"), [("intent_refund", ["intent_refund"]), (None, [])])
def test_a_version_4_state_reads_its_one_intent_as_a_list(
    intent: str | None, intents: list[str]
) -> None:
    v4 = {**stored(4)["state"], "intent": intent}
    before = copy.deepcopy(v4)
    upgraded = upgrade_state(v4, 4)
    assert "intent" not in upgraded and upgraded["intents"] == intents
    assert v4 == before  # the state read is not changed in place
    state = JobState.from_dict(v4, 4)
    assert state.intents == intents and state.intent == (intent or None)
    assert "intent" not in state.to_dict() and state.to_dict()["intents"] == intents


def test_a_stored_intents_list_keeps_only_text() -> None:
    data = {**stored(JOB_STATE_VERSION)["state"], "intents": ["a", 3, None, {"x": 1}, "b"]}
    assert JobState.from_dict(data).intents == ["a", "b"]


def test_the_current_version_reads_back_what_it_wrote() -> None:
    data = stored(JOB_STATE_VERSION)["state"]
    assert upgrade_state(data, JOB_STATE_VERSION) is data  # nothing to upgrade: no copy
    assert JobState.from_dict(data).to_dict() == data


@pytest.mark.parametrize("version", [0, -1, JOB_STATE_VERSION + 1, 10**9])
def test_a_state_of_an_unknown_version_is_refused(version: int) -> None:
    with pytest.raises(StateVersionError, match=f"version {version};"):
        JobState.from_dict(stored(JOB_STATE_VERSION)["state"], version)


def test_a_newer_state_is_refused_by_the_runtime_with_a_clear_error(tmp_path: Path) -> None:
    """Whatever the store lets through, the engine does not read a state it does not know."""

    class LenientStore(SQLiteJobStore):
        async def get(self, job_id: str) -> JobRecord | None:
            found = await super().get(job_id)
            return (
                None
                if found is None
                else dataclasses.replace(found, state_version=JOB_STATE_VERSION + 1)
            )

    async def scenario() -> None:
        record, events = record_of(stored(JOB_STATE_VERSION))
        store = LenientStore(tmp_path / "jobs.db")
        try:
            await store.create(record, events)
            runtime = Runtime(store, ScriptedModel([]), executors=Executors())
            with pytest.raises(StateVersionError, match="needs a newer skillwire"):
                await decide(runtime, record.id, "approve", role="supervisor")
            stored_row = await SQLiteJobStore.get(store, record.id)
            assert stored_row is not None and stored_row.version == 1  # nothing was written
        finally:
            await store.close()

    run(scenario())


def test_state_entries_are_frozen_and_keep_one_json_form() -> None:
    entry = HistoryEntry("refund", {"amount": 750}, {"ok": 1})
    with pytest.raises(dataclasses.FrozenInstanceError):
        entry.tool = "other"  # type: ignore[misc]
    assert entry.to_dict() is entry.to_dict()  # built once, not per save
    assert entry.to_dict() == {
        "tool": "refund",
        "args": {"amount": 750},
        "result": {"ok": 1},
        "ok": True,
        "error": "",
        "state_changes": {},
    }
    state = JobState(
        "m",
        history=[entry],
        grants=[Ruling("refund", {"amount": 750}, "supervisor")],
        in_flight=InFlightCall("refund", {"amount": 750}, "j:0", "c1"),
        pause_kind=PauseKind.OPERATOR,
    )
    first, second = state.to_dict(), state.to_dict()
    assert first["history"][0] is second["history"][0]
    assert first["in_flight"] == {
        "tool": "refund",
        "args": {"amount": 750},
        "key": "j:0",
        "call_id": "c1",
    }
    for text in (first["phase"], first["pause_kind"]):
        assert type(text) is str  # plain JSON text, not an enum, in the stored form
    assert JobState.from_dict(json.loads(json.dumps(first))).to_dict() == first
