"""The job store for a team: PostgreSQL, through psycopg 3 (async) and a connection pool.

Selected by a ``postgresql://`` (or ``postgres://``) URL as the database: ``[runtime] db``
in ``skillwire.toml`` or ``$SKILLWIRE_DB``. Needs the ``postgres`` extra (``pip install
'skillwire[postgres]'``). Schema and migrations: :mod:`~skillwire.store.postgres_migrations`.

A save is one transaction: ``UPDATE jobs ... WHERE id = ... AND version = expected AND
last_event < first_event AND last_call < first_call`` followed by the save's ``journal``
row, as in the SQLite store. Under PostgreSQL's row locks two saves of the same job from
two processes are ordered: the second waits for the first to commit, then finds the
version changed and updates nothing, so exactly one wins (:class:`VersionConflict` for
the other) and a resume is applied once across machines. Each committed create and
save also sends ``NOTIFY skillwire_jobs, '<job id>'`` (delivered on commit), which
:meth:`PostgresJobStore.listen` turns into live updates in other processes.

Text: PostgreSQL's ``text`` cannot hold U+0000, so in the job's own text columns (id,
skill, owner, times) and in the ids and filters the store is given, U+0000 becomes
U+FFFD, as lone surrogates do in both stores (:mod:`~skillwire.store._stored_json`). JSON
documents (the job's body, events, model calls) keep it: they are stored as ``json``.
The same holds for skill versions (the optional ``SkillVersionStore``): the skill id,
version, source and format are text, the files a ``json`` document.

Errors raised on purpose: ``StoreUnavailableError`` (the server cannot be reached, the
URL is wrong, the extra is missing; the message never shows the password),
``SchemaTooNewError``, ``JobStateTooNewError``, ``UsageError``, ``VersionConflict``,
``NotFoundError`` (a pin of a skill version not kept), and a
``TypeError`` when a value to persist is not plain JSON, all as the SQLite store does.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import replace
from types import TracebackType
from typing import TYPE_CHECKING, Any

import orjson

from skillwire.core.errors import (
    JobStateTooNewError,
    StoreUnavailableError,
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
)
from skillwire.core.store import (
    Claim,
    ClaimCount,
    ClaimSnapshot,
    SkillVersion,
    after_prefix,
    checked_claims,
    job_filters,
)
from skillwire.store import _pg_claims, _pg_skill_versions
from skillwire.store._rows import (
    WriteValues,
    call_from,
    event_from,
    job_from_row,
    with_version,
    write_values,
)
from skillwire.store._stored_json import storable

if TYPE_CHECKING:
    from psycopg import AsyncConnection
    from psycopg_pool import AsyncConnectionPool

__all__ = ["CHANNEL", "PostgresJobStore", "connect_sync", "is_postgres_url", "prepare", "safe_url"]

log = logging.getLogger("skillwire.store")

CHANNEL = "skillwire_jobs"
"""The NOTIFY channel a committed create or save is announced on (payload: job id)."""

_COLUMNS = (
    "id, skill_id, owner, status, outcome_class, version, created_at, updated_at, "
    "state_version, body::text"
)
_INSERT_JOB = (
    "WITH added AS (INSERT INTO jobs (id, skill_id, owner, status, outcome_class, version, "
    "created_at, updated_at, state_version, body, last_event, last_call) VALUES (%(id)s, "
    "%(skill_id)s, %(owner)s, %(status)s, %(outcome_class)s, %(version)s, %(created_at)s, "
    "%(updated_at)s, %(state_version)s, %(body)s::json, %(last_event)s, %(last_call)s) "
    f"ON CONFLICT (id) DO NOTHING RETURNING id) SELECT pg_notify('{CHANNEL}', id) FROM added"
)
_UPDATE_JOB = (
    "WITH saved AS (UPDATE jobs SET skill_id = %(skill_id)s, owner = %(owner)s, "
    "status = %(status)s, outcome_class = %(outcome_class)s, version = %(version)s, "
    "created_at = %(created_at)s, updated_at = %(updated_at)s, "
    "state_version = %(state_version)s, body = %(body)s::json, "
    "last_event = greatest(last_event, %(last_event)s), "
    "last_call = greatest(last_call, %(last_call)s) "
    "WHERE id = %(id)s AND version = %(version)s - 1 AND last_event < %(first_event)s "
    "AND last_call < %(first_call)s RETURNING id) "
    f"SELECT pg_notify('{CHANNEL}', id) FROM saved"
)
"""A save's checks (the version it read, seqs that follow those stored) and its write,
announced on :data:`CHANNEL` when it lands."""
_APPEND = (
    "INSERT INTO journal (job_id, version, last_event, last_call, data) "
    "VALUES (%(id)s, %(version)s, %(last_event)s, %(last_call)s, %(data)s::json)"
)
_TEXT_COLUMNS = ("id", "skill_id", "owner", "created_at", "updated_at")


def is_postgres_url(db: object) -> bool:
    """Whether ``db`` (a path or a URL) names a PostgreSQL database."""
    return isinstance(db, str) and db.startswith(("postgresql://", "postgres://"))


def safe_url(url: str) -> str:
    """``url`` without its password, for messages and listings."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    credentials, at, place = rest.rpartition("@")
    if not at:
        return url
    user = credentials.split(":", 1)[0]
    return f"{scheme}://{user}{':***' if ':' in credentials else ''}@{place}"


