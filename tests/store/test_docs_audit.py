"""docs/engine.md: the audit queries it shows run as written on a refund job's file."""

from __future__ import annotations

import asyncio
import re
import sqlite3
from pathlib import Path

from tests.conftest import EXAMPLES, ROOT
from tests.engine.helpers import decide

from skillwire.engine import Runtime
from skillwire.models.offline import OfflineModel
from skillwire.skills import load_skill
from skillwire.store import SQLiteJobStore
from skillwire.tools import Executors

DOC = ROOT / "docs" / "engine.md"


def test_the_audit_queries_in_docs_engine_md_run(tmp_path: Path) -> None:
    path = tmp_path / "jobs.db"

    async def refund() -> str:
        skill = load_skill(EXAMPLES / "refund_support" / "domain.yaml")
        async with SQLiteJobStore(path) as store:
            runtime = Runtime(store, OfflineModel(), executors=Executors())
            job = await runtime.start(skill, "Please refund 750 for order ORD-12345")
            job = await decide(runtime, job.id, "approve", role="supervisor")
            return job.id

    job_id = asyncio.run(refund())
    (block,) = re.findall(r"```sql\n(.*?)```", DOC.read_text(), flags=re.S)
    block = re.sub(r"'0192f\.\.\.'", f"'{job_id}'", block)
    statements = [s for s in block.split(";") if s.strip()]
    with sqlite3.connect(path) as db:
        one_job, decisions, refunds = (db.execute(s).fetchall() for s in statements)
        events = db.execute("SELECT count(*) FROM events").fetchone()[0]
    db.close()
    assert [row[0] for row in one_job] == list(range(1, events + 1))
    assert ("APPROVAL_REQUIRED", 1) in decisions
    assert [(row[0], row[2]) for row in refunds] == [(job_id, 750)]
