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
from skillwire.core.chat import ChatRequest, ChatResponse, ToolCall
from skillwire.core.job import JobStatus, OutcomeClass
from skillwire.engine import EngineLimits, Runtime
from skillwire.engine.heap import freeze_startup_heap, tune_collector
from skillwire.skills import Skill, load_skill
from skillwire.store import SQLiteJobStore
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


async def _resume(runtime: Runtime, pause: Pause) -> tuple[str, bool]:
    """Approve one job, naming the pause it waits under (as an approver who read it in
    the inbox: the approval itself reads no more); its id, and whether it completed."""
    job_id, correlation_id = pause
    job = await runtime.resume(
        job_id,
        approval="approve",
        role="supervisor",
        decided_by="sup",
        correlation_id=correlation_id,
        detail=False,
    )
    return job.id, job.status is JobStatus.COMPLETED


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
    index: int, jobs: int, latency: float, db: Path, meet: _Alone | _Together
) -> dict[str, Any]:
    """One process's part: warm up, start ``jobs`` jobs at once when every process is
    ready, then approve at once the jobs it is handed; its times and counts."""
    skill = load_skill(SKILL)
    store = SQLiteJobStore(db)
    model = RemoteModel(latency)
    runtime = Runtime(store, model, limits=EngineLimits(), executors=Executors())
    try:
        # one job first, so that the skill's gate is compiled before the clock starts
        warm = await runtime.start(skill, MESSAGE, detail=False)
        assert warm.record.waiting is not None
        await _resume(runtime, (warm.id, warm.record.waiting.correlation_id))
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
        bad += [job_id for job_id, ok in ended if not ok]
        return {
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
    index: int, jobs: int, latency: float, db: Path, meet: _Together, out: Queue[Any]
) -> None:
    try:
        out.put((index, asyncio.run(_share(index, jobs, latency, db, meet))))
    except BaseException as exc:
        out.put((index, f"{type(exc).__name__}: {exc}"))
        raise


def measure(jobs: int, latency: float, folder: Path, processes: int = 1) -> dict[str, Any]:
    """Start ``jobs`` jobs at once, resume them all at once; the figures as a dict.

    With ``processes`` above 1, each of that many processes (spawned, each its own
    runtime and event loop, one SQLite file) starts its share, and approves the share
    the process before it started: the figures are over all of them."""
    if jobs % processes:
        raise SystemExit(f"--jobs {jobs} does not split into {processes} equal shares")
    share = jobs // processes
    db = folder / "jobs.db"
    if processes == 1:
        parts = [asyncio.run(_share(0, share, latency, db, _Alone()))]
    else:
        asyncio.run(SQLiteJobStore(db).close())  # the schema, before any process opens it
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
    return {
        "bench": "concurrency",
        "jobs": jobs,
        "processes": processes,
        "latency_ms": round(latency * 1000, 1),
        "wall_s": round(wall, 3),
        "ideal_s": round(ideal, 3),
        "ratio": round(wall / ideal, 3),
        "all_paused_s": round(max(p["paused"] for p in parts) - start, 3),
        "cpu_s": round(sum(p["cpu_s"] for p in parts), 3),
        "model_calls": sum(p["model_calls"] for p in parts),
        "failed_jobs": sum(p["failed_jobs"] for p in parts),
        "target_ratio": 1.5,
        "python": platform.python_version(),
    }


def main(argv: list[str] | None = None) -> None:
    """Parse options, run, print one JSON line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=1000, help="jobs at once")
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per model call")
    parser.add_argument(
        "--processes",
        type=int,
        default=1,
        help="runtimes, each in its own process, sharing the jobs and the SQLite file",
    )
    ns = parser.parse_args(argv)
    if ns.processes < 1:
        parser.error("--processes must be at least 1")
    with tempfile.TemporaryDirectory(prefix="skillwire-bench-") as tmp:
        result = measure(ns.jobs, ns.latency, Path(tmp), ns.processes)
    print(json.dumps(result))
    if result["failed_jobs"]:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
