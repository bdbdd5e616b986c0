"""Crash safety under SIGKILL: workers running refund jobs are killed at random points,
hundreds of times; afterwards no job is lost, every job ends, and no refund ran twice.

The workers come from a fork server (``crash_child.py``) so that each costs a fork, not
a Python start. A worker reports each step on stdout; the test reads a random number of
steps, then kills it with SIGKILL (no sleeps: it waits on the worker's output). The
next worker first takes over what the killed ones left. The tools write every run to an
append-only ledger (fsynced before the tool returns), keyed by idempotency key, so the
test can count the runs of the one tool that is not idempotent, ``process_refund``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import select
import signal
import subprocess
import sys
import time
from collections import deque
from pathlib import Path

from tests.engine.crash_child import finish_all, unfinished
from tests.engine.helpers import ROOT, SwitchModel, ledger_runs, ledger_skill

from skillwire.core.job import JobStatus
from skillwire.engine import Runtime
from skillwire.store import SQLiteJobStore
from skillwire.tools import Executors

KILLS = 220
JOBS_PER_WORKER = 6
LINE_TIMEOUT_S = 60.0  # a guard against a hung worker, not a timing assertion


class Lines:
    """Lines from a pipe, read without Python's buffering, with a guard timeout; the
    last ones read, and the server's standard error, are shown when something fails."""

    def __init__(self, fd: int, stderr: Path) -> None:
        self.fd = fd
        self.buffer = b""
        self.stderr = stderr
        self.recent: deque[str] = deque(maxlen=40)

    def next(self) -> str:
        """The next line that is not empty (without its newline)."""
        line = b""
        while not line:
            while b"\n" not in self.buffer:
                ready, _, _ = select.select([self.fd], [], [], LINE_TIMEOUT_S)
                assert ready, self.story("the fork server said nothing for a minute")
                chunk = os.read(self.fd, 65536)
                assert chunk, self.story("the fork server died")
                self.buffer += chunk
            line, _, self.buffer = self.buffer.partition(b"\n")
        self.recent.append(line.decode())
        return self.recent[-1]

    def story(self, what: str) -> str:
        """``what``, the last lines read and the server's standard error."""
        errors = self.stderr.read_text()[-3000:] if self.stderr.exists() else ""
        return f"{what}\nlast lines: {list(self.recent)}\nstderr: {errors}"


def test_workers_killed_at_random_points_lose_nothing(tmp_path: Path) -> None:
    skill_file, ledger = ledger_skill(tmp_path / "skill")
    db = tmp_path / "jobs.db"
    rng = random.Random(20260123)
    errors = (tmp_path / "server.err").open("wb")
    server = subprocess.Popen(
        [sys.executable, "-m", "tests.engine.crash_child", str(db), str(skill_file), str(ledger)],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=errors,
        # this checkout's src first: the children test this code, not an installed copy
        env={
            **os.environ,
            "SKILLWIRE_LEDGER_ECHO": "1",
            "PYTHONPATH": os.pathsep.join((str(ROOT / "src"), str(ROOT))),
        },
    )
    assert server.stdin is not None and server.stdout is not None
    lines = Lines(server.stdout.fileno(), tmp_path / "server.err")
    created: set[str] = set()
    kills = finished_workers = 0
    started = time.monotonic()
    try:
        assert lines.next() == "ready"
        while kills < KILLS:
            server.stdin.write(f"fork {JOBS_PER_WORKER}\n".encode())
            server.stdin.flush()
            pid_line = lines.next()
            assert pid_line.startswith("pid "), lines.story(pid_line)
            pid = int(pid_line.split()[1])
            steps, killed = rng.randint(0, 14), False
            while True:
                if steps == 0 and not killed:
                    with contextlib.suppress(ProcessLookupError):  # it ended by itself
                        os.kill(pid, signal.SIGKILL)
                    killed = True
                line = lines.next()
                kind, _, rest = line.partition(" ")
                assert kind != "error", lines.story(line)
                if kind == "created":
                    created.add(rest)
                if kind == "reaped":
                    status = int(rest.split()[1])
                    if os.WIFSIGNALED(status):
                        assert os.WTERMSIG(status) == signal.SIGKILL
                        kills += 1
                    else:
                        assert os.WEXITSTATUS(status) == 0, lines.story(line)
                        finished_workers += 1
                    break
                steps -= 1
        server.stdin.write(b"quit\n")
        server.stdin.flush()
        assert server.wait(timeout=LINE_TIMEOUT_S) == 0
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
        errors.close()
    elapsed = time.monotonic() - started

    async def settle() -> tuple[list[str], dict[str, JobStatus], list[str]]:
        store = SQLiteJobStore(db)
        try:
            model = SwitchModel()
            left = await finish_all(
                Runtime(store, model, executors=Executors()), model, ledger, announce=False
            )
            jobs = {r.id: r.status for r in await store.list(limit=100_000)}
            gaps = []
            for job_id in jobs:
                seqs = [e.seq for e in await store.events(job_id)]
                if seqs != list(range(1, len(seqs) + 1)):
                    gaps.append(job_id)
            assert await unfinished(store) == []
            return left, jobs, gaps
        finally:
            await store.close()

    left, jobs, gaps = asyncio.run(settle())
    print(
        f"\n{kills} kills, {finished_workers} workers ended by themselves, {len(jobs)} jobs "
        f"({len(created)} reported created, {len(left)} finished after the last kill), "
        f"{elapsed:.1f} s"
    )
    assert kills >= KILLS
    assert created <= set(jobs), "a job reported created is lost"
    assert len(jobs) >= KILLS // 2
    assert set(jobs.values()) == {JobStatus.COMPLETED}
    assert gaps == []
    runs = ledger_runs(ledger)
    refunds = {key: n for (tool, key), n in runs.items() if tool == "process_refund"}
    assert max(refunds.values()) == 1, "a non-idempotent tool ran twice"
    assert set(refunds) == {f"{job_id}:2" for job_id in jobs}, "a refund was lost"
