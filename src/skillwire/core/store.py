"""The ``JobStore`` protocol: where jobs, their events and model calls are kept.

Implemented in SQLite (``skillwire.store.SQLiteJobStore``, the embedded default), in
PostgreSQL (``skillwire.store.postgres.PostgresJobStore``) and in memory, for tests
(``skillwire.testing.MemoryJobStore``); ``tests/store/test_contract.py`` is what each
must pass. A save is one transaction:
the job's new row, its new events and model calls, all or nothing, and only if the
stored version is the one the caller read (optimistic concurrency).
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Protocol

from skillwire.core.job import Event, JobRecord, JobStatus, ModelCallRecord, OutcomeClass

__all__ = ["JobStore"]


class JobStore(Protocol):
    """Persistence of jobs. Every method is safe to call from many tasks at once."""

    async def create(self, job: JobRecord, events: Sequence[Event] = ()) -> JobRecord:
        """Insert a new job (version 1) with its first events; returns it as stored."""
        ...

    async def save(
        self,
        job: JobRecord,
        *,
        expected_version: int,
        events: Sequence[Event] = (),
        model_calls: Sequence[ModelCallRecord] = (),
    ) -> JobRecord:
        """Store ``job`` as version ``expected_version + 1`` with its new events and
        model calls in one transaction. Raises :class:`VersionConflict` otherwise."""
        ...

    async def get(self, job_id: str) -> JobRecord | None:
        """The job, or None."""
        ...

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
        """Jobs matching every filter given, newest first."""
        ...

    async def events(self, job_id: str, *, after_seq: int = 0) -> builtins.list[Event]:
        """The job's events after ``after_seq``, in order."""
        ...

    async def model_calls(self, job_id: str) -> builtins.list[ModelCallRecord]:
        """The job's model calls, in order."""
        ...

    async def close(self) -> None:
        """Release connections."""
        ...
