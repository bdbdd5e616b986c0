"""No proposal runs twice on one approval (issue 16 item 1), over random jobs (hypothesis).

A planner proposes a random sequence of payments (some amounts repeated, some needing
a second approver) and each pause is approved or denied at random. Whatever the
sequence: a call runs at most as many times as approvals were given for it, every run
of an approval-gated call consumed a grant of its own, and a call proposed again after
its run paused again.
"""

from __future__ import annotations

import asyncio
import itertools
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.engine.helpers import call, decide, events_of, final, intent, skill_from

from skillwire.core.job import JobStatus
from skillwire.engine import Runtime
from skillwire.store import SQLiteJobStore
from skillwire.testing import ScriptedModel
from skillwire.tools import Executors

PAYMENTS = """
    id: payments
    name: Payments
    problem:
      statement: "Pay people"
    role:
      name: "Clerk"
    intents:
      supported:
        - id: intent_pay
          description: "Pay"
          examples: ["pay bob"]
    tools:
      - name: pay
        description: "Pay an amount"
        inputs:
          - {name: amount, type: integer, required: true}
        policy:
          requires_approval: always
          approver: supervisor
        executor:
          type: simulate
          result: {paid: "{{amount}}"}
    policy:
      approvals:
        - {tool_id: pay, when: "amount > 2", approver: finance}
    output_contract:
      required_fields: [summary]
    engine:
      max_iterations: 60
      max_model_calls: 100
      finalization_gate:
        enabled: false
"""


def key(args: dict[str, Any]) -> int:
    return int(args["amount"])


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    amounts=st.lists(st.integers(1, 4), min_size=1, max_size=8),
    decisions=st.lists(st.booleans(), min_size=1, max_size=12),
)
def test_no_call_runs_more_often_than_it_was_approved(
    amounts: list[int], decisions: list[bool]
) -> None:
    script = [
        intent("intent_pay"),
        *(call("pay", f"c{i}", amount=a) for i, a in enumerate(amounts)),
        final("done", {"summary": "done"}),
    ]
    answers = itertools.cycle(decisions)

    async def main() -> None:
        with tempfile.TemporaryDirectory() as tmp:
            skill = skill_from(Path(tmp) / "skill", PAYMENTS)
            store = SQLiteJobStore(Path(tmp) / "jobs.db")
            try:
                rt = Runtime(store, ScriptedModel(script), executors=Executors())
                job = await rt.start(skill, "pay bob")
                for _ in range(40):
                    if job.status is not JobStatus.PAUSED:
                        break
                    approval = "approve" if next(answers) else "deny"
                    role = job.record.waiting.approver if job.record.waiting else None
                    job = await decide(rt, job.id, approval, role=role)
                assert job.status is JobStatus.COMPLETED
            finally:
                await store.close()
        ran = Counter(key(e.data["args"]) for e in events_of(job, "tool_started"))
        granted: Counter[tuple[int, str]] = Counter(
            (key(e.data["args"]), e.data["role"]) for e in events_of(job, "approval_granted")
        )
        for amount, runs in ran.items():
            assert runs <= granted[(amount, "supervisor")], (amounts, decisions)
            if amount > 2:
                assert runs <= granted[(amount, "finance")], (amounts, decisions)
        # every proposal was put to the gate after its predecessor ran: a call proposed
        # again after it ran never ran without a pause of its own
        asked = Counter(key(e.data["waiting"]["arguments"]) for e in events_of(job, "paused"))
        for amount, runs in ran.items():
            assert asked[amount] >= runs

    asyncio.run(main())
