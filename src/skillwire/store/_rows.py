"""Records to rows and back: a job's row, a save's journal entry, the records they hold.

A write's values are one dict (:func:`write_values`), which its statements
(:class:`Statement`) read by name: the ``jobs`` columns, whose ``body`` holds the waiting
object, reply, fields and state as one JSON document; the save's events and model calls
as one journal entry, a JSON document ``{"events": [...], "model_calls": [...]}``, each
item the record's ``to_dict`` form (its fields but the job id); and the seqs the save is
checked by.
"""

from __future__ import annotations

import operator
import re
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import orjson

from skillwire.core.errors import UsageError
from skillwire.core.job import Event, JobRecord, JobStatus, ModelCallRecord, OutcomeClass, Waiting
from skillwire.core.plainjson import plain_dumps_all
from skillwire.store._stored_json import storable, stored_json

__all__ = [
    "JOB_COLUMNS",
    "Statement",
    "WriteValues",
    "call_from",
    "event_from",
    "job_from_row",
    "stored_bytes",
    "with_version",
    "write_values",
]

JOB_COLUMNS = (
    "id, skill_id, owner, status, outcome_class, version, created_at, updated_at, "
    "state_version, body"
)
"""The columns a job is read from, in the order :func:`job_from_row` takes them."""

WriteValues = dict[str, Any]
"""The values a write of a job binds, by name (see :func:`write_values`)."""

_NO_SEQ = 2**63 - 1
"""The bound a save's first seq is checked against when it has none: past any seq."""


_STATUS_TEXTS: dict[object, str] = {str(status): str(status) for status in JobStatus}
_OUTCOME_TEXTS: dict[object, str | None] = {str(o): str(o) for o in OutcomeClass} | {None: None}
"""A status or outcome (its member or its text) to its text as stored: what ``str`` of
the enum called with it gives, without the call (a few thousand instructions each)."""
_STATUSES = {status.value: status for status in JobStatus}
_OUTCOMES: dict[str | None, OutcomeClass | None] = {o.value: o for o in OutcomeClass} | {None: None}
"""A stored text to its member, as the enum called with it gives it."""

_PARAMETER = re.compile(r":([a-z_]+)")


class Statement:
    """SQL written with named parameters (``:status``), given their values by name,
    bound by position.

    CPython's ``sqlite3`` binds a dict by asking SQLite each parameter's name with the
    GIL released: a save cost some 10% more instructions, and the worker thread could
    take the GIL in the middle of a statement run on the event loop. So the names
    become positions once, here, and the values are picked from the dict in that order.
    """

    __slots__ = ("_pick", "names", "sql")

    def __init__(self, sql: str) -> None:
        self.names = tuple(_PARAMETER.findall(sql))
        self.sql = _PARAMETER.sub("?", sql)
        pick = operator.itemgetter(*self.names)
        self._pick: Callable[[Mapping[str, Any]], tuple[Any, ...]] = (
            pick if len(self.names) > 1 else lambda values: (pick(values),)
        )

    def execute(self, db: sqlite3.Connection, values: Mapping[str, Any]) -> sqlite3.Cursor:
        """Run the statement on ``db`` with ``values`` by name (a ``KeyError`` names
        one that is missing)."""
        return db.execute(self.sql, self._pick(values))


def write_values(
    job: JobRecord, version: int, events: Sequence[Event], calls: Sequence[ModelCallRecord]
) -> WriteValues:
    """What a write of ``job`` as ``version`` with its new ``events`` and model ``calls``
    binds, by name: the job's columns; ``data``, its journal entry (None when there are
    no events or calls); ``last_event`` and ``last_call``, the highest seqs of the entry
    (0 for none), which its journal row and the job's row keep; ``first_event`` and
    ``first_call``, the first seqs, which must follow those stored (past any seq for
    none: a save without one checks nothing).

    Raises :class:`UsageError` if the events or the calls are not each in ``seq``
    order, without repeats, or belong to another job; a ``TypeError`` naming the path if
    a value is not plain JSON.
    """
    body = {
        "waiting": None if job.waiting is None else job.waiting.to_dict(),
        "reply": job.reply,
        "fields": job.fields,
        "state": job.state,
    }
    try:
        outcome = _OUTCOME_TEXTS[job.outcome_class]
    except (KeyError, TypeError):  # not an outcome (or unhashable): the enum says why
        outcome = None if job.outcome_class is None else str(OutcomeClass(job.outcome_class))
    try:
        first_event, last_event, first_call, last_call, document = _journal_entry(
            job.id, events, calls
        )
    except Exception:
        stored_json(body, f"job {job.id}")  # a body that is not JSON is named first
        raise
    # Both documents proved plain by one walk; else each on its own, to name the path.
    both = None if document is None else plain_dumps_all((body, document))
    data: str | None
    if both is not None:
        body_json, data = both[0].decode(), both[1].decode()
    else:
        body_json = stored_json(body, f"job {job.id}")
        data = None if document is None else _journal_json(job.id, document, events)
    try:
        status = _STATUS_TEXTS[job.status]
    except (KeyError, TypeError):  # checked last, as it always was
        status = str(JobStatus(job.status))
    return {
        "id": storable(job.id),
        "skill_id": storable(job.skill_id),
        "owner": storable(job.owner),
        "status": status,
        "outcome_class": outcome,
        "version": version,
        "created_at": storable(job.created_at),
        "updated_at": storable(job.updated_at),
        "state_version": job.state_version,
        "body": body_json,
        "data": data,
        "last_event": last_event,
        "last_call": last_call,
        "first_event": first_event or _NO_SEQ,
        "first_call": first_call or _NO_SEQ,
    }


