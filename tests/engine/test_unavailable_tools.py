"""The engine reads which tools cannot run through the core protocol only
(``ExecutorRegistry.unavailable`` and ``prepare``), at every start and resume: a registry
written here, outside ``skillwire.tools``, decides. A tool that becomes unavailable while
its call waits for approval is blocked when the approval comes, and never runs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tests.engine.helpers import (
    REFUND_DIR,
    approval_script,
    decide,
    events_of,
    final,
    gate,
    polish,
    run,
)

from skillwire.core.executor import ExecutorRegistry, ToolOutcome
from skillwire.core.job import JobStatus, OutcomeClass
from skillwire.engine import Runtime
from skillwire.policy import ReasonCode
from skillwire.skills import Tool, load_skill
from skillwire.store import SQLiteJobStore
from skillwire.testing import ScriptedModel
from skillwire.tools import Executors


class Switchable(ExecutorRegistry[Tool]):
    """Runs tools with :class:`Executors`, but says ``down`` tools are unavailable and
    counts what the engine asked."""

    def __init__(self) -> None:
        self.inner = Executors()
        self.down: dict[str, str] = {}
        self.prepared = 0
        self.ran: list[str] = []

    def unavailable(self, tools: Sequence[Tool], skill_root: Path | None) -> Mapping[str, str]:
        names = {t.name for t in tools}
        return {name: why for name, why in self.down.items() if name in names}

    async def prepare(self, tools: Sequence[Tool], skill_root: Path | None) -> None:
        self.prepared += 1

    def waits(self, tool: Tool, skill_root: Path | None) -> bool:
        return self.inner.waits(tool, skill_root)

    async def execute(
        self, tool: Tool, args: dict[str, Any], *, idempotency_key: str, skill_root: Path | None
    ) -> ToolOutcome:
        self.ran.append(tool.name)
        return await self.inner.execute(
            tool, args, idempotency_key=idempotency_key, skill_root=skill_root
        )


def test_a_tool_that_became_unavailable_during_an_approval_never_runs(tmp_path: Path) -> None:
    skill = load_skill(REFUND_DIR / "domain.yaml")
    refund = skill.tool("process_refund")
    assert refund is not None
    replies = approval_script()[:4]
    replies += [
        final(
            "The refund could not be made: the payment system is unavailable.",
            {"order_id": "ORD-12345", "status": "failed", "next_steps": "try again later"},
        ),
        gate(),
        polish("The refund could not be made: the payment system is unavailable."),
    ]
    registry = Switchable()
    model = ScriptedModel(replies)

    async def go() -> tuple[Any, Any]:
        runtime = Runtime(SQLiteJobStore(tmp_path / "jobs.db"), model, executors=registry)
        try:
            paused = await runtime.start(skill, "refund ORD-12345, 750")
            registry.down[refund.name] = "the payment system is down"
            done = await decide(runtime, paused.id, "approve")
            return paused, done
        finally:
            await runtime.store.close()

    paused, done = run(go())
    assert paused.record.outcome_class is OutcomeClass.APPROVAL_REQUIRED
    assert registry.prepared == 2  # at the start and at the resume
    assert refund.name not in registry.ran
    blocked = [
        e for e in events_of(done, "gate_decision") if e.reason_code == ReasonCode.TOOL_UNAVAILABLE
    ]
    assert blocked, done.events
    assert "the payment system is down" in blocked[0].data["reasons"][0]["message"]
    assert done.record.status is JobStatus.COMPLETED
    planner = [c for c in model.calls if c.stage == "planner"]
    last = planner[-1]
    assert "process_refund" not in {t.name for t in last.tools}
    assert "the payment system is down" in last.messages[0].content
    assert "UNAVAILABLE" not in planner[0].messages[0].content
