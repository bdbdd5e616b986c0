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
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.job_overhead import MESSAGE, REPLIES, SKILL
from skillwire.core.chat import ChatRequest, ChatResponse, ToolCall
from skillwire.core.job import JobStatus, OutcomeClass
from skillwire.engine import EngineLimits, Runtime
from skillwire.engine.heap import freeze_startup_heap, tune_collector
from skillwire.skills import Skill, load_skill
from skillwire.store import SQLiteJobStore

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


async def _start(runtime: Runtime, skill: Skill, user: str) -> tuple[str, bool]:
    """Start one job; its id, and whether it paused for its approval. Only that is
    kept, as a server would: not the job's whole record, which would make the heap,
    and so every garbage collection, grow with the number of jobs."""
    job = await runtime.start(skill, MESSAGE, context={"user_id": user}, detail=False)
    return job.id, job.record.outcome_class == OutcomeClass.APPROVAL_REQUIRED


async def _resume(runtime: Runtime, job_id: str) -> tuple[str, bool]:
    """Approve one job; its id, and whether it completed."""
    job = await runtime.resume(job_id, approval="approve", role="supervisor", detail=False)
    return job.id, job.status is JobStatus.COMPLETED


async def measure(jobs: int, latency: float, folder: Path) -> dict[str, Any]:
    """Start ``jobs`` jobs at once, resume them all at once; the figures as a dict."""
    skill = load_skill(SKILL)
    store = SQLiteJobStore(folder / "jobs.db")
    model = RemoteModel(latency)
    runtime = Runtime(store, model, limits=EngineLimits())
    try:
        # one job first, so that the skill's gate is compiled before the clock starts
        warm = await runtime.start(skill, MESSAGE, detail=False)
        await runtime.resume(warm.id, approval="approve", role="supervisor", detail=False)
        model.calls = 0
        freeze_startup_heap()  # as skillwire serve does once started
        tune_collector()
        wall0, cpu0 = time.perf_counter(), time.process_time()
        started = await asyncio.gather(*(_start(runtime, skill, f"u{i}") for i in range(jobs)))
        paused_at = time.perf_counter() - wall0
        bad = [job_id for job_id, ok in started if not ok]
        ended = await asyncio.gather(*(_resume(runtime, job_id) for job_id, _ok in started))
        wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
        bad += [job_id for job_id, ok in ended if not ok]
        ideal = CALLS_PER_JOB * latency
        return {
            "bench": "concurrency",
            "jobs": jobs,
            "latency_ms": round(latency * 1000, 1),
            "wall_s": round(wall, 3),
            "ideal_s": round(ideal, 3),
            "ratio": round(wall / ideal, 3),
            "all_paused_s": round(paused_at, 3),
            "cpu_s": round(cpu, 3),
            "model_calls": model.calls,
            "failed_jobs": len(bad),
            "target_ratio": 1.5,
            "python": platform.python_version(),
        }
    finally:
        await store.close()


def main(argv: list[str] | None = None) -> None:
    """Parse options, run, print one JSON line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=1000, help="jobs at once")
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per model call")
    ns = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="skillwire-bench-") as tmp:
        result = asyncio.run(measure(ns.jobs, ns.latency, Path(tmp)))
    print(json.dumps(result))
    if result["failed_jobs"]:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
