"""The PostgreSQL store beyond the contract: its schema and migrations, connection
errors that never show a password, NOTIFY on commit, two processes migrating at once."""

from __future__ import annotations

import asyncio
import threading
from dataclasses import replace

import psycopg
import pytest
from tests.store.test_contract import event, make_job

from skillwire.core.errors import SchemaTooNewError, StoreUnavailableError, UsageError
from skillwire.store.postgres import PostgresJobStore, prepare, safe_url
from skillwire.store.postgres_migrations import PG_MIGRATIONS, PG_SCHEMA_VERSION, applied


def test_schema_is_migrated_once_and_recorded(pg_dsn: str) -> None:
    assert prepare(pg_dsn) == 0
    assert prepare(pg_dsn) == PG_SCHEMA_VERSION
    with psycopg.connect(pg_dsn) as db:
        recorded = applied(db)  # type: ignore[arg-type]
    assert [(v, n) for v, n, _ in recorded] == [
        (i + 1, m.__name__) for i, m in enumerate(PG_MIGRATIONS)
    ]


def test_processes_migrating_at_once_apply_each_migration_once(pg_dsn: str) -> None:
    found: list[int] = []
    errors: list[BaseException] = []

    def one() -> None:
        try:
            found.append(prepare(pg_dsn))
        except BaseException as err:  # pragma: no cover - reported below
            errors.append(err)

    threads = [threading.Thread(target=one) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert sorted(found) == [0] + [PG_SCHEMA_VERSION] * 5


def test_a_newer_schema_is_refused_and_an_old_one_named(pg_dsn: str) -> None:
    with pytest.raises(StoreUnavailableError, match="run 'skillwire db migrate'"):
        PostgresJobStore(pg_dsn, migrate=False)
    prepare(pg_dsn)
    PostgresJobStore(pg_dsn, migrate=False)  # current: opens
    with psycopg.connect(pg_dsn) as db:
        db.execute(
            "INSERT INTO skillwire_schema (version, name) VALUES (%s, 'from the future')",
            (PG_SCHEMA_VERSION + 1,),
        )
    for migrate in (True, False):
        with pytest.raises(SchemaTooNewError, match=f"version {PG_SCHEMA_VERSION + 1}"):
            PostgresJobStore(pg_dsn, migrate=migrate)


def test_connection_errors_never_show_the_password(pg_dsn: str) -> None:
    secret = "hunter2-secret"
    url = f"postgresql://nobody:{secret}@127.0.0.1:1/nothing"
    with pytest.raises(StoreUnavailableError) as caught:
        PostgresJobStore(url)
    assert secret not in str(caught.value) and "127.0.0.1" in str(caught.value)
    assert safe_url(url) == "postgresql://nobody:***@127.0.0.1:1/nothing"
    with pytest.raises(UsageError, match="not a PostgreSQL URL"):
        PostgresJobStore("/tmp/jobs.db")
    bad_db = pg_dsn.replace("/t", "/missing_t", 1)
    with pytest.raises(StoreUnavailableError, match="missing_t"):
        PostgresJobStore(bad_db)


def test_a_save_is_announced_when_it_commits(pg_dsn: str) -> None:
    async def main() -> None:
        store = PostgresJobStore(pg_dsn)
        seen: list[str] = []
        ready = asyncio.Event()

        async def listen() -> None:
            notes = store.listen()
            first = asyncio.ensure_future(anext(notes))
            ready.set()
            seen.append(await first)
            seen.append(await anext(notes))
            await notes.aclose()

        listener = asyncio.create_task(listen())
        await ready.wait()
        # LISTEN is registered once listen() has run its first statement: save again
        # until the listener has heard two saves (no sleeps: wait on state).
        job = await store.create(make_job("a"))
        for n in range(2000):
            if listener.done():
                break
            job = await store.save(replace(job, reply=str(n)), expected_version=job.version,
                                   events=[event("a", n + 1)])  # fmt: skip
            await asyncio.sleep(0)
        await asyncio.wait_for(listener, 30)
        assert seen == ["a", "a"]
        await store.close()

    asyncio.run(main())


def test_a_store_serves_one_event_loop_after_another(pg_dsn: str) -> None:
    store = PostgresJobStore(pg_dsn)
    asyncio.run(store.create(make_job()))
    found = asyncio.run(store.get("j1"))
    assert found is not None and found.version == 1
    asyncio.run(store.close())


def test_the_audit_queries_run_on_postgres(pg_dsn: str) -> None:
    """docs/engine.md's audit, on PostgreSQL (docs/deploy.md): the first two queries as
    written, the third with ``->`` / ``->>`` in place of ``json_extract``."""
    from tests.conftest import EXAMPLES
    from tests.engine.helpers import decide

    from skillwire.engine import Runtime
    from skillwire.models.offline import OfflineModel
    from skillwire.skills import load_skill
    from skillwire.tools import Executors

    async def refund() -> str:
        skill = load_skill(EXAMPLES / "refund_support" / "domain.yaml")
        async with PostgresJobStore(pg_dsn) as store:
            runtime = Runtime(store, OfflineModel(), executors=Executors())
            job = await runtime.start(skill, "Please refund 750 for order ORD-12345")
            job = await decide(runtime, job.id, "approve", role="supervisor")
            assert [e.seq for e in job.events] == list(range(1, len(job.events) + 1))
            return job.id

    job_id = asyncio.run(refund())
    with psycopg.connect(pg_dsn) as db:
        one_job = db.execute(
            "SELECT seq, at, stage, kind, reason_code, message, data FROM events "
            "WHERE job_id = %s ORDER BY seq",
            (job_id,),
        ).fetchall()
        decisions = db.execute(
            "SELECT reason_code, count(*) FROM events WHERE kind = 'gate_decision' "
            "GROUP BY reason_code ORDER BY count(*) DESC"
        ).fetchall()
        refunds = db.execute(
            "SELECT job_id, at, data -> 'args' ->> 'amount' AS amount FROM events "
            "WHERE kind = 'tool_started' AND data ->> 'tool' = 'process_refund'"
        ).fetchall()
    assert [row[0] for row in one_job] == list(range(1, len(one_job) + 1))
    assert ("APPROVAL_REQUIRED", 1) in decisions
    assert [(row[0], row[2]) for row in refunds] == [(job_id, "750")]
