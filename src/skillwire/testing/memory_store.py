"""An in-memory :class:`~skillwire.core.store.JobStore`, for users' tests and ours.

:class:`MemoryJobStore` keeps what the SQLite and PostgreSQL stores keep, with the same
rules (it passes the same contract suite, ``tests/store/contract.py``): versioned saves
where exactly one of two writers of a version wins, events and model calls whose seqs
must each follow those stored, a save that lands whole or not at all, values that must
be plain JSON (a ``TypeError`` naming the path otherwise), lone surrogates in text
mended to U+FFFD, jobs listed newest first. What it stores is copied in and out as JSON,
so a test that changes a record it read does not change the store. Nothing survives the
process; use the SQLite store for that.
"""

from __future__ import annotations

import builtins
import json
import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from skillwire.core.errors import (
    ClaimConflictError,
    JobStateTooNewError,
    UsageError,
    VersionConflict,
)
from skillwire.core.job import (
    JOB_STATE_VERSION,
    Event,
    JobRecord,
    JobStatus,
    ModelCallRecord,
    OutcomeClass,
    Waiting,
)
from skillwire.core.plainjson import mended, mended_text, plain_dumps
from skillwire.core.store import (
    Claim,
    ClaimSnapshot,
    checked_claims,
    count_claims,
    job_filters,
)

__all__ = ["MemoryJobStore"]

_TEXT_FIELDS = ("id", "skill_id", "owner", "created_at", "updated_at")


@dataclass
class _Stored:
    """One job: its columns, its body as JSON, its journal (one entry per save)."""

    row: dict[str, Any]
    body: bytes
    order: int
    last_event: int = 0
    last_call: int = 0
    journal: list[tuple[bytes, bytes]] = field(default_factory=list)


