"""Spec 001's acceptance criteria, each as a test, on the scripted model.

- No skill code references pause or resume mechanics
- No skill can cause ENGINE_BUDGET_EXHAUSTED by missing input
- All user-input flows pause deterministically
- UI widget appears consistently (status paused, outcome USER_ACTION_REQUIRED,
  waiting.reason_code)
- Jobs resume cleanly on user input
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.engine.helpers import (
    ORDER,
    REFUND_DIR,
    call,
    decide,
    events_of,
    final,
    gate,
    gate_fail,
    input_script,
    intent,
    kinds,
    polish,
    refund_variant,
    run,
    runtime_for,
)

from skillwire.core.job import JobStatus, OutcomeClass
from skillwire.engine import JobView, Runtime
from skillwire.skills import Skill, load_skill
from skillwire.store import SQLiteJobStore
from skillwire.testing import ScriptedModel
from skillwire.tools import Executors

EXAMPLES = REFUND_DIR.parent
FORBIDDEN = re.compile(
    r"askUser|\bpause[ds]?\b|\bresum(?:e|ed|es)\b|USER_ACTION_REQUIRED|INTERNAL_ERROR|"
    r"_meta\.deferred|\bwaiting\b|correlation_id|ENGINE_BUDGET",
    re.IGNORECASE,
)
SKILL_CODE = (
    "*.py",
    "*.yaml",
    "*.yml",
    "tools.json",
    "guardrails.json",
    "skill.json",
    "credentials.json",
    "prerequisites.json",
)


def widget(job: dict[str, Any]) -> bool:
    """Spec 001's UI contract: render the input widget if and only if this holds."""
    waiting = job.get("waiting") or {}
    return (
        job["status"] == "paused"
        and job["outcome_class"] == "USER_ACTION_REQUIRED"
        and bool(waiting.get("reason_code"))
    )


def skill_files() -> list[Path]:
    """Every file of skill code in the examples (tool modules and definitions, not the
    prose of skill.md or the expectations of tests.json)."""
    found = [
        p
        for folder in EXAMPLES.iterdir()
        if folder.is_dir()
        for pattern in SKILL_CODE
        for p in folder.glob(pattern)
    ]
    assert len(found) >= 6, found
    return found


def code_lines(path: Path) -> list[tuple[int, str]]:
    """The numbered lines of a skill file, without its ``tests:`` section: a dry run's
    expectations (the pauses it must meet) are tests, as tests.json is, not skill code."""
    lines = path.read_text().splitlines()
    if path.suffix == ".json":
        data = json.loads(path.read_text())
        if isinstance(data, dict) and "tests" in data:
            data.pop("tests")
            lines = json.dumps(data, indent=1).splitlines()
        return list(enumerate(lines, start=1))
    kept, in_tests = [], False
    for n, line in enumerate(lines, start=1):
        if line and not line[0].isspace() and not line.startswith("#"):
            in_tests = line.startswith("tests:")
        if not in_tests:
            kept.append((n, line))
    return kept


def test_no_skill_code_references_pause_or_resume_mechanics() -> None:
    offending = [
        f"{path.relative_to(EXAMPLES)}:{n}: {line.strip()}"
        for path in skill_files()
        for n, line in code_lines(path)
        if FORBIDDEN.search(line)
    ]
    assert offending == []


def test_the_example_skills_declare_inputs_and_never_ask() -> None:
    text = (REFUND_DIR / "domain.yaml").read_text()
    assert "required: true" in text  # requirements are declared ...
    assert "ask" not in re.findall(r"\b\w+\b", text.lower())  # ... never asked for


def tight(tmp_path: Path, iterations: int) -> Skill:
    """The refund skill with budgets that fit the input flow exactly (4 planner steps,
    7 model calls), or are one iteration short."""
    return refund_variant(
        tmp_path / f"skill{iterations}",
        engine=f"  max_iterations: {iterations}\n  max_model_calls: 7\n",
    )


def test_missing_input_never_exhausts_the_budget(tmp_path: Path) -> None:
    async def main() -> None:
        async with runtime_for(tmp_path / "jobs.db", input_script()) as (rt, model):
            job = await rt.start(tight(tmp_path, 4), "I want a refund of $750")
            assert job.record.outcome_class is OutcomeClass.USER_ACTION_REQUIRED
            for bad in ("12345", "ORD-1", "", "ord-12345", "ORD-123456"):
                job = await rt.resume(job.id, input={"order_id": bad})
                assert job.record.outcome_class is OutcomeClass.USER_ACTION_REQUIRED
            job = await rt.resume(job.id, input={"order_id": ORDER})
            assert job.record.outcome_class is OutcomeClass.APPROVAL_REQUIRED
            job = await decide(rt, job.id, "approve", role="supervisor")
            model.assert_complete()
            assert job.status is JobStatus.COMPLETED
            assert job.record.state["iterations"] == 4
            assert job.record.state["model_calls"] == 7
            assert "budget_exhausted" not in kinds(job)

    run(main())


def test_the_same_flow_one_iteration_short_does_exhaust_the_budget(tmp_path: Path) -> None:
    # the contrast: the budget above was tight, and only real work spends it
    async def main() -> None:
        async with runtime_for(tmp_path / "jobs.db", input_script()[:4]) as (rt, model):
            job = await rt.start(tight(tmp_path, 3), "I want a refund of $750")
            job = await rt.resume(job.id, input={"order_id": ORDER})
            job = await decide(rt, job.id, "approve", role="supervisor")
            model.assert_complete()
            assert job.status is JobStatus.FAILED
            assert job.record.outcome_class is OutcomeClass.ENGINE_BUDGET_EXHAUSTED

    run(main())


