"""The journal: a row per save holding its events and model calls. Reads give back the
records in seq order from any number of saves; a save's seqs must follow those stored;
a file written with schema 1 (a row per event and per model call) moves over intact;
the ``events`` view reads the events out of it with plain SQL."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from tests.store.test_sqlite import call, event, make_job, run_with_store

from skillwire.core.errors import UsageError
from skillwire.core.job import Event, JobStatus, ModelCallRecord, OutcomeClass
from skillwire.store import SQLiteJobStore
from skillwire.store._rows import job_from_row, write_values
from skillwire.store.migrations import MIGRATIONS, SCHEMA_VERSION


def test_events_after_a_seq_come_from_every_save_in_order(tmp_path: Path) -> None:
    async def body(store: SQLiteJobStore) -> None:
        job = await store.create(make_job(), [event("j1", 1), event("j1", 2)])
        job = await store.save(job, expected_version=1)  # no events: no journal row
        job = await store.save(
            job, expected_version=2, events=[event("j1", 3)], model_calls=[call("j1", 1)]
        )
        job = await store.save(job, expected_version=3, model_calls=[call("j1", 2)])
        job = await store.save(job, expected_version=4, events=[event("j1", 4), event("j1", 5)])
        everything = await store.events("j1")
        assert [e.seq for e in everything] == [1, 2, 3, 4, 5]
        assert everything[2] == event("j1", 3)
        for after in range(6):
            assert [e.seq for e in await store.events("j1", after_seq=after)] == list(
                range(after + 1, 6)
            )
        assert await store.model_calls("j1") == [call("j1", 1), call("j1", 2)]
        assert await store.events("nope") == [] and await store.model_calls("nope") == []
        with sqlite3.connect(store.path) as db:
            rows = db.execute("SELECT version, last_event, last_call FROM journal").fetchall()
            highest = db.execute("SELECT last_event, last_call FROM jobs").fetchall()
        assert rows == [(1, 2, 0), (3, 3, 1), (4, 0, 2), (5, 5, 0)], "each row's own seqs"
        assert highest == [(5, 2)], "the job's highest seqs, on its row"

    run_with_store(tmp_path / "jobs.db", body)


@pytest.mark.parametrize(
    ("events", "calls", "problem"),
    [
        ([3, 2], [], "event seq 2 is already stored or out of order"),
        ([2, 2], [], "event seq 2 is already stored or out of order"),
        ([2], [2, 1], "model call seq 1 is already stored or out of order"),
        ([1], [], "event 1 .events up to 1 are"),
        ([2], [1], "model call 1 .model calls up to 1 are"),
    ],
)
def test_seqs_must_follow_those_stored(
    tmp_path: Path, events: list[int], calls: list[int], problem: str
) -> None:
    async def body(store: SQLiteJobStore) -> None:
        job = await store.create(make_job(), [event("j1", 1)])
        job = await store.save(job, expected_version=1, model_calls=[call("j1", 1)])
        with pytest.raises(UsageError, match=problem):
            await store.save(
                replace(job, reply="lost"), expected_version=2,
                events=[event("j1", s) for s in events], model_calls=[call("j1", s) for s in calls],
            )  # fmt: skip
        assert await store.get("j1") == job
        assert [e.seq for e in await store.events("j1")] == [1]

    run_with_store(tmp_path / "jobs.db", body)


def test_a_schema_1_file_moves_to_the_journal(tmp_path: Path) -> None:
    path = tmp_path / "jobs.db"
    with sqlite3.connect(path, isolation_level=None) as db:
        db.execute("BEGIN")
        MIGRATIONS[0](db)
        db.execute("PRAGMA user_version = 1")
        db.execute(
            "INSERT INTO schema_migrations VALUES (1, 'm001_initial', '2026-01-01T00:00:00')"
        )
        body = {"waiting": None, "reply": None, "fields": {}, "state": {"n": 1}}
        for job_id in ("a", "b"):
            db.execute(
                "INSERT INTO jobs VALUES (?, 's', 'o', 'running', NULL, 3, 't0', 't1', 1, ?)",
                (job_id, json.dumps(body)),
            )
        for seq in (2, 1, 3):  # stored out of order: read back in seq order
            db.execute(
                "INSERT INTO events VALUES ('a', ?, 't', 'planner', 'step', 'OK', 'm', ?)",
                (seq, json.dumps({"n": seq, "text": "é"})),
            )
        for row in (("a", 5, 1.5, 0, "x"), ("b", None, 2.0, 1, "")):
            db.execute(
                "INSERT INTO model_calls VALUES (?, 1, 't', 'intent', 'm', 10, ?, NULL, ?, ?, ?)",
                row,
            )
        db.execute("COMMIT")
    db.close()

    async def main() -> None:
        async with SQLiteJobStore(path) as store:
            events = await store.events("a")
            assert events == [
                Event("a", n, "t", "planner", "step", "OK", "m", {"n": n, "text": "é"})
                for n in (1, 2, 3)
            ]
            assert await store.model_calls("a") == [
                ModelCallRecord("a", 1, "t", "intent", "m", 10, 5, None, 1.5, False, "x")
            ]
            assert await store.events("b") == []
            assert [c.seq for c in await store.model_calls("b")] == [1]
            job = await store.get("a")
            assert job is not None and job.state == {"n": 1}
            with pytest.raises(UsageError, match="already stored"):
                await store.save(job, expected_version=3, events=[event("a", 3)])
            await store.save(job, expected_version=3, events=[event("a", 4)])
            assert [e.seq for e in await store.events("a", after_seq=2)] == [3, 4]

    asyncio.run(main())
    with sqlite3.connect(path) as db:
        tables = {
            name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        }
        assert db.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
        audit = db.execute("SELECT job_id, seq, data FROM events ORDER BY job_id, seq").fetchall()
    db.close()
    assert "journal" in tables and "events" not in tables and "model_calls" not in tables
    assert audit[:3] == [("a", n, json.dumps({"n": n, "text": "é"}, separators=(",", ":"),
                                             ensure_ascii=False)) for n in (1, 2, 3)]  # fmt: skip
    assert [(job_id, seq) for job_id, seq, _data in audit[3:]] == [("a", 4)]


def test_the_audit_reads_with_plain_sql(tmp_path: Path) -> None:
    """One row per event in the ``events`` view, from every save and every job, the
    same as the store reads back; a save without events adds none."""
    path = tmp_path / "jobs.db"
    asked = Event(
        "j1", 3, "t3", "planner", "paused", "APPROVAL_REQUIRED", "Refund 750 for 'ORD-1'?",
        {"tool": "refund", "args": {"amount": 750}},
    )  # fmt: skip

    async def body(store: SQLiteJobStore) -> list[Event]:
        job = await store.create(make_job(), [event("j1", 1, tool="lookup")])
        job = await store.save(job, expected_version=1, events=[event("j1", 2), asked],
                               model_calls=[call("j1", 1)])  # fmt: skip
        await store.save(job, expected_version=2, model_calls=[call("j1", 2)])
        await store.create(make_job("j0"), [event("j0", 1, text="é ✓", n=[1.5, None])])
        return await store.events("j0") + await store.events("j1")

    stored = run_with_store(path, body)
    with sqlite3.connect(path) as db:
        rows = db.execute(
            "SELECT job_id, seq, at, stage, kind, reason_code, message, data FROM events "
            "ORDER BY job_id, seq"
        ).fetchall()
        codes = db.execute(
            "SELECT reason_code, count(*) FROM events WHERE job_id = ? GROUP BY reason_code "
            "ORDER BY reason_code",
            ("j1",),
        ).fetchall()
        tools = db.execute(
            "SELECT seq, json_extract(data, '$.args.amount') FROM events "
            "WHERE kind = 'paused' AND json_extract(data, '$.tool') = 'refund'"
        ).fetchall()
    db.close()
    assert [row[:7] for row in rows] == [
        (e.job_id, e.seq, e.at, e.stage, e.kind, e.reason_code, e.message) for e in stored
    ]
    assert [json.loads(row[7]) for row in rows] == [e.data for e in stored]
    assert codes == [("APPROVAL_REQUIRED", 1), ("OK", 2)]
    assert tools == [(3, 750)]


def test_a_write_names_what_is_not_json_in_the_order_it_always_has() -> None:
    """The body and the journal are proved plain together; when they are not, each is
    checked on its own as before: a body that is not JSON is named first (even beside
    seqs out of order), then the event whose data is not JSON."""
    bad_body = make_job(state={"t": (1,)})
    with pytest.raises(TypeError, match=r"job j1: \$\.state\.t has type tuple"):
        write_values(bad_body, 2, [event("j1", 2), event("j1", 1)], [])
    with pytest.raises(UsageError, match="out of order"):
        write_values(make_job(), 2, [event("j1", 2), event("j1", 1)], [])
    with pytest.raises(TypeError, match=r"job j1 event 2 data: \$\.x has type tuple"):
        write_values(make_job(), 2, [event("j1", 1), event("j1", 2, x=(1,))], [])
    with pytest.raises(TypeError, match=r"job j1: \$\.state\.t has type tuple"):
        write_values(bad_body, 2, [event("j1", 1, x=(1,))], [])
    plain = write_values(make_job(state={"f": 1.5}), 2, [event("j1", 1, x=[1])], [call("j1", 1)])
    assert json.loads(plain["body"])["state"] == {"f": 1.5}
    assert json.loads(plain["data"])["events"][0]["data"] == {"x": [1]}


EMPTY_BODY = '{"waiting":null,"reply":null,"fields":{},"state":{}}'


class _Text(str):
    """A str subclass."""


@pytest.mark.parametrize(
    "value",
    [
        *JobStatus,
        *OutcomeClass,
        *(member.value for member in [*JobStatus, *OutcomeClass]),
        _Text("running"),
        "nope",
        "",
        1,
        None,
        [],
    ],
    ids=repr,
)
def test_status_and_outcome_texts_are_what_the_enums_give(value: object) -> None:
    """A write's status and outcome texts, looked up in a table, are what ``str`` of the
    enum called with the value gives; a value the enum refuses raises what it raises."""

    def by_enum(kind: type[JobStatus] | type[OutcomeClass], allow_none: bool) -> object:
        if allow_none and value is None:
            return None
        try:
            return str(kind(value))
        except Exception as exc:  # what the enum raises for it
            return type(exc)

    def written(column: str, **changes: Any) -> object:
        try:
            return write_values(make_job(**changes), 2, [], [])[column]
        except Exception as exc:
            return type(exc)

    assert written("status", status=value) == by_enum(JobStatus, False)
    assert written("outcome_class", outcome_class=value) == by_enum(OutcomeClass, True)
    if isinstance(value, str) and by_enum(JobStatus, False) == value:
        row = ("j1", "s", "o", value, None, 1, "t", "t", 1, EMPTY_BODY)
        assert job_from_row(row).status is JobStatus(value)
    if isinstance(value, str) and by_enum(OutcomeClass, True) == value:
        row = ("j1", "s", "o", "running", value, 1, "t", "t", 1, EMPTY_BODY)
        assert job_from_row(row).outcome_class is OutcomeClass(value)


def test_a_write_reports_its_first_problem_in_the_order_it_always_has() -> None:
    """The outcome is checked first, then the body's JSON, the journal, and the status
    last."""
    bad_body = {"state": {"t": (1,)}}
    with pytest.raises(ValueError, match="OutcomeClass"):
        write_values(make_job(outcome_class="nope", status="nope", **bad_body), 2, [], [])
    with pytest.raises(TypeError, match=r"job j1: \$\.state\.t"):
        write_values(make_job(status="nope", **bad_body), 2, [], [])
    with pytest.raises(UsageError, match="out of order"):
        write_values(make_job(status="nope"), 2, [event("j1", 2), event("j1", 1)], [])
    with pytest.raises(ValueError, match="JobStatus"):
        write_values(make_job(status="nope"), 2, [event("j1", 1)], [])
