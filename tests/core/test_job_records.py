"""Events and model-call records are slotted dataclasses (a job makes some thirty of
them): no instance dict, the same fields, equality and JSON forms as before."""

from __future__ import annotations

import dataclasses

import pytest

from skillwire.core.job import Event, ModelCallRecord


def test_an_event_keeps_its_fields_and_json_form() -> None:
    event = Event("job-1", 3, "2026-11-29T04:00:00.000001+00:00", "gate", "gate_decision")
    assert not hasattr(event, "__dict__")
    assert [f.name for f in dataclasses.fields(Event)] == [
        "job_id",
        "seq",
        "at",
        "stage",
        "kind",
        "reason_code",
        "message",
        "data",
    ]
    assert event.to_dict() == {
        "seq": 3,
        "at": "2026-11-29T04:00:00.000001+00:00",
        "stage": "gate",
        "kind": "gate_decision",
        "reason_code": "",
        "message": "",
        "data": {},
    }
    assert event == Event("job-1", 3, event.at, "gate", "gate_decision", data={})
    assert event.data is not Event("job-2", 1, "", "", "").data  # a dict of its own
    with pytest.raises(AttributeError):
        event.extra = 1  # type: ignore[attr-defined]


def test_a_model_call_record_keeps_its_fields_and_json_form() -> None:
    call = ModelCallRecord("job-1", 2, "t", "planner", "scripted", 120, None, 7, 0.25)
    assert not hasattr(call, "__dict__")
    assert call.to_dict() == {
        "seq": 2,
        "at": "t",
        "stage": "planner",
        "model": "scripted",
        "prompt_chars": 120,
        "input_tokens": None,
        "output_tokens": 7,
        "latency_ms": 0.25,
        "ok": True,
        "error": "",
    }
    assert dataclasses.replace(call, seq=5).to_dict() == {**call.to_dict(), "seq": 5}
