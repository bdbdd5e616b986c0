"""Workers on the queue: two worker processes, 200 jobs started and approved through
the API (``serve --queue``), one worker SIGKILLed again and again at random points of
the work; no job is lost, no non-idempotent tool runs twice, and jobs paused on one
worker resume on the other."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import psycopg
import pytest
from fastapi.testclient import TestClient
from tests.engine.helpers import ledger_skill
from tests.server.helpers import auth, server_config
from typer.testing import CliRunner

from skillwire.cli_app import app as cli_app
from skillwire.core.errors import UsageError
from skillwire.jobqueue import queueable
from skillwire.server import ServerSettings, create_app
from skillwire.store.postgres import CHANNEL

ROOT = Path(__file__).resolve().parent.parent.parent
MESSAGE = "Please refund 750 for order ORD-12345"
JOBS = 200
ENDED = {"completed", "failed", "escalated"}


def refund_result(arguments: dict[str, Any]) -> dict[str, Any]:
    """What the example's ``process_refund`` returns for ``arguments``."""
    order_id, amount = arguments["order_id"], arguments["amount"]
    return {
        "order_id": order_id,
        "status": "refunded",
        "refund_id": f"RF-{order_id[4:]}-{int(amount * 100)}",
        "next_steps": f"{amount:.2f} will be back on your card within 5 business days.",
    }


def pid_ledger_skill(folder: Path) -> tuple[Path, Path]:
    """The ledger skill of the engine tests, each run logged with the worker's pid:
    ``tool key pid`` (O_APPEND, fsynced before the tool acts)."""
    skill, ledger = ledger_skill(folder)
    tools = folder / "ledger_tools.py"
    text = tools.read_text().replace('f"{tool} {key}\\n"', 'f"{tool} {key} {_os.getpid()}\\n"')
    assert "getpid" in text
    tools.write_text(text)
    return skill, ledger


def runs(ledger: Path) -> list[tuple[str, str, int]]:
    """Every tool run: tool, idempotency key, worker pid."""
    out = []
    for line in ledger.read_text().splitlines():
        tool, key, pid = line.split(" ")
        out.append((tool, key, int(pid)))
    return out


class Workers:
    """Worker processes (``skillwire worker``) on the database at ``url``."""

    def __init__(self, url: str, folder: Path) -> None:
        self.env = {
            **os.environ,
            "SKILLWIRE_DB": url,
            "PYTHONPATH": str(ROOT / "src"),
            "SKILLWIRE_CONFIG": "",
        }
        self.folder = folder
        self.started = 0
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(self) -> subprocess.Popen[bytes]:
        self.started += 1
        log = (self.folder / f"worker{self.started}.log").open("wb")
        self.procs.append(self._popen(log))
        return self.procs[-1]

    def _popen(self, log: Any) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            [sys.executable, "-m", "skillwire", "worker", "--heartbeat", "0.5",
             "--stalled-after", "2", "--concurrency", "8"],
            env=self.env, cwd=self.folder, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip

    def stop_all(self) -> None:
        """End every worker still running (whatever ended the test)."""
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()

    def logs(self) -> str:
        return "\n".join(
            f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}"
            for p in sorted(self.folder.glob("worker*.log"))
        )


def states(url: str) -> dict[str, tuple[str, str | None]]:
    """Every job's status and outcome class."""
    with psycopg.connect(url) as db:
        found = db.execute("SELECT to_regclass('jobs') IS NOT NULL").fetchone()
        if not found or not found[0]:
            return {}
        rows = db.execute("SELECT id, status, outcome_class FROM jobs").fetchall()
    return {job_id: (status, outcome) for job_id, status, outcome in rows}


