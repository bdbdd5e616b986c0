"""The server on PostgreSQL: a job saved by another process (another server, the CLI, a
worker) reaches an open event stream at once, through LISTEN/NOTIFY, not at the next
poll."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from fastapi.testclient import TestClient
from tests.server.helpers import auth, copy_refund, server_config, start_refund
from tests.server.test_api_live import read_until, state_is

from skillwire.engine import Runtime
from skillwire.models.offline import OfflineModel
from skillwire.server import ServerSettings, create_app
from skillwire.store.postgres import PostgresJobStore
from skillwire.tools import Executors


def test_a_save_by_another_process_wakes_the_stream_at_once(pg_dsn: str, tmp_path: Path) -> None:
    skills = tmp_path / "skills"
    copy_refund(skills / "refund_support")
    settings = ServerSettings(
        skill_paths=[skills], db=pg_dsn, config=server_config(),
        poll_seconds=120.0, keepalive_seconds=120.0,
    )  # fmt: skip
    app = create_app(settings)
    signals = app.state.skillwire.signals
    heard: list[str] = []
    notify = signals.notify

    def spy(job_id: str) -> None:
        heard.append(job_id)
        notify(job_id)

    signals.notify = spy
    with TestClient(app) as client:
        job = start_refund(client)
        assert job["outcome_class"] == "USER_ACTION_REQUIRED"
        heard.clear()
        url = f"/api/jobs/{job['id']}/events?after={len(job['events'])}"
        with client.stream("GET", url, headers=auth("alice")) as response:
            lines = response.iter_lines()
            read_until(lines, state_is("paused", "USER_ACTION_REQUIRED"))

            def elsewhere() -> None:  # another process: its own store and runtime
                async def resume() -> None:
                    async with PostgresJobStore(pg_dsn) as store:
                        runtime = Runtime(store, OfflineModel(), executors=Executors())
                        await runtime.resume(job["id"], input={"order_id": "ORD-12345"})

                asyncio.run(resume())

            other = threading.Thread(target=elsewhere)
            other.start()
            items = read_until(lines, state_is("paused", "APPROVAL_REQUIRED"))
            other.join()
    assert job["id"] in heard  # woken by the relay of NOTIFY, not by a 120 s poll
    assert any('"input_received"' in i.get("data", "") for i in items)
