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
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from skillwire.core.errors import NotFoundError, UsageError
from skillwire.core.job import Event, JobRecord, JobStatus, ModelCallRecord, OutcomeClass

__all__ = [
    "PREFIX_CANDIDATES",
    "JobStore",
    "SkillVersion",
    "SkillVersionStore",
    "after_prefix",
    "job_filters",
    "resolve_job_id",
]

PREFIX_CANDIDATES = 10
"""How many jobs an ambiguous job id prefix lists (:func:`resolve_job_id`)."""


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
        durable: bool = False,
    ) -> JobRecord:
        """Store ``job`` as version ``expected_version + 1`` with its new events and
        model calls in one transaction. Raises :class:`VersionConflict` otherwise.

        ``durable``: return only once the save would survive a power loss (an OS
        crash included). The engine asks it for the save before a tool that is not
        idempotent runs and for the save of every pause; a store may group the syncs of
        concurrent durable saves, and a store whose every commit is durable, or one
        configured to sync nothing, ignores it (docs/engine.md, "Durability")."""
        ...

    async def get(self, job_id: str) -> JobRecord | None:
        """The job, or None."""
        ...

    async def ids_starting(self, prefix: str, *, limit: int = 10) -> builtins.list[str]:
        """The ids of at most ``limit`` jobs whose id starts with ``prefix``, in id order.

        ``prefix`` is compared as text, character for character: no character is a
        wildcard. An empty prefix is a :class:`UsageError` (it is no job's id)."""
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


@dataclass(frozen=True)
class SkillVersion:
    """One version of a skill as loaded: its content hash and every file it was read
    from, enough to load that version again after its files changed."""

    skill_id: str
    version: str
    """The content hash (``skillwire.skills.versions``)."""
    source: str
    """The file or folder it was loaded from."""
    format: str
    """``yaml``, ``json`` or ``package``."""
    files: Mapping[str, bytes] = field(default_factory=dict)
    """Every file, by path relative to the skill's folder."""
    created_at: str = ""
    """When the store first saw this version (UTC, ISO 8601)."""
    pinned: bool = False
    """Whether new jobs of the skill start on this version (an operator's pin)."""


@runtime_checkable
class SkillVersionStore(Protocol):
    """A store that keeps skill versions, so that a job resumes on the version it started
    on, whatever the files say now. Optional: a store without it keeps no versions."""

    async def put_skill_version(self, version: SkillVersion) -> bool:
        """Keep ``version`` (its ``created_at`` and ``pinned`` are the store's); False
        when the store had it already."""
        ...

    async def skill_versions(self, skill_id: str) -> builtins.list[SkillVersion]:
        """Every version kept of the skill, oldest first, with its files."""
        ...

    async def pin_skill(self, skill_id: str, version: str | None) -> None:
        """Make new jobs start on ``version`` (kept already), or on the loaded one
        (None). Raises NotFoundError for a version not kept."""
        ...


async def resolve_job_id(
    store: JobStore,
    text: str,
    *,
    visible: Callable[[str], Awaitable[bool]] | None = None,
) -> str:
    """The id of the one job whose id is ``text`` or starts with it.

    A job whose id is ``text`` itself is chosen whatever other ids start with it. With
    ``visible``, only the jobs it accepts count as candidates (the caller checks the
    job it gets, as it would a full id). Raises :class:`NotFoundError` when no job
    fits, :class:`UsageError` naming the candidates (at most
    :data:`PREFIX_CANDIDATES`) when several do or when more might.
    """
    if not text:
        raise UsageError("give a job id (or the start of one)")
    found = await store.ids_starting(text, limit=PREFIX_CANDIDATES + 1)
    if text in found:
        return text
    crowded = len(found) > PREFIX_CANDIDATES  # more ids may start with it than were read
    found = found[:PREFIX_CANDIDATES]
    if visible is not None:
        found = [job_id for job_id in found if await visible(job_id)]
    if len(found) == 1 and not crowded:
        return found[0]
    if not found and not crowded:
        raise NotFoundError(f"no job '{text}'")
    listed = ", ".join(found) if found else "none you may see among the first ones"
    many = f"more than {PREFIX_CANDIDATES}" if crowded else str(len(found))
    raise UsageError(
        f"job id '{text}' is ambiguous: {many} jobs start with it ({listed}); give more of the id"
    )


def after_prefix(prefix: str) -> str | None:
    """The least string greater than every string that starts with ``prefix`` (None if
    there is none: ``prefix`` is all U+10FFFF), for a store's ``ids_starting`` as one
    range of an index: ``prefix <= id < after_prefix(prefix)``.

    Valid where text compares by code point (UTF-8 bytes: SQLite, PostgreSQL's ``C``
    collation): the prefix with its last character raised by one (a last character that
    cannot be raised is dropped first; surrogates, which stored text never holds, are
    skipped).
    """
    chars = list(prefix)
    while chars:
        raised = ord(chars.pop()) + 1
        if raised == 0xD800:
            raised = 0xE000
        if raised <= 0x10FFFF:
            return "".join(chars) + chr(raised)
    return None


def job_filters(
    mend: Callable[[str], str],
    *,
    owner: str | None,
    status: JobStatus | None,
    skill_id: str | None,
    outcome_class: OutcomeClass | None,
    limit: int,
    offset: int,
) -> dict[str, str]:
    """``{column: value}`` of the filters a store's ``list`` was given (each value as
    text, mended as the store keeps text); :class:`UsageError` for a negative limit or
    offset. The one reading of ``list``'s arguments that every store shares."""
    if limit < 0 or offset < 0:
        raise UsageError(f"limit and offset must be >= 0, not {limit} and {offset}")
    return {
        column: mend(str(value))
        for column, value in (
            ("owner", owner),
            ("status", status),
            ("skill_id", skill_id),
            ("outcome_class", outcome_class),
        )
        if value is not None
    }