def job_from_row(row: tuple[Any, ...]) -> JobRecord:
    """The job read from its :data:`JOB_COLUMNS` (its state version is the caller's to
    check first)."""
    job_id, skill_id, owner, status, outcome, version, created, updated, state_v, body = row
    data = orjson.loads(body)
    waiting = data["waiting"]
    return JobRecord(
        id=job_id,
        skill_id=skill_id,
        status=_STATUSES.get(status) or JobStatus(status),
        outcome_class=_OUTCOMES[outcome] if outcome in _OUTCOMES else OutcomeClass(outcome),
        owner=owner,
        created_at=created,
        updated_at=updated,
        version=version,
        waiting=None if waiting is None else Waiting.from_dict(waiting),
        reply=data["reply"],
        fields=data["fields"],
        state=data["state"],
        state_version=state_v,
    )


def with_version(job: JobRecord, version: int) -> JobRecord:
    """A shallow copy of ``job`` at ``version``: its fields copied as they are, four
    times cheaper than ``dataclasses.replace``, which rebuilds it through ``__init__``."""
    stored = object.__new__(type(job))
    stored.__dict__.update(job.__dict__)
    stored.version = version
    return stored


def _journal_entry(
    job_id: str, events: Sequence[Event], calls: Sequence[ModelCallRecord]
) -> tuple[int, int, int, int, dict[str, Any] | None]:
    """The journal entry of a save's ``events`` and ``calls``: the first and last event
    seq, the first and last model-call seq (0 for none), and the document (None when
    there are no events or calls). Checked as :func:`write_values` says."""
    if not events and not calls:
        return 0, 0, 0, 0, None
    for what, items in (("event", events), ("model call", calls)):
        last = 0
        for item in items:
            if item.job_id != job_id:
                raise UsageError(f"{what} {item.seq} belongs to job {item.job_id}, not {job_id}")
            if item.seq <= last:
                raise UsageError(
                    f"job {job_id}: {what} seq {item.seq} is already stored or out of order "
                    f"(it comes after seq {last})"
                )
            last = item.seq
    document = {
        "events": [e.to_dict() for e in events],
        "model_calls": [c.to_dict() for c in calls],
    }
    first_event, last_event = (events[0].seq, events[-1].seq) if events else (0, 0)
    first_call, last_call = (calls[0].seq, calls[-1].seq) if calls else (0, 0)
    return first_event, last_event, first_call, last_call, document


def _journal_json(job_id: str, document: dict[str, Any], events: Sequence[Event]) -> str:
    """The journal entry's JSON (:func:`stored_json`), naming the event whose data is
    not JSON if one is."""
    try:
        return stored_json(document, f"job {job_id} journal")
    except TypeError:
        for event in events:
            stored_json(event.data, f"job {job_id} event {event.seq} data")
        raise


def event_from(job_id: str, item: dict[str, Any]) -> Event:
    """An event read back from its journal form (:meth:`Event.to_dict`: the fields but
    the job id)."""
    return Event(job_id=job_id, **item)


def call_from(job_id: str, item: dict[str, Any]) -> ModelCallRecord:
    """A model call read back from its journal form (:meth:`ModelCallRecord.to_dict`)."""
    return ModelCallRecord(job_id=job_id, **item)


def stored_bytes(value: object) -> int:
    """The bytes a column's value counts for in ``bytes_for``: text its UTF-8, numbers
    8, NULL none."""
    if value is None:
        return 0
    if isinstance(value, str):
        return len(value.encode("utf-8"))
    if isinstance(value, bytes):
        return len(value)
    return 8
