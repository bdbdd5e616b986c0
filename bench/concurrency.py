"""Many jobs at once: 1,000 refund jobs against a model that takes 200 ms per call.

Run ``python -m bench.concurrency``. Every job is the refund of
``bench.job_overhead`` (intent, two python tools, a pause for a supervisor's approval,
the resume, the refund, the answer, the finalization gate, the polisher: seven model
calls), all started at once in one process on one SQLite file, then all resumed at
once. The model waits ``--latency`` seconds per call without holding the loop
(``asyncio.sleep``), as a remote model does, and answers from the request (so one model
serves every job). A job's calls follow one another, so no job can finish sooner than
``calls per job x latency``: that is the ideal. One JSON line is printed::

    {"bench": "concurrency", "jobs": 1000, "wall_s": 5.1, "ideal_s": 1.4,
     "ratio": 3.7, "model_calls": 7000, ...}

The target is a ratio under 1.5 (the engine's own work for 1,000 jobs fits in the
model's waiting time). The exit status is 1 when a job does not end as expected.

The runtime has its default turns (:mod:`skillwire.engine.turns`: 64 jobs doing engine
work at once, the others waiting their turn), and after the warm-up job the heap is
frozen and the collector tuned, as ``skillwire serve`` does once started
(:mod:`skillwire.engine.heap`).
``cpu_s`` is the process's CPU time: no ratio is possible below ``cpu_s / ideal_s``.

``--processes N`` runs N runtimes, each in its own process and event loop, on the one
SQLite file: each starts its share of the jobs, and approves the share another process
started (a paused job resumes on any worker). The figures are over all of them
(``cpu_s`` summed). One process is the default and the figure the target is about: the
design serves many jobs from one process; this shows what a second core adds.
``--workers N`` is the same option.

``--store postgres`` runs the same jobs on a PostgreSQL database too, after SQLite in
the same run, and prints the PostgreSQL figures with SQLite's beside them (``sqlite``).
The database is ``--pg-url``, else ``$SKILLWIRE_BENCH_PG``, else a throwaway cluster
started from the server binaries (:mod:`bench.pg_cluster`). ``jobs_per_s`` is jobs over
the wall time; ``resume_p50_ms`` and ``resume_p99_ms`` are the times from an approval to
the job's end (it makes ``resume_calls`` more model calls: ``resume_ideal_ms``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import platform
import queue
import tempfile
import time
from multiprocessing.context import BaseContext
from multiprocessing.queues import Queue
from pathlib import Path
from typing import Any

from bench.job_overhead import MESSAGE, REPLIES, SKILL
from skillwire.assembly import open_store
from skillwire.core.chat import ChatRequest, ChatResponse, ToolCall
from skillwire.core.job import JobStatus, OutcomeClass
from skillwire.engine import EngineLimits, Runtime
from skillwire.engine.heap import freeze_startup_heap, tune_collector
from skillwire.skills import Skill, load_skill
from skillwire.store import SQLiteJobStore
from skillwire.store.postgres import PostgresJobStore
from skillwire.tools import Executors

CALLS_PER_JOB = len(REPLIES)


def _planner_replies() -> list[ToolCall]:
    calls = []
    for reply in REPLIES:
        if reply["stage"] == "planner":
            call = reply["tool_call"]
            calls.append(
                ToolCall(call["name"], call["arguments"], json.dumps(call["arguments"]), call["id"])
            )
    return calls


PLANNER = _planner_replies()
BY_STAGE = {r["stage"]: r for r in REPLIES if r["stage"] != "planner"}


def answer(request: ChatRequest) -> ChatResponse:
    """The scripted reply for ``request``: the planner's step is the number of tool
    results it has seen so far."""
    if request.stage == "planner":
        step = sum(1 for m in request.messages if m.role == "tool")
        return ChatResponse(tool_calls=(PLANNER[step],), finish_reason="tool_calls")
    reply = BY_STAGE[request.stage]
    text = json.dumps(reply["json"]) if "json" in reply else str(reply["text"])
    return ChatResponse(text=text, finish_reason="stop")


class RemoteModel:
    """A model that answers after ``latency`` seconds without blocking the loop, as a
    remote one does, and counts its calls (it keeps no request: a real model adapter
    does not, and a thousand jobs' requests kept would make every garbage collection
    walk them)."""

    name = "remote"

    def __init__(self, latency: float) -> None:
        self.latency = latency
        self.calls = 0

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """Wait, then answer."""
        self.calls += 1
        await asyncio.sleep(self.latency)
        return answer(request)

    async def aclose(self) -> None:
        """Nothing to release."""


Pause = tuple[str, str]
"""A paused job as an approver's inbox shows it: its id and its pause's correlation id."""


async def _start(runtime: Runtime, skill: Skill, user: str) -> tuple[Pause, bool]:
    """Start one job; its pause, and whether it paused for its approval. Only that is
    kept, as a server would: not the job's whole record, which would make the heap,
    and so every garbage collection, grow with the number of jobs."""
    job = await runtime.start(skill, MESSAGE, context={"user_id": user}, detail=False)
    waiting = job.record.waiting
    pause = (job.id, waiting.correlation_id if waiting is not None else "")
    return pause, job.record.outcome_class == OutcomeClass.APPROVAL_REQUIRED


async def _resume(runtime: Runtime, pause: Pause) -> tuple[str, bool, float]:
    """Approve one job, naming the pause it waits under (as an approver who read it in
    the inbox: the approval itself reads no more); its id, whether it completed, and
    the seconds from the approval to its end."""
    job_id, correlation_id = pause
    began = time.monotonic()
    job = await runtime.resume(
        job_id,
        approval="approve",
        role="supervisor",
        decided_by="sup",
        correlation_id=correlation_id,
        detail=False,
    )
    return job.id, job.status is JobStatus.COMPLETED, time.monotonic() - began


class _Alone:
    """How a single process shares its jobs: with itself (nothing to wait for)."""

    async def wait(self) -> None:
        """Nobody to wait for."""

    async def trade(self, index: int, pauses: list[Pause]) -> list[Pause]:
        """The jobs this process approves: its own."""
        return pauses


class _Together:
    """How ``processes`` processes meet: a barrier, and a queue per process for the
    pauses of the jobs it is to approve (each approves the jobs the one before it
    started)."""

    def __init__(self, processes: int, ctx: BaseContext) -> None:
        self.barrier = ctx.Barrier(processes)
        self.inboxes: list[Queue[list[Pause]]] = [ctx.Queue() for _ in range(processes)]

    async def wait(self) -> None:
        """Until every process is here (on a thread: the loop is not held)."""
        await asyncio.get_running_loop().run_in_executor(None, self.barrier.wait)

    async def trade(self, index: int, pauses: list[Pause]) -> list[Pause]:
        """Hand ``pauses`` to the next process; the pauses the one before handed over."""
        self.inboxes[(index + 1) % len(self.inboxes)].put(pauses)
        return await asyncio.get_running_loop().run_in_executor(None, self.inboxes[index].get)


async def _share(
    index: int, jobs: int, latency: float, db: Path | str, meet: _Alone | _Together
) -> dict[str, Any]:
    """One process's part: warm up, start ``jobs`` jobs at once when every process is
    ready, then approve at once the jobs it is handed; its times and counts."""
    skill = load_skill(SKILL)
    store = open_store(db)
    model = RemoteModel(latency)
    runtime = Runtime(store, model, limits=EngineLimits(), executors=Executors())
    try:
        # one job first, so that the skill's gate is compiled before the clock starts
        warm = await runtime.start(skill, MESSAGE, detail=False)
        assert warm.record.waiting is not None
        before_pause = model.calls
        await _resume(runtime, (warm.id, warm.record.waiting.correlation_id))
        resume_calls = model.calls - before_pause
        model.calls = 0
        freeze_startup_heap()  # as skillwire serve does once started
        tune_collector()
        await meet.wait()
        wall0, cpu0 = time.monotonic(), time.process_time()
        started = await asyncio.gather(
            *(_start(runtime, skill, f"u{index}-{i}") for i in range(jobs))
        )
        paused = time.monotonic()
        bad = [pause[0] for pause, ok in started if not ok]
        mine = [pause for pause, _ok in started]
        theirs = await meet.trade(index, mine)
        await meet.wait()  # every job of every process has paused
        ended = await asyncio.gather(*(_resume(runtime, pause) for pause in theirs))
        bad += [job_id for job_id, ok, _ in ended if not ok]
        return {
            "resumes": [seconds for _, _, seconds in ended],
            "resume_calls": resume_calls,
            "start": wall0,
            "paused": paused,
            "end": time.monotonic(),
            "cpu_s": time.process_time() - cpu0,
            "model_calls": model.calls,
            "failed_jobs": len(bad),
        }
    finally:
        await store.close()


def _in_child(
    index: int, jobs: int, latency: float, db: Path | str, meet: _Together, out: Queue[Any]
) -> None:
    try:
        out.put((index, asyncio.run(_share(index, jobs, latency, db, meet))))
    except BaseException as exc:
        out.put((index, f"{type(exc).__name__}: {exc}"))
        raise


def measure(
    jobs: int, latency: float, folder: Path, processes: int = 1, url: str | None = None
) -> dict[str, Any]:
    """Start ``jobs`` jobs at once, resume them all at once; the figures as a dict.

    With ``processes`` above 1, each of that many processes (spawned, each its own
    runtime and event loop, one database) starts its share, and approves the share
    the process before it started: the figures are over all of them. The database is
    a SQLite file in ``folder``, or the empty PostgreSQL database at ``url``."""
    if jobs % processes:
        raise SystemExit(f"--jobs {jobs} does not split into {processes} equal shares")
    share = jobs // processes
    db: Path | str = url if url is not None else folder / "jobs.db"
    if processes == 1:
        parts = [asyncio.run(_share(0, share, latency, db, _Alone()))]
    else:
        # the schema, before any process opens the database
        asyncio.run((PostgresJobStore(url) if url else SQLiteJobStore(folder / "jobs.db")).close())
        ctx = multiprocessing.get_context("spawn")  # no state or thread of ours inherited
        meet, out = _Together(processes, ctx), ctx.Queue()
        children = [
            ctx.Process(target=_in_child, args=(i, share, latency, db, meet, out))
            for i in range(processes)
        ]
        for child in children:
            child.start()
        found: dict[int, Any] = {}
        while len(found) < processes:
            try:
                index, part = out.get(timeout=60 + 20 * latency * CALLS_PER_JOB)
            except queue.Empty:
                raise SystemExit("a bench process gave no figures (see its error above)") from None
            if isinstance(part, str):
                for child in children:
                    child.terminate()
                raise SystemExit(f"bench process {index} failed: {part}")
            found[index] = part
        for child in children:
            child.join()
        parts = [found[i] for i in range(processes)]
    start = min(p["start"] for p in parts)
    wall = max(p["end"] for p in parts) - start
    ideal = CALLS_PER_JOB * latency
    resumes = sorted(seconds for p in parts for seconds in p["resumes"])
    return {
        "bench": "concurrency",
        "store": "postgres" if url else "sqlite",
        "jobs": jobs,
        "processes": processes,
        "latency_ms": round(latency * 1000, 1),
        "wall_s": round(wall, 3),
        "ideal_s": round(ideal, 3),
        "ratio": round(wall / ideal, 3),
        "all_paused_s": round(max(p["paused"] for p in parts) - start, 3),
        "jobs_per_s": round(jobs / wall, 1),
        "resume_p50_ms": round(_quantile(resumes, 0.50) * 1000, 1),
        "resume_p99_ms": round(_quantile(resumes, 0.99) * 1000, 1),
        "resume_calls": parts[0]["resume_calls"],
        "resume_ideal_ms": round(parts[0]["resume_calls"] * latency * 1000, 1),
        "cpu_s": round(sum(p["cpu_s"] for p in parts), 3),
        "model_calls": sum(p["model_calls"] for p in parts),
        "failed_jobs": sum(p["failed_jobs"] for p in parts),
        "target_ratio": 1.5,
        "python": platform.python_version(),
    }


def _quantile(ordered: list[float], q: float) -> float:
    """The ``q`` quantile of ``ordered`` (nearest rank; 0 for none)."""
    if not ordered:
        return 0.0
    return ordered[min(len(ordered) - 1, max(0, int(q * len(ordered) + 0.5) - 1))]


def _on_postgres(jobs: int, latency: float, processes: int, url: str | None) -> dict[str, Any]:
    """The figures on PostgreSQL: on a new database of the server at ``url`` (the
    maintenance database's URL), or of a throwaway cluster."""
    import itertools
    import os

    import psycopg

    from bench.pg_cluster import Cluster, find_bin

    url = url or os.environ.get("SKILLWIRE_BENCH_PG")
    cluster = None
    if url is None:
        bin_dir = find_bin()
        if bin_dir is None:
            raise SystemExit("--store postgres: no --pg-url and no PostgreSQL server binaries")
        cluster = Cluster(bin_dir)
        url = cluster.dsn()
    name = f"skillwire_bench_{os.getpid()}_{next(itertools.count())}"
    base, _, query = url.partition("?")
    bench_url = f"{base.rsplit('/', 1)[0]}/{name}" + (f"?{query}" if query else "")
    try:
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute(f"CREATE DATABASE {name}")
        try:
            with tempfile.TemporaryDirectory(prefix="skillwire-bench-") as tmp:
                return measure(jobs, latency, Path(tmp), processes, bench_url)
        finally:
            with psycopg.connect(url, autocommit=True) as admin:
                admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    finally:
        if cluster is not None:
            cluster.stop()


def main(argv: list[str] | None = None) -> None:
    """Parse options, run, print one JSON line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=1000, help="jobs at once")
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per model call")
    parser.add_argument(
        "--processes",
        "--workers",
        type=int,
        default=1,
        help="runtimes, each in its own process, sharing the jobs and the database",
    )
    parser.add_argument(
        "--store",
        choices=("sqlite", "postgres"),
        default="sqlite",
        help="postgres: run on PostgreSQL too, after SQLite, and print both",
    )
    parser.add_argument("--pg-url", help="a PostgreSQL server's maintenance database URL")
    ns = parser.parse_args(argv)
    if ns.processes < 1:
        parser.error("--processes must be at least 1")
    with tempfile.TemporaryDirectory(prefix="skillwire-bench-") as tmp:
        result = measure(ns.jobs, ns.latency, Path(tmp), ns.processes)
    if ns.store == "postgres":
        on_sqlite = result
        result = _on_postgres(ns.jobs, ns.latency, ns.processes, ns.pg_url)
        result["sqlite"] = {
            key: on_sqlite[key]
            for key in ("wall_s", "ratio", "jobs_per_s", "resume_p50_ms", "resume_p99_ms",
                        "cpu_s", "failed_jobs")
        }  # fmt: skip
        result["failed_jobs"] += on_sqlite["failed_jobs"]
    print(json.dumps(result))
    if result["failed_jobs"]:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
