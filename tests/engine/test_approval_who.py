"""Who decides, at the runtime (issue 16 item 5): a decision names the pause it answers
and who decides; the job's owner never approves their own call unless the rule says
``self_approval: allowed``; the events record ``decided_by``."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from tests.engine.helpers import (
    ORDER,
    REFUND_DIR,
    approval_script,
    decide,
    events_of,
    final,
    refund_variant,
    run,
    runtime_for,
)

from skillwire.core.errors import ConflictError, ForbiddenError, UsageError
from skillwire.core.job import JobStatus, OutcomeClass
from skillwire.skills import Skill, load_skill

MESSAGE = "Refund 750 for ORD-12345"
ALLOWED = "      self_approval: allowed\n"
SENTENCE = '      - "Never process refunds over $500 without supervisor approval"\n'


def test_the_owner_may_not_approve_their_own_call(tmp_path: Path) -> None:
    skill = refund_variant(tmp_path / "skill")

    async def main() -> None:
        async with runtime_for(tmp_path / "jobs.db", approval_script()) as (rt, model):
            job = await rt.start(skill, MESSAGE, owner="olga")
            with pytest.raises(ForbiddenError, match=r"'olga' owns job .* another supervisor"):
                await decide(rt, job.id, role="supervisor", decided_by="olga")
            for who in ("", "   ", None):
                with pytest.raises(UsageError, match="who decides"):
                    await decide(rt, job.id, decided_by=who)  # type: ignore[arg-type]
            with pytest.raises(UsageError, match="correlation_id"):
                await decide(rt, job.id, correlation_id=None)
            with pytest.raises(ConflictError, match="another correlation id"):
                await decide(rt, job.id, correlation_id="")
            still = await rt.view(job.id)
            assert still.record.outcome_class is OutcomeClass.APPROVAL_REQUIRED
            assert still.record.version == job.record.version  # nothing was written
            job = await decide(rt, job.id, decided_by="Olga")  # another name is another one
            model.assert_complete()
            assert job.status is JobStatus.COMPLETED
            granted = events_of(job, "approval_granted")
            assert [(e.data["decided_by"], e.data["role"]) for e in granted] == [
                ("Olga", "supervisor")
            ]

    run(main())


def self_approving(folder: Path) -> Skill:
    """The refund skill whose approval rules say ``self_approval: allowed`` (the
    guardrail sentence asking the same, which cannot say it, dropped)."""
    folder.mkdir(parents=True)
    shutil.copy(REFUND_DIR / "refund_tools.py", folder / "refund_tools.py")
    condition = '      condition: "amount > 500"\n'
    approver = "      approver: supervisor\n"
    text = (REFUND_DIR / "domain.yaml").read_text()
    assert SENTENCE in text and condition in text and approver in text
    text = text.replace(SENTENCE, "").replace(condition, condition + ALLOWED)
    (folder / "domain.yaml").write_text(text.replace(approver, approver + ALLOWED))
    return load_skill(folder / "domain.yaml")


def test_self_approval_allowed_lets_the_owner_approve(tmp_path: Path) -> None:
    skill = self_approving(tmp_path / "skill")

    async def main() -> None:
        async with runtime_for(tmp_path / "jobs.db", approval_script()) as (rt, model):
            job = await rt.start(skill, MESSAGE, owner="olga")
            assert job.record.waiting is not None and job.record.waiting.self_approval is True
            job = await decide(rt, job.id, decided_by="olga")
            model.assert_complete()
            assert job.status is JobStatus.COMPLETED
            assert [e.data["decided_by"] for e in events_of(job, "approval_granted")] == ["olga"]

    run(main())


def test_the_owner_may_deny_their_own_call(tmp_path: Path) -> None:
    skill = refund_variant(tmp_path / "skill")
    # a denied request ends DENIED without the finalization gate or the polisher
    script = approval_script()[:4]
    script.append(
        final("Not refunded.", {"order_id": ORDER, "status": "denied", "next_steps": "-"})
    )

    async def main() -> None:
        async with runtime_for(tmp_path / "jobs.db", script) as (rt, model):
            job = await rt.start(skill, MESSAGE, owner="olga")
            job = await decide(rt, job.id, "deny", decided_by="olga")
            model.assert_complete()
            assert job.status is JobStatus.COMPLETED
            assert job.record.outcome_class is OutcomeClass.DENIED
            denied = events_of(job, "approval_denied")
            assert [e.data["decided_by"] for e in denied] == ["olga"]

    run(main())