def _pg_text(text: str) -> str:
    """``text`` as PostgreSQL's ``text`` can hold it: U+0000 becomes U+FFFD."""
    return text.replace("\x00", "\ufffd") if "\x00" in text else text


def _key(job_id: str) -> str:
    return _pg_text(storable(job_id))


class PostgresJobStore:
    """A :class:`~skillwire.core.store.JobStore` in a PostgreSQL database.

    The constructor connects once, synchronously, to migrate the schema (build the store
    at start-up; ``migrate=False`` only checks that the schema is current) and raises
    :class:`StoreUnavailableError` or :class:`SchemaTooNewError`. The connection pool
    (``max_connections`` at most) opens on the first call, on the running event loop; a
    call from another loop (``asyncio.run`` twice) opens a new pool there.

    Durability is the server's: a save has committed when it returns. A task cancelled
    while awaiting a save may still have committed it: read the job again before
    retrying (the version check keeps a retry from being applied twice).
    """

    def __init__(self, url: str, *, max_connections: int = 10, migrate: bool = True) -> None:
        if not is_postgres_url(url):
            raise UsageError(f"not a PostgreSQL URL: {safe_url(url)!r}")
        if max_connections < 1:
            raise UsageError(f"max_connections must be >= 1, not {max_connections}")
        self.url = url
        self.where = safe_url(url)
        self._max = max_connections
        self._pool: AsyncConnectionPool[Any] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._opening: asyncio.Lock | None = None
        self._closed = False
        self.schema_found = prepare(url, migrate=migrate)

    # -- the public API ---------------------------------------------------------------

    async def create(self, job: JobRecord, events: Sequence[Event] = ()) -> JobRecord:
        """Insert ``job`` as version 1 with its first events; returns it as stored.
        Raises :class:`VersionConflict` (expected 0) if a job with this id exists."""
        values = _pg_values(write_values(job, 1, events, ()))
        async with self._connection() as conn:
            added = await conn.execute(_INSERT_JOB, values)
            if added.rowcount == 0:
                raise VersionConflict(values["id"], 0, await _version(conn, values["id"]))
            if values["data"] is not None:
                await conn.execute(_APPEND, values)
        return with_version(job, 1)

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
        """Store ``job`` as version ``expected_version + 1`` with its new events and model
        calls, all or nothing, taking ``claims`` and giving back the ``released`` calls'
        claims in the same transaction. Raises :class:`ClaimConflictError` when a
        claim's limit is reached (each key's count is taken under
        ``pg_advisory_xact_lock`` of the key, so concurrent saves count one after the
        other), :class:`VersionConflict` if the stored version is not
        ``expected_version``, :class:`UsageError` if a seq is already stored.

        Every commit here is durable (the server's ``synchronous_commit``, on by
        default, waits for its WAL to be flushed), so ``durable`` asks nothing more."""
        values = _pg_values(write_values(job, expected_version + 1, events, model_calls))
        taken, given_back = checked_claims(values["id"], claims, released, _key)
        async with self._connection() as conn:
            await _pg_claims.check_claims(conn, values["id"], taken)
            saved = await conn.execute(_UPDATE_JOB, values)
            if saved.rowcount == 0:
                await _refuse(conn, values)
            await _pg_claims.keep_claims(conn, values["id"], taken, given_back)
            if values["data"] is not None:
                await conn.execute(_APPEND, values)
        return with_version(job, expected_version + 1)

    async def claim_ledger(self, claims: Sequence[Claim]) -> ClaimSnapshot:
        """How many claims count now against each of ``claims`` (see
        :class:`~skillwire.core.store.ClaimStore`)."""
        counts: dict[str, ClaimCount] = {}
        async with self._connection() as conn:
            for claim in claims:
                found = await _pg_claims.count(conn, replace(claim, key=_key(claim.key)))
                counts[claim.key] = replace(found, key=claim.key)
        return ClaimSnapshot(counts)

    async def get(self, job_id: str) -> JobRecord | None:
        """The job, or None. Raises :class:`JobStateTooNewError` for a newer state."""
        async with self._connection() as conn:
            found = await conn.execute(
                f"SELECT {_COLUMNS} FROM jobs WHERE id = %s", (_key(job_id),)
            )
            row = await found.fetchone()
        return None if row is None else _job_read(row)

    async def ids_starting(self, prefix: str, *, limit: int = 10) -> list[str]:
        """The ids of at most ``limit`` jobs whose id starts with ``prefix``, in id order:
        one range of the primary key (``COLLATE "C"``: code point order), no character
        a wildcard. Raises :class:`UsageError` for an empty prefix or a negative limit."""
        if not prefix:
            raise UsageError("a job id prefix must not be empty")
        if limit < 0:
            raise UsageError(f"limit must be >= 0, not {limit}")
        low = _key(prefix)
        high = after_prefix(low)
        async with self._connection() as conn:
            if high is None:  # the prefix is all U+10FFFF: every id from it on starts with it
                found = await conn.execute(
                    "SELECT id FROM jobs WHERE id >= %s ORDER BY id LIMIT %s", (low, limit)
                )
            else:
                found = await conn.execute(
                    "SELECT id FROM jobs WHERE id >= %s AND id < %s ORDER BY id LIMIT %s",
                    (low, high, limit),
                )
            rows = await found.fetchall()
        return [row[0] for row in rows]

    async def events(self, job_id: str, *, after_seq: int = 0) -> list[Event]:
        """The job's events with ``seq > after_seq``, in order."""
        key = _key(job_id)
        async with self._connection() as conn:
            found = await conn.execute(
                "SELECT data::text FROM journal WHERE job_id = %s AND last_event > %s "
                "ORDER BY version",
                (key, after_seq),
            )
            rows = await found.fetchall()
        return [
            event_from(key, item)
            for (data,) in rows
            for item in orjson.loads(data)["events"]
            if item["seq"] > after_seq
        ]

    async def model_calls(self, job_id: str) -> list[ModelCallRecord]:
        """The job's model calls, in order."""
        key = _key(job_id)
        async with self._connection() as conn:
            found = await conn.execute(
                "SELECT data::text FROM journal WHERE job_id = %s AND last_call > 0 "
                "ORDER BY version",
                (key,),
            )
            rows = await found.fetchall()
        return [
            call_from(key, item) for (data,) in rows for item in orjson.loads(data)["model_calls"]
        ]

    async def listen(self) -> AsyncIterator[str]:
        """The ids of jobs created or saved by any process, as their transactions
        commit (LISTEN on :data:`CHANNEL`, on a connection of its own)."""
        from psycopg import AsyncConnection

        conn = await _connect(AsyncConnection.connect, self.url, self.where, autocommit=True)
        try:
            await conn.execute(f"LISTEN {CHANNEL}")
            async for note in conn.notifies():
                yield note.payload
        finally:
            await conn.close()

    async def follow(self, notify: Callable[[str], None], *, retry_seconds: float = 1.0) -> None:
        """Call ``notify(job_id)`` for every job any process creates or saves, as its
        transaction commits, until cancelled. A lost connection is logged and made again
        after ``retry_seconds``; changes committed meanwhile are not announced (readers
        that must not miss one also poll, as the server's streams do)."""
        while True:
            try:
                async for job_id in self.listen():
                    notify(job_id)
            except asyncio.CancelledError:
                raise
            except Exception as err:
                log.warning("%s: listening for job changes failed: %s", self.where, err)
            await asyncio.sleep(retry_seconds)

    # -- skill versions (core.store.SkillVersionStore) ----------------------------------

    async def put_skill_version(self, version: SkillVersion) -> bool:
        """Keep ``version`` of a skill; False when it was kept already (a version is a
        content hash: the row is never changed)."""
        kept = replace(
            version,
            skill_id=_key(version.skill_id),
            version=_key(version.version),
            source=_key(version.source),
            format=_key(version.format),
        )
        async with self._connection() as conn:
            return await _pg_skill_versions.put_version(conn, kept)

    async def skill_versions(self, skill_id: str) -> list[SkillVersion]:
        """Every version kept of ``skill_id``, oldest first, with its files and pin."""
        async with self._connection() as conn:
            return await _pg_skill_versions.read_versions(conn, _key(skill_id))

    async def pin_skill(self, skill_id: str, version: str | None) -> None:
        """New jobs of ``skill_id`` start on ``version`` (None: on the loaded one).
        Raises NotFoundError for a version not kept."""
        async with self._connection() as conn:
            await _pg_skill_versions.pin_skill(
                conn, _key(skill_id), None if version is None else _key(version)
            )

    async def close(self) -> None:
        """Close the pool. Calls made after ``close`` raise :class:`UsageError`."""
        self._closed = True
        pool, self._pool = self._pool, None
        if pool is not None and self._loop is asyncio.get_running_loop():
            await pool.close()

    async def __aenter__(self) -> PostgresJobStore:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    # -- connections ------------------------------------------------------------------

    def _connection(self) -> Any:
        """``async with`` a pooled connection in a transaction (committed at the end,
        rolled back on an error)."""
        return _Borrowed(self)

    async def _pool_here(self) -> AsyncConnectionPool[Any]:
        if self._closed:
            raise UsageError("the job store is closed")
        loop = asyncio.get_running_loop()
        if self._pool is not None and self._loop is loop:
            return self._pool
        if self._opening is None or self._loop is not loop:
            self._opening, self._loop, self._pool = asyncio.Lock(), loop, None
        async with self._opening:
            if self._pool is None:
                from psycopg_pool import AsyncConnectionPool

                pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
                    self.url, min_size=1, max_size=self._max, open=False, timeout=30
                )
                try:
                    await pool.open(wait=True, timeout=30)
                except Exception as err:
                    await pool.close()
                    raise StoreUnavailableError(
                        f"{self.where}: cannot connect to PostgreSQL: {err}"
                    ) from None
                self._pool = pool
            return self._pool

    async def list(  # last in the class: below it, "list" would name this method
        self,
        *,
        owner: str | None = None,
        status: JobStatus | None = None,
        skill_id: str | None = None,
        outcome_class: OutcomeClass | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[JobRecord]:
        """Jobs matching every filter given, newest first: by ``created_at`` as text,
        then by insertion order (as the SQLite store)."""
        filters = job_filters(
            _key,
            owner=owner,
            status=status,
            skill_id=skill_id,
            outcome_class=outcome_class,
            limit=limit,
            offset=offset,
        )
        where = " AND ".join(f"{column} = %({column})s" for column in filters)
        sql = (
            f"SELECT {_COLUMNS} FROM jobs {f'WHERE {where} ' if where else ''}"
            "ORDER BY created_at DESC, inserted DESC LIMIT %(limit)s OFFSET %(offset)s"
        )
        async with self._connection() as conn:
            found = await conn.execute(sql, filters | {"limit": limit, "offset": offset})
            rows = await found.fetchall()
        return [_job_read(row) for row in rows]


class _Borrowed:
    """A pooled connection, borrowed for one transaction."""

    def __init__(self, store: PostgresJobStore) -> None:
        self._store = store
        self._borrowed: Any = None

    async def __aenter__(self) -> AsyncConnection[Any]:
        pool = await self._store._pool_here()
        self._borrowed = pool.connection()
        conn: AsyncConnection[Any] = await self._borrowed.__aenter__()
        return conn

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self._borrowed.__aexit__(exc_type, exc, tb)


def prepare(url: str, *, migrate: bool = True) -> int:
    """Connect to ``url`` once and migrate its schema (or, with ``migrate=False``, check
    that it is current); return the schema version found. Raises
    :class:`StoreUnavailableError` or :class:`SchemaTooNewError`."""
    from skillwire.store import postgres_migrations as pgm

    where = safe_url(url)
    with connect_sync(url) as conn:
        if migrate:
            return pgm.migrate(conn, where=where)
        found = pgm.schema_version(conn)
    if found != pgm.PG_SCHEMA_VERSION:
        from skillwire.core.errors import SchemaTooNewError

        if found > pgm.PG_SCHEMA_VERSION:
            raise SchemaTooNewError(where, found, pgm.PG_SCHEMA_VERSION)
        raise StoreUnavailableError(
            f"{where}: schema version {found}, this skillwire needs "
            f"{pgm.PG_SCHEMA_VERSION}: run 'skillwire db migrate'"
        )
    return found


def connect_sync(url: str) -> Any:
    """A synchronous psycopg connection to ``url`` (autocommit), for migrations and
    status; :class:`StoreUnavailableError` when it cannot be made."""
    psycopg = _psycopg()
    return _connect(psycopg.connect, url, safe_url(url), autocommit=True)


def _psycopg() -> Any:
    try:
        import psycopg
        import psycopg_pool  # noqa: F401 - checked here, used by the store
    except ImportError:
        raise StoreUnavailableError(
            "a PostgreSQL database needs the postgres extra: pip install 'skillwire[postgres]'"
        ) from None
    return psycopg


def _connect(connect: Any, url: str, where: str, **options: Any) -> Any:
    """``connect(url)``, its failure a :class:`StoreUnavailableError` without the URL's
    password (which psycopg's messages do not show either)."""
    _psycopg()
    import psycopg

    try:
        return connect(url, connect_timeout=10, **options)
    except (psycopg.Error, ValueError) as err:
        raise StoreUnavailableError(f"{where}: cannot connect to PostgreSQL: {err}") from None


def _pg_values(values: WriteValues) -> WriteValues:
    for column in _TEXT_COLUMNS:
        values[column] = _pg_text(values[column])
    return values


def _job_read(row: tuple[Any, ...]) -> JobRecord:
    job_id, state_version = row[0], row[8]
    if state_version > JOB_STATE_VERSION:
        raise JobStateTooNewError(job_id, state_version)
    return job_from_row(row)


async def _version(conn: AsyncConnection[Any], job_id: str) -> int | None:
    found = await conn.execute("SELECT version FROM jobs WHERE id = %s", (job_id,))
    row = await found.fetchone()
    return None if row is None else int(row[0])


async def _refuse(conn: AsyncConnection[Any], values: WriteValues) -> None:
    """Raise why a save that wrote nothing was refused (see the SQLite store's)."""
    job_id, expected = values["id"], values["version"] - 1
    found = await conn.execute(
        "SELECT version, last_event, last_call FROM jobs WHERE id = %s", (job_id,)
    )
    row = await found.fetchone()
    if row is None or row[0] != expected:
        raise VersionConflict(job_id, expected, None if row is None else int(row[0]))
    for what, first, had in (
        ("event", values["first_event"], row[1]),
        ("model call", values["first_call"], row[2]),
    ):
        if first <= had:
            raise UsageError(
                f"job {job_id}: an event or model call seq is already stored: {what} {first} "
                f"({what}s up to {had} are)"
            )
    raise AssertionError(f"job {job_id}: a save at version {expected} wrote nothing")
