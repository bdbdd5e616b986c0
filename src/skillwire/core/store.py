"""The ``JobStore`` protocol: where jobs, their events and model calls are kept.

Implemented in SQLite (``skillwire.store.SQLiteJobStore``, the embedded default), in
PostgreSQL (``skillwire.store.postgres.PostgresJobStore``) and in memory, for tests
(``skillwire.testing.MemoryJobStore``); ``tests/store/test_contract.py`` is what each
must pass. A save is one transaction:
the job's new row, its new events and model calls, all or nothing, and only if the
stored version is the one the caller read (optimistic concurrency).

Cross-job claims (``once_per`` and ``rate_limit`` of a tool's policy) are kept by the
store too: a save may take :class:`Claim` values, in the same transaction as the job's
row, and the store refuses the whole save with
:class:`~skillwire.core.errors.ClaimConflictError` when a claim's limit is reached, so
two jobs racing for the same order id cannot both pass. The gate reads the claims
through :class:`ClaimLedger` (a snapshot the engine takes with
:meth:`ClaimStore.claim_ledger`), never through a store.
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from skillwire.core.errors import NotFoundError, UsageError
from skillwire.core.job import Event, JobRecord, JobStatus, ModelCallRecord, OutcomeClass

__all__ = [
    "PREFIX_CANDIDATES",
    "Claim",
    "ClaimCount",
    "ClaimLedger",
    "ClaimSnapshot",
    "ClaimStore",
    "JobStore",
    "SkillVersion",
    "SkillVersionStore",
    "after_prefix",
    "checked_claims",
    "claim_key",
    "claim_parts",
    "count_claims",
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
        claims: Sequence[Claim] = (),
        released: Sequence[str] = (),
    ) -> JobRecord:
        """Store ``job`` as version ``expected_version + 1`` with its new events and
        model calls in one transaction. Raises :class:`VersionConflict` otherwise.

        ``claims`` are taken in the same transaction: when one's limit is reached
        (:meth:`Claim.refused_by`) nothing is saved and
        :class:`~skillwire.core.errors.ClaimConflictError` is raised. A claim the job
        already holds for the same call is kept, not taken twice. ``released`` are the
        calls (their idempotency keys) of this job whose claims are given back: a run
        that failed.

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


@dataclass(frozen=True, slots=True)
class Claim:
    """One use of a cross-job limit that a tool call takes when it starts: at most
    :attr:`limit` claims on :attr:`key`, over every job of the store, made in the
    :attr:`window` seconds before :attr:`at` (``None``: ever).

    ``once_per: args.order_id`` is a claim of limit 1 and no window on a key naming the
    skill, the tool and the order id; ``rate_limit: {max: 3, per: 1h, scope: user}`` one
    of limit 3 and a window of 3600 s on a key naming the skill, the tool and the user.
    """

    key: str
    """What is counted (:func:`claim_key` of the skill, tool, rule and value)."""
    limit: int
    """At most this many claims on the key (within the window)."""
    window: float | None
    """The window in seconds before :attr:`at`; None counts every claim ever made."""
    at: float
    """When the claim is made (POSIX seconds, the job's clock)."""
    call: str = ""
    """The call taking it (its idempotency key), set when the call starts: the claim is
    given back by that key when the call fails."""

    @property
    def since(self) -> float | None:
        """Claims made after this time count (None: all)."""
        return None if self.window is None else self.at - self.window

    @property
    def stale_before(self) -> float | None:
        """A store keeping this claim deletes its key's claims made at or before this
        time: two windows before :attr:`at` (None: a claim without a window deletes
        nothing). The second window is a margin for clocks: a worker whose clock runs
        ahead of the others' by less than a window deletes nothing they still count.
        A window made longer in a later version of the skill counts only the claims
        kept under the shorter one (docs/gate.md, "Limits across jobs")."""
        return None if self.window is None else self.at - 2 * self.window

    def counts(self, made_at: float) -> bool:
        """Whether a claim on the same key made at ``made_at`` counts against this one."""
        since = self.since
        return since is None or made_at > since

    def refused_by(self, held: int) -> bool:
        """Whether ``held`` claims on the key (in the window) leave no room for this one."""
        return held >= self.limit