def test_two_workers_one_killed_again_and_again_lose_nothing(pg_dsn: str, tmp_path: Path) -> None:
    rng = random.Random(int(os.environ.get("SKILLWIRE_TEST_SEED", "22")))
    skills = tmp_path / "skills"
    _, ledger = pid_ledger_skill(skills / "refund")
    work = tmp_path / "work"
    work.mkdir()
    workers = Workers(pg_dsn, work)
    settings = ServerSettings(
        skill_paths=[skills], db=pg_dsn, config=server_config(sync_wait=0.0), queue=True
    )
    # every kill point is a number of tool runs in the ledger (state, not time)
    kill_at = sorted(rng.sample(range(20, 5 * JOBS), 6))
    killed = 0
    try:
        victim = workers.start()
        other = workers.start()
        answered: set[tuple[str, str]] = set()
        with (
            TestClient(create_app(settings)) as client,
            psycopg.connect(pg_dsn, autocommit=True) as listener,
        ):
            listener.execute(f"LISTEN {CHANNEL}")
            ids = []
            for _ in range(JOBS):
                response = client.post(
                    "/api/jobs", headers=auth("alice"),
                    json={"skill_id": "refund-support", "message": MESSAGE},
                )  # fmt: skip
                assert response.status_code == 202, response.text
                assert response.json()["status"] == "queued"
                ids.append(response.json()["id"])
            assert len(set(ids)) == JOBS
            deadline = time.monotonic() + 300
            while True:
                if time.monotonic() > deadline:
                    raise AssertionError(
                        f"not done: {Counter(states(pg_dsn).values())}\n{workers.logs()}"
                    )
                done_runs = len(ledger.read_text().splitlines())
                if kill_at and done_runs >= kill_at[0]:
                    kill_at.pop(0)
                    victim.send_signal(signal.SIGKILL)
                    victim.wait()
                    killed += 1
                    victim = workers.start()
                for proc in (victim, other):
                    assert proc.poll() is None, f"a worker exited\n{workers.logs()}"
                now = states(pg_dsn)
                for job_id, (status, _) in now.items():
                    if status != "paused":
                        continue
                    job = client.get(f"/api/jobs/{job_id}", headers=auth("boss")).json()
                    if job["status"] != "paused":  # moved on since the query above
                        continue
                    pause = job["waiting"]["correlation_id"]
                    outcome = str(job["outcome_class"])
                    if (job_id, pause) in answered:
                        continue
                    answered.add((job_id, pause))
                    if outcome == "APPROVAL_REQUIRED":
                        reply = client.post(
                            f"/api/jobs/{job_id}/approval", headers=auth("sup"),
                            json={"decision": "approve", "correlation_id": pause},
                        )  # fmt: skip
                    elif outcome == "OPERATOR_ACTION_REQUIRED":  # a refund in flight at a kill
                        flight = job["waiting"]
                        ran = any(
                            tool == flight["tool"] and k.startswith(f"{job_id}:")
                            for tool, k, _ in runs(ledger)
                        )
                        # as an operator who looked the refund up: it ran, with this result
                        given = {"outcome": "ran", "result": refund_result(flight["arguments"])}
                        reply = client.post(
                            f"/api/jobs/{job_id}/input", headers=auth("boss"),
                            json={"input": given if ran else {"outcome": "not_run"},
                                  "correlation_id": pause},
                        )  # fmt: skip
                    else:
                        raise AssertionError(f"job {job_id} paused {outcome}: {job['waiting']}")
                    assert reply.status_code in (200, 202), reply.text
                if len(now) == JOBS and all(s[0] in ENDED for s in now.values()):
                    break
                listener.execute("SELECT 1")  # wait for the next change, at most a second
                for _ in listener.notifies(timeout=1.0, stop_after=1):
                    pass
    finally:
        workers.stop_all()
    assert killed >= 1
    ended = states(pg_dsn)
    assert sorted(ended) == sorted(ids)  # 0 jobs lost
    assert Counter(ended.values()) == {("completed", "SUCCESS"): JOBS}
    ledger_runs = runs(ledger)
    refunds = Counter(key for tool, key, _ in ledger_runs if tool == "process_refund")
    assert sorted(refunds) == sorted(f"{job_id}:2" for job_id in ids)
    assert max(refunds.values()) == 1, [k for k, n in refunds.items() if n > 1]  # 0 twice
    # jobs paused on one worker and resumed on another
    first = {key.split(":")[0]: pid for tool, key, pid in ledger_runs if tool == "verify_identity"}
    last = {key.split(":")[0]: pid for tool, key, pid in ledger_runs if tool == "process_refund"}
    assert sum(1 for job_id in ids if first[job_id] != last[job_id]) > 0


def test_worker_once_drains_the_queue_and_run_queue_prints_the_id(
    pg_dsn: str, tmp_path: Path, monkeypatch: Any
) -> None:
    skill, _ = ledger_skill(tmp_path / "skill")
    monkeypatch.setenv("SKILLWIRE_DB", pg_dsn)
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    queued = runner.invoke(cli_app, ["run", str(skill), "-m", MESSAGE, "--queue"])
    assert queued.exit_code == 0, queued.output
    job_id = queued.stdout.strip()
    assert states(pg_dsn) == {}  # queued, not run
    drained = runner.invoke(cli_app, ["worker", "--once"])
    assert drained.exit_code == 0, drained.output
    assert states(pg_dsn) == {job_id: ("paused", "APPROVAL_REQUIRED")}
    shown = runner.invoke(cli_app, ["show", job_id, "--json"])
    assert json.loads(shown.stdout)["waiting"]["approver"] == "supervisor"


def test_queue_needs_postgres(tmp_path: Path, monkeypatch: Any) -> None:
    skill, _ = ledger_skill(tmp_path / "skill")
    monkeypatch.setenv("SKILLWIRE_DB", str(tmp_path / "jobs.db"))
    result = CliRunner().invoke(cli_app, ["run", str(skill), "-m", MESSAGE, "--queue"])
    assert result.exit_code == 2 and "PostgreSQL job database" in result.output
    result = CliRunner().invoke(cli_app, ["worker", "--once"])
    assert result.exit_code == 2 and "PostgreSQL job database" in result.output


