"""Package tools inside jobs on the scripted model: a shell tool runs, one that needs
confirmation pauses for approval and runs once approved, a blocked one never starts,
and a tool reporting a state change it does not declare is refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.engine.helpers import decide, events_of, run
from tests.tools.helpers import PY, base_of, job_package, job_script, shell_tool

from skillwire.core.job import JobStatus, OutcomeClass
from skillwire.engine import Runtime
from skillwire.policy import BasePolicy
from skillwire.skills import load_skill
from skillwire.store import SQLiteJobStore
from skillwire.testing import ScriptedModel
from skillwire.tools import Executors, ShellExecutor

WRITE = shell_tool(
    "write",
    PY,
    ["-c", "import sys; open(sys.argv[2], 'w').write(sys.argv[1])", "{{action}}", "{{path}}"],
    {"action": {"type": "string"}, "path": {"type": "string"}},
    allowedActions=["draft", "publish"],
)
GUARD = {"toolPolicies": {"tools-demo.write": {"requireConfirmationFor": ["publish"]}}}


def _runtime(tmp_path: Path, replies: list[dict[str, Any]], base: BasePolicy) -> Runtime:
    executors = Executors(shell=ShellExecutor(sandbox="off"))
    return Runtime(
        SQLiteJobStore(tmp_path / "jobs.db"),
        ScriptedModel(replies),
        executors=executors,
        base_policy=base,
    )


def _setup(tmp_path: Path) -> tuple[Any, BasePolicy, Path]:
    out = tmp_path / "out"
    out.mkdir()
    skill = load_skill(job_package(tmp_path, [WRITE], guardrails=GUARD))
    base = base_of(
        tmp_path,
        {
            "shell": {"allowedPrefixes": [f"{PY} -c"]},
            "filesystem": {"allowedWriteRoots": [str(out)]},
        },
    )
    return skill, base, out


def test_a_shell_tool_runs_in_a_job(tmp_path: Path) -> None:
    skill, base, out = _setup(tmp_path)
    target = out / "note.txt"
    replies = job_script("write", {"action": "draft", "path": str(target)})

    async def go() -> Any:
        runtime = _runtime(tmp_path, replies, base)
        try:
            return await runtime.start(skill, "write a note")
        finally:
            await runtime.store.close()

    job = run(go())
    assert job.record.status is JobStatus.COMPLETED, job.events
    assert target.read_text() == "draft"
    finished = events_of(job, "tool_finished")
    assert finished and finished[0].data["result"]["exitCode"] == 0


def test_confirmation_pauses_for_approval_then_runs(tmp_path: Path) -> None:
    skill, base, out = _setup(tmp_path)
    target = out / "post.txt"
    replies = job_script("write", {"action": "publish", "path": str(target)})

    async def go() -> tuple[Any, Any]:
        runtime = _runtime(tmp_path, replies, base)
        try:
            paused = await runtime.start(skill, "publish it")
            assert not target.exists()
            done = await decide(runtime, paused.id, "approve", role="supervisor")
            return paused, done
        finally:
            await runtime.store.close()

    paused, done = run(go())
    assert paused.record.outcome_class is OutcomeClass.APPROVAL_REQUIRED
    assert done.record.status is JobStatus.COMPLETED, done.events
    assert target.read_text() == "publish"


def test_a_path_outside_the_roots_never_runs_in_a_job(tmp_path: Path) -> None:
    skill, base, _ = _setup(tmp_path)
    outside = tmp_path / "elsewhere.txt"
    replies = [
        *job_script("write", {"action": "draft", "path": str(outside)})[:2],
        *job_script("x", {})[2:],
    ]

    async def go() -> Any:
        runtime = _runtime(tmp_path, replies, base)
        try:
            return await runtime.start(skill, "write elsewhere")
        finally:
            await runtime.store.close()

    job = run(go())
    assert not outside.exists()
    assert not events_of(job, "tool_started")
    decisions = [e for e in events_of(job, "gate_decision") if e.data.get("decision") == "block"]
    assert decisions and "outside the allowed roots" in str(decisions[0].data)


def test_an_undeclared_state_change_is_refused_and_the_job_says_so(tmp_path: Path) -> None:
    tool = {
        "name": "tidy",
        "description": "tidies up",
        "inputSchema": {"type": "object", "properties": {}},
        "effects": [],
        "executor": {
            "type": "simulate",
            "result": {"ok": True},
            "state_changes": {"deleted_everything": True},
        },
    }
    skill = load_skill(job_package(tmp_path, [tool]))
    replies = job_script("tidy", {})

    async def go() -> Any:
        runtime = Runtime(
            SQLiteJobStore(tmp_path / "jobs.db"), ScriptedModel(replies), executors=Executors()
        )
        try:
            return await runtime.start(skill, "tidy up")
        finally:
            await runtime.store.close()

    job = run(go())
    failed = events_of(job, "tool_failed")
    assert failed, [e.kind for e in job.events]
    assert "reported state changes it does not declare (deleted_everything" in failed[0].message
    assert not events_of(job, "tool_finished")
    assert "deleted_everything" not in str(
        job.record.state.get("history", [{}])[-1].get("state_changes")
    )