REQUIRED_INPUTS = """allowed_state_changes: [refund_issued]
required_inputs:
  - path: identity.email_or_phone
    prompt: "Please give the email or phone number on your account."
"""


def _missing_argument(tmp_path: Path) -> tuple[Skill, list[dict[str, Any]]]:
    return load_skill(REFUND_DIR / "domain.yaml"), input_script()[:2]


def _required_input(tmp_path: Path) -> tuple[Skill, list[dict[str, Any]]]:
    skill = refund_variant(tmp_path / "ri", state_changes=REQUIRED_INPUTS)
    return skill, [intent(order_id=ORDER), call("verify_identity", "c1", order_id=ORDER)]


def _clarification(tmp_path: Path) -> tuple[Skill, list[dict[str, Any]]]:
    status = {"order_id": ORDER, "status": "shipped", "next_steps": "soon"}
    script = [
        intent("intent_order_status", order_id=ORDER),
        call("check_order_status", "s1", order_id=ORDER),
        final("It ships.", status),
        gate_fail("MISSING_REQUIRED_FIELD", "CLARIFY_USER", ["delivery_address"]),
    ]
    return load_skill(REFUND_DIR / "domain.yaml"), script


FLOWS: dict[str, Callable[[Path], tuple[Skill, list[dict[str, Any]]]]] = {
    "missing tool argument": _missing_argument,
    "required_inputs before the first tool": _required_input,
    "finalization gate asks the user": _clarification,
}
EXPECTED = {
    "missing tool argument": ("MISSING_REQUIRED_INPUT", ["order_id"]),
    "required_inputs before the first tool": (
        "MISSING_REQUIRED_INPUT",
        ["identity.email_or_phone"],
    ),
    "finalization gate asks the user": ("CLARIFICATION_REQUIRED", ["delivery_address"]),
}


def _shape(job: JobView) -> tuple[Any, ...]:
    w = job.record.waiting
    assert w is not None
    return (
        job.status,
        job.record.outcome_class,
        w.reason_code,
        w.requested_fields,
        w.prompt_message,
        w.field_schemas,
        kinds(job),
        len(job.model_calls),
    )


@pytest.mark.parametrize("flow", list(FLOWS))
def test_user_input_flows_pause_deterministically(tmp_path: Path, flow: str) -> None:
    skill, script = FLOWS[flow](tmp_path)

    async def main() -> None:
        shapes = []
        for attempt in range(2):
            async with runtime_for(tmp_path / f"jobs{attempt}.db", script) as (rt, model):
                job = await rt.start(skill, "I need help with my order")
                model.assert_complete()
                shapes.append(_shape(job))
                pause = kinds(job).index("paused")
                assert "tool_started" not in kinds(job)[pause - 3 : pause]
        assert shapes[0] == shapes[1]
        status, outcome, code, fields = shapes[0][:4]
        assert (status, outcome) == (JobStatus.PAUSED, OutcomeClass.USER_ACTION_REQUIRED)
        assert (code, fields) == EXPECTED[flow]

    run(main())


def test_the_ui_widget_condition_holds_at_every_step(tmp_path: Path, refund_yaml: Path) -> None:
    async def main() -> None:
        async with runtime_for(tmp_path / "jobs.db", input_script()) as (rt, _):
            shown = []

            async def check(view: JobView) -> None:
                stored = await rt.store.get(view.id)
                assert stored is not None
                as_dict = view.to_dict()
                assert widget(as_dict) == widget(JobView(stored, [], []).to_dict())
                assert (as_dict["waiting"] is None) == (as_dict["status"] != "paused")
                shown.append(widget(as_dict))

            job = await rt.start(load_skill(refund_yaml), "I want a refund of $750")
            await check(job)
            await check(await rt.resume(job.id, input={"order_id": "nope"}))
            approval = await rt.resume(job.id, input={"order_id": ORDER})
            await check(approval)
            assert approval.record.outcome_class is OutcomeClass.APPROVAL_REQUIRED
            await check(await decide(rt, job.id, "approve", role="supervisor"))
            assert shown == [True, True, False, False]  # input, rejected input, approval, done

    run(main())


def test_a_job_resumes_cleanly_on_input_in_another_runtime(
    tmp_path: Path, refund_yaml: Path
) -> None:
    db = tmp_path / "jobs.db"
    script = input_script()

    async def main() -> None:
        async with runtime_for(db, script) as (rt, _):
            job = await rt.start(load_skill(refund_yaml), "I want a refund of $750")
        asked = job.record.waiting
        assert asked is not None
        # another worker: a new store connection, a new runtime, the script continued
        store = SQLiteJobStore(db)
        model = ScriptedModel(script)
        model.skip(job.record.state["model_calls"])
        try:
            worker = Runtime(store, model, executors=Executors())
            job = await worker.resume(
                job.id, input={"order_id": ORDER}, correlation_id=asked.correlation_id
            )
            assert job.record.outcome_class is OutcomeClass.APPROVAL_REQUIRED
            job = await decide(worker, job.id, "approve", role="supervisor")
        finally:
            await store.close()
        model.assert_complete()
        assert job.status is JobStatus.COMPLETED
        received = events_of(job, "input_received")
        assert len(received) == 1
        assert received[0].data["correlation_id"] == asked.correlation_id
        assert received[0].data["inputs"] == {"order_id": ORDER}
        runs = [e.data["args"] for e in events_of(job, "tool_started")]
        assert runs[0] == {"order_id": ORDER}  # the paused call ran with the input
        assert [e.data["waiting"]["reason_code"] for e in events_of(job, "paused")] == [
            "MISSING_REQUIRED_INPUT",
            "APPROVAL_REQUIRED",
        ]  # asked once, then the approval
        assert job.record.reply == polish()["text"]
        assert gate()["json"]["passed"]

    run(main())