class MemoryJobStore:
    """Jobs in a dict; safe from many tasks and threads at once (one lock)."""

    def __init__(self) -> None:
        self._jobs: dict[str, _Stored] = {}
        self._lock = threading.Lock()
        self._inserted = 0
        self._closed = False
        self._claims: dict[str, builtins.list[tuple[str, str, float]]] = {}
        """Cross-job claims by key: ``(job_id, call, made_at)`` each."""

    async def create(self, job: JobRecord, events: Sequence[Event] = ()) -> JobRecord:
        """Insert ``job`` as version 1 with its first events. Raises
        :class:`VersionConflict` (expected 0) if a job with this id exists."""
        row, body = _row(job, 1)
        entry = _entry(row["id"], events, ())
        with self._lock:
            self._check_open()
            if row["id"] in self._jobs:
                raise VersionConflict(row["id"], 0, self._jobs[row["id"]].row["version"])
            self._inserted += 1
            stored = _Stored(row, body, self._inserted)
            self._append(stored, entry)
            self._jobs[row["id"]] = stored
        return _decoded(row, body)

    async def save(
        self,
        job: JobRecord,
        *,
        expected_version: int,
        events: Sequence[Event] = (),
        model_calls: Sequence[ModelCallRecord] = (),
        durable: bool = False,
        claims: Sequence[Claim] = (),
        released: Sequence[str] = (),
    ) -> JobRecord:
        """Store ``job`` as version ``expected_version + 1`` with its new events and
        model calls, all or nothing, taking ``claims`` and giving back the claims of the
        ``released`` calls. Raises :class:`ClaimConflictError` when a claim's limit is
        reached, :class:`VersionConflict` if the stored version is not
        ``expected_version``, :class:`UsageError` if a seq is stored; nothing is saved
        then. ``durable`` changes nothing: memory survives no crash, durable or not."""
        row, body = _row(job, expected_version + 1)
        entry = _entry(row["id"], events, model_calls)
        taken, given_back = checked_claims(row["id"], claims, released, mended_text)
        with self._lock:
            self._check_open()
            for claim in taken:  # first, as the SQL stores check them before the job
                count = count_claims(claim, self._claims.get(claim.key, ()))
                if claim.refused_by(count.held):
                    raise ClaimConflictError(
                        row["id"], claim.key, claim.limit, count.held, builtins.list(count.holders)
                    )
            stored = self._jobs.get(row["id"])
            if stored is None or stored.row["version"] != expected_version:
                actual = None if stored is None else stored.row["version"]
                raise VersionConflict(row["id"], expected_version, actual)
            for what, items, had in (
                ("event", events, stored.last_event),
                ("model call", model_calls, stored.last_call),
            ):
                if items and items[0].seq <= had:
                    raise UsageError(
                        f"job {row['id']}: an event or model call seq is already stored: "
                        f"{what} {items[0].seq} ({what}s up to {had} are)"
                    )
            stored.row, stored.body = row, body
            self._append(stored, entry)
            self._keep_claims(row["id"], taken, given_back)
        return _decoded(row, body)

    async def claim_ledger(self, claims: Sequence[Claim]) -> ClaimSnapshot:
        """How many claims count now against each of ``claims`` (see
        :class:`~skillwire.core.store.ClaimStore`)."""
        with self._lock:
            self._check_open()
            counts = {
                c.key: count_claims(c, self._claims.get(mended_text(c.key), ())) for c in claims
            }
        return ClaimSnapshot(counts)

    def _keep_claims(
        self, job_id: str, taken: builtins.list[Claim], released: builtins.list[str]
    ) -> None:
        """Under the lock: add the claims not held yet by their call, drop the released."""
        for claim in taken:
            held = self._claims.setdefault(claim.key, [])
            if not any(call == claim.call for _job, call, _at in held):
                held.append((job_id, claim.call, claim.at))
            before = claim.stale_before
            if before is not None:
                held[:] = [h for h in held if h[2] > before]
        if released:
            gone = set(released)
            for key, held in builtins.list(self._claims.items()):
                left = [h for h in held if not (h[0] == job_id and h[1] in gone)]
                if left:
                    self._claims[key] = left
                else:
                    del self._claims[key]

    async def get(self, job_id: str) -> JobRecord | None:
        """The job, or None. Raises :class:`JobStateTooNewError` for a newer state."""
        with self._lock:
            self._check_open()
            stored = self._jobs.get(mended_text(job_id))
            found = None if stored is None else (stored.row, stored.body)
        return None if found is None else _read(*found)

    async def ids_starting(self, prefix: str, *, limit: int = 10) -> builtins.list[str]:
        """The ids of at most ``limit`` jobs whose id starts with ``prefix``, in id
        (code point) order, as the other stores answer; no character is a wildcard."""
        if not prefix:
            raise UsageError("a job id prefix must not be empty")
        if limit < 0:
            raise UsageError(f"limit must be >= 0, not {limit}")
        wanted = mended_text(prefix)
        with self._lock:
            self._check_open()
            return sorted(i for i in self._jobs if i.startswith(wanted))[:limit]

    async def events(self, job_id: str, *, after_seq: int = 0) -> builtins.list[Event]:
        """The job's events with ``seq > after_seq``, in order."""
        key = mended_text(job_id)
        return [
            Event(job_id=key, **item) for item in self._entries(key, 0) if item["seq"] > after_seq
        ]

    async def model_calls(self, job_id: str) -> builtins.list[ModelCallRecord]:
        """The job's model calls, in order."""
        key = mended_text(job_id)
        return [ModelCallRecord(job_id=key, **item) for item in self._entries(key, 1)]

    async def list(
        self,
        *,
        owner: str | None = None,
        status: JobStatus | None = None,
        skill_id: str | None = None,
        outcome_class: OutcomeClass | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> builtins.list[JobRecord]:
        """Jobs matching every filter given, newest first: by ``created_at`` as text,
        then by insertion order (as the other stores)."""
        wanted = job_filters(
            mended_text,
            owner=owner,
            status=status,
            skill_id=skill_id,
            outcome_class=outcome_class,
            limit=limit,
            offset=offset,
        )
        with self._lock:
            self._check_open()
            matching = [
                s
                for s in self._jobs.values()
                if all(s.row[column] == value for column, value in wanted.items())
            ]
            matching.sort(key=lambda s: (s.row["created_at"].encode(), s.order), reverse=True)
            page = [(s.row, s.body) for s in matching[offset : offset + limit]]
        return [_read(row, body) for row, body in page]

    async def close(self) -> None:
        """Nothing to release; later calls raise :class:`UsageError`, as in the other
        stores."""
        self._closed = True

    def _check_open(self) -> None:
        if self._closed:
            raise UsageError("the job store is closed")

    def _append(self, stored: _Stored, entry: tuple[bytes, bytes, int, int] | None) -> None:
        if entry is not None:
            events, calls, last_event, last_call = entry
            stored.journal.append((events, calls))
            stored.last_event = max(stored.last_event, last_event)
            stored.last_call = max(stored.last_call, last_call)

    def _entries(self, job_id: str, which: int) -> builtins.list[dict[str, Any]]:
        with self._lock:
            self._check_open()
            stored = self._jobs.get(job_id)
            journal = [] if stored is None else builtins.list(stored.journal)
        return [item for entry in journal for item in orjson.loads(entry[which])]


def _row(job: JobRecord, version: int) -> tuple[dict[str, Any], bytes]:
    """The job's columns (text mended) and its body as JSON; a ``TypeError`` naming the
    path when a value is not plain JSON."""
    row: dict[str, Any] = {name: mended_text(getattr(job, name)) for name in _TEXT_FIELDS}
    row["status"] = str(JobStatus(job.status))
    row["outcome_class"] = (
        None if job.outcome_class is None else str(OutcomeClass(job.outcome_class))
    )
    row["version"] = version
    row["state_version"] = job.state_version
    body = {
        "waiting": None if job.waiting is None else job.waiting.to_dict(),
        "reply": job.reply,
        "fields": job.fields,
        "state": job.state,
    }
    return row, _json(body, f"job {job.id}")


def _entry(
    job_id: str, events: Sequence[Event], calls: Sequence[ModelCallRecord]
) -> tuple[bytes, bytes, int, int] | None:
    """A save's journal entry: its events and calls as JSON and their last seqs; None
    when there are none. :class:`UsageError` for seqs out of order or another job's."""
    if not events and not calls:
        return None
    for what, items in (("event", events), ("model call", calls)):
        last = 0
        for item in items:
            if mended_text(item.job_id) != job_id:
                raise UsageError(f"{what} {item.seq} belongs to job {item.job_id}, not {job_id}")
            if item.seq <= last:
                raise UsageError(
                    f"job {job_id}: {what} seq {item.seq} is already stored or out of order "
                    f"(it comes after seq {last})"
                )
            last = item.seq
    try:
        event_json = _json([e.to_dict() for e in events], f"job {job_id} events")
    except TypeError:
        for event in events:  # name the event whose data is not JSON, if it is one
            _json(event.data, f"job {job_id} event {event.seq} data")
        raise
    call_json = _json([c.to_dict() for c in calls], f"job {job_id} model calls")
    return (
        event_json,
        call_json,
        events[-1].seq if events else 0,
        calls[-1].seq if calls else 0,
    )


def _json(value: object, what: str) -> bytes:
    """JSON of ``value``, which must read back equal (surrogates mended first)."""
    data = plain_dumps(value)
    if data is not None:
        return data
    value = mended(value)
    try:
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{what}: {_first_non_json(value) or err}") from err
    if json.loads(text) != value:
        raise TypeError(f"{what}: {_first_non_json(value) or 'does not read back equal'}")
    return text.encode()


def _first_non_json(value: object, path: str = "$", depth: int = 0) -> str | None:
    """Where ``value`` first holds what JSON cannot hold as it is, or None."""
    if depth > 200:
        return f"{path} nests too deep"
    if isinstance(value, float) and not math.isfinite(value):
        return f"{path} is {value!r}, which JSON cannot hold"
    if type(value) is dict:
        for key, item in value.items():
            if type(key) is not str:
                return f"{path} has a key of type {type(key).__name__} ({key!r})"
            found = _first_non_json(item, f"{path}.{key}", depth + 1)
            if found:
                return found
        return None
    if type(value) is list:
        for index, item in enumerate(value):
            found = _first_non_json(item, f"{path}[{index}]", depth + 1)
            if found:
                return found
        return None
    if value is None or type(value) in (str, int, float, bool):
        return None
    return f"{path} has type {type(value).__name__}, which is not JSON"


def _read(row: dict[str, Any], body: bytes) -> JobRecord:
    """The job read back; :class:`JobStateTooNewError` for a state newer than this code."""
    if row["state_version"] > JOB_STATE_VERSION:
        raise JobStateTooNewError(row["id"], row["state_version"])
    return _decoded(row, body)


def _decoded(row: dict[str, Any], body: bytes) -> JobRecord:
    data = orjson.loads(body)
    waiting = data["waiting"]
    return JobRecord(
        id=row["id"],
        skill_id=row["skill_id"],
        status=JobStatus(row["status"]),
        outcome_class=None if row["outcome_class"] is None else OutcomeClass(row["outcome_class"]),
        owner=row["owner"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        version=row["version"],
        waiting=None if waiting is None else Waiting.from_dict(waiting),
        reply=data["reply"],
        fields=data["fields"],
        state=data["state"],
        state_version=row["state_version"],
    )