def claim_key(*parts: str) -> str:
    """A claim key from its parts (skill, tool, rule, value), unambiguous whatever the
    parts hold: each part is JSON text, joined by ``/``."""
    return "/".join(json.dumps(part, ensure_ascii=False) for part in parts)


def claim_parts(key: str) -> list[str]:
    """The parts :func:`claim_key` joined (an empty list for a key it did not make)."""
    decoder, parts, at = json.JSONDecoder(), [], 0
    try:
        while at < len(key):
            part, at = decoder.raw_decode(key, at)
            parts.append(str(part))
            if at < len(key) and key[at] != "/":
                return []
            at += 1
    except ValueError:
        return []
    return parts


@dataclass(frozen=True, slots=True)
class ClaimCount:
    """How many claims on a key count now, and (some of) the jobs holding them."""

    key: str
    held: int
    holders: tuple[str, ...] = ()
    """The ids of at most three jobs holding a claim on the key (for messages)."""


class ClaimLedger(Protocol):
    """What the gate reads about claims across jobs (synchronously: a snapshot)."""

    def held(self, claim: Claim) -> ClaimCount | None:
        """The claims on ``claim.key`` that count against it; None when this ledger
        was not asked about that key (the gate then fails closed)."""
        ...


@dataclass(frozen=True)
class ClaimSnapshot:
    """A :class:`ClaimLedger` holding the counts a store read for some claims."""

    counts: Mapping[str, ClaimCount] = field(default_factory=dict)

    def held(self, claim: Claim) -> ClaimCount | None:
        """The count read for ``claim.key``, or None."""
        return self.counts.get(claim.key)


@runtime_checkable
class ClaimStore(Protocol):
    """A job store that keeps cross-job claims (every store skillwire ships does).
    A skill with ``once_per`` or ``rate_limit`` needs one: the gate fails closed
    without it."""

    async def claim_ledger(self, claims: Sequence[Claim]) -> ClaimSnapshot:
        """How many claims count now against each of ``claims`` (each in its own
        window), read in one go. A claim held by the same call (``claim.call``) is
        not counted against it."""
        ...


def count_claims(
    claim: Claim, held: Iterable[tuple[str, str, float]], *, limit_holders: int = 3
) -> ClaimCount:
    """The :class:`ClaimCount` of ``claim`` from the claims stored on its key, each
    ``(job_id, call, made_at)``: those made in its window, but not the claim's own call
    (a call started again after a crash keeps the claim it has)."""
    jobs: list[str] = []
    held_now = 0
    for job_id, call, made_at in held:
        if claim.call and call == claim.call:
            continue
        if claim.counts(made_at):
            held_now += 1
            if job_id not in jobs and len(jobs) < limit_holders:
                jobs.append(job_id)
    return ClaimCount(claim.key, held_now, tuple(jobs))


def checked_claims(
    job_id: str, claims: Sequence[Claim], released: Sequence[str], mend: Callable[[str], str]
) -> tuple[list[Claim], list[str]]:
    """The claims and released calls of a save, their text mended as the store keeps
    text; :class:`UsageError` for a claim no store could keep (no key or call, a limit
    below 0, a time or window that is not a finite number)."""
    kept: list[Claim] = []
    for claim in claims:
        window_ok = claim.window is None or (
            isinstance(claim.window, int | float) and 0 <= claim.window < float("inf")
        )
        if (
            not claim.key
            or not claim.call
            or type(claim.limit) is not int
            or claim.limit < 0
            or not isinstance(claim.at, int | float)
            or not -1e12 < claim.at < 1e12
            or not window_ok
        ):
            raise UsageError(f"job {job_id}: a claim no store can keep: {claim!r}")
        kept.append(
            Claim(mend(claim.key), claim.limit, claim.window, float(claim.at), mend(claim.call))
        )
    return kept, [mend(call) for call in released]


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