def test_a_worker_takes_only_its_queues(pg_dsn: str, tmp_path: Path, monkeypatch: Any) -> None:
    """Queues are per skill: a worker for another skill leaves the job queued."""
    skill, _ = ledger_skill(tmp_path / "skill")
    monkeypatch.setenv("SKILLWIRE_DB", pg_dsn)
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    job_id = runner.invoke(cli_app, ["run", str(skill), "-m", MESSAGE, "--queue"]).stdout.strip()
    other = runner.invoke(cli_app, ["worker", "--once", "--queue", "skill.order-status"])
    assert other.exit_code == 0, other.output
    assert states(pg_dsn) == {}
    mine = runner.invoke(cli_app, ["worker", "--once", "--queue", "skill.refund-support"])
    assert mine.exit_code == 0, mine.output
    assert states(pg_dsn) == {job_id: ("paused", "APPROVAL_REQUIRED")}


def test_serve_queue_needs_postgres(tmp_path: Path) -> None:
    settings = ServerSettings(skill_paths=[], db=tmp_path / "jobs.db", queue=True)
    with pytest.raises(UsageError, match="needs a PostgreSQL job database"):
        create_app(settings)


def test_text_the_queue_cannot_hold_still_queues_the_job(pg_dsn: str, tmp_path: Path) -> None:
    """A message holding U+0000 (which ``jsonb`` refuses): the start is queued (mended),
    the job runs on a worker, and its input, queued too, is applied there."""
    assert queueable({"k\x00": ["v\x00", "\ud800", 1, None]}) == {
        "k\ufffd": ["v\ufffd", "\ufffd", 1, None]
    }
    skills = tmp_path / "skills"
    ledger_skill(skills / "refund")
    settings = ServerSettings(
        skill_paths=[skills], db=pg_dsn, config=server_config(sync_wait=0.0), queue=True
    )
    env = {**os.environ, "SKILLWIRE_DB": pg_dsn, "PYTHONPATH": str(ROOT / "src")}

    def drain() -> None:
        done = subprocess.run(
            [sys.executable, "-m", "skillwire", "worker", "--once"],
            env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr

    with TestClient(create_app(settings)) as client:
        body = {"skill_id": "refund-support", "message": "I want a refund of $750 \x00"}
        response = client.post(
            "/api/jobs", content=json.dumps(body),  # the escapes \u0000 and \ud800
            headers={**auth("alice"), "Content-Type": "application/json"},
        )  # fmt: skip
        assert response.status_code == 202, response.text
        job_id = response.json()["id"]
        drain()
        job = client.get(f"/api/jobs/{job_id}", headers=auth("alice")).json()
        assert (job["status"], job["outcome_class"]) == ("paused", "USER_ACTION_REQUIRED")
        answer = client.post(
            f"/api/jobs/{job_id}/input", headers=auth("alice"),
            json={"input": {"order_id": "ORD-12345"},
                  "correlation_id": job["waiting"]["correlation_id"]},
        )  # fmt: skip
        assert answer.status_code == 202, answer.text
        drain()
        job = client.get(f"/api/jobs/{job_id}", headers=auth("alice")).json()
    assert job["status"] == "paused"  # the input was applied: the job moved on
    assert job["waiting"]["correlation_id"] != answer.json()["waiting"]["correlation_id"]


def test_a_queued_job_resumes_on_the_version_it_started_on(pg_dsn: str, tmp_path: Path) -> None:
    """Paused on a worker; the skill's tool module then changes (version 2); the
    approval is applied by a worker run after the change, and the refund that runs is
    version 1's (its ledger lines carry no version 2 mark)."""
    skills = tmp_path / "skills"
    _, ledger = ledger_skill(skills / "refund")
    module = skills / "refund" / "ledger_tools.py"
    settings = ServerSettings(
        skill_paths=[skills], db=pg_dsn, config=server_config(sync_wait=0.0), queue=True
    )
    env = {**os.environ, "SKILLWIRE_DB": pg_dsn, "PYTHONPATH": str(ROOT / "src")}

    def drain() -> None:
        done = subprocess.run(
            [sys.executable, "-m", "skillwire", "worker", "--once"],
            env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr

    with TestClient(create_app(settings)) as client:
        started = client.post(
            "/api/jobs", headers=auth("alice"),
            json={"skill_id": "refund-support", "message": MESSAGE},
        )  # fmt: skip
        assert started.status_code == 202, started.text
        job_id = started.json()["id"]
        drain()
        job = client.get(f"/api/jobs/{job_id}", headers=auth("alice")).json()
        assert (job["status"], job["outcome_class"]) == ("paused", "APPROVAL_REQUIRED")
        module.write_text(module.read_text().replace('f"{tool} {key}\\n"', 'f"v2 {tool} {key}\\n"'))
        assert "v2 " in module.read_text()
        decided = client.post(
            f"/api/jobs/{job_id}/approval", headers=auth("sup"),
            json={"decision": "approve", "correlation_id": job["waiting"]["correlation_id"]},
        )  # fmt: skip
        assert decided.status_code == 202, decided.text
        drain()
        job = client.get(f"/api/jobs/{job_id}", headers=auth("alice")).json()
    assert (job["status"], job["outcome_class"]) == ("completed", "SUCCESS")
    lines = ledger.read_text().splitlines()
    assert any(line.startswith("process_refund ") for line in lines), lines
    assert not any(line.startswith("v2 ") for line in lines), lines
