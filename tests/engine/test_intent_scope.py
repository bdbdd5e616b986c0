"""End to end on the scripted model: the job's detected intent decides which workflows
and required inputs apply (issue 17 item 5). A password reset is not pushed into the
admin-access workflow, nor asked the admin justification."""

from __future__ import annotations

from pathlib import Path

from tests.engine.helpers import call, events_of, intent, run, runtime_for, skill_from

from skillwire.core.job import JobStatus, OutcomeClass
from skillwire.engine.compiled import CompiledSkill
from skillwire.engine.prompts import planner_request
from skillwire.skills import Skill

SKILL = """
id: it-desk
problem: {statement: "Help employees with passwords and access"}
intents:
  supported:
    - id: password_reset
      description: Reset a forgotten password
      examples: ["I forgot my password"]
    - id: admin_access
      description: Get admin access to a system
      examples: ["I need admin access"]
      maps_to_workflow: admin_access_flow
tools:
  - name: verify_identity
    inputs: [{name: employee_id, type: string, required: true}]
    executor: {type: simulate, result: {verified: true}}
  - name: manager_approval_check
    inputs: [{name: employee_id, type: string, required: true}]
    executor: {type: simulate, result: {approved: true}}
  - name: reset_password
    inputs: [{name: employee_id, type: string, required: true}]
    executor: {type: simulate, result: {status: reset, employee_id: "{{employee_id}}"}}
policy:
  workflows:
    - name: admin_access_flow
      required: true
      steps: [verify_identity, manager_approval_check, reset_password]
    - name: password_flow
      required: true
      intents: [password_reset]
      steps: [verify_identity, reset_password]
required_inputs:
  - path: justification
    prompt: Why do you need admin access?
    intents: [admin_access]
output_contract:
  required_fields: [status]
engine:
  finalization_gate: {enabled: false}
"""


def _skill(tmp_path: Path) -> Skill:
    return skill_from(tmp_path / "skill", SKILL)


def test_a_password_reset_runs_its_own_workflow_only(tmp_path: Path) -> None:
    script = [
        intent("password_reset", employee_id="E1"),
        call("verify_identity", "c1", employee_id="E1"),
        call("reset_password", "c2", employee_id="E1"),
        call("final_answer", "f1", answer="Your password is reset.", fields={"status": "reset"}),
        {"stage": "polisher", "text": "Your password is reset."},
    ]

    async def main() -> None:
        async with runtime_for(tmp_path / "jobs.db", script) as (rt, _):
            job = await rt.start(_skill(tmp_path), "I forgot my password")
            assert job.status is JobStatus.COMPLETED, job.record.outcome_class
            decisions = [e.data["decision"] for e in events_of(job, "gate_decision")]
            assert decisions == ["allow", "allow"]  # no manager check, no justification
            (boot,) = events_of(job, "bootstrapped")
            assert {g["from_workflow"] for g in boot.data["subgoals"]} == {"password_flow"}

    run(main())


def test_an_admin_access_job_gets_the_admin_workflow_and_input(tmp_path: Path) -> None:
    script = [
        intent("admin_access", employee_id="E1"),
        call("verify_identity", "c1", employee_id="E1"),
        call("verify_identity", "c2", employee_id="E1"),
        call("reset_password", "c3", employee_id="E1"),
        call("final_answer", "f1", answer="Not yet.", fields={"status": "pending"}),
        {"stage": "polisher", "text": "Not yet."},
    ]

    async def main() -> None:
        async with runtime_for(tmp_path / "jobs.db", script) as (rt, _):
            job = await rt.start(_skill(tmp_path), "I need admin access")
            assert job.status is JobStatus.PAUSED
            assert job.record.outcome_class is OutcomeClass.USER_ACTION_REQUIRED
            waiting = job.record.waiting
            assert waiting is not None and waiting.requested_fields == ["justification"]
            assert "Why do you need admin access?" in waiting.prompt_message
            (boot,) = events_of(job, "bootstrapped")
            assert {g["from_workflow"] for g in boot.data["subgoals"]} == {"admin_access_flow"}
            job = await rt.resume(job.id, input={"justification": "on call this week"})
            blocked = [
                e.data for e in events_of(job, "gate_decision") if e.data["decision"] == "block"
            ]
            assert [b["tool"] for b in blocked] == ["reset_password"]
            assert "manager_approval_check" in blocked[0]["reasons"][0]["message"]

    run(main())


def test_the_planner_gets_the_sub_goals_of_the_jobs_workflows(tmp_path: Path) -> None:
    compiled = CompiledSkill.build(_skill(tmp_path))
    flows = {
        "password_reset": {"password_flow"},
        "admin_access": {"admin_access_flow"},
        "bogus": {"password_flow", "admin_access_flow"},  # unknown: every workflow
    }
    for name, expected in flows.items():
        goals = compiled.goals_for([name])
        assert {g["from_workflow"] for g in goals} == expected, name
    assert len(compiled.goals_for([])) == len(compiled.subgoals)  # none known: all
    done = compiled.goals_for(["password_reset"], {"verify_identity"})
    assert [g["status"] for g in done] == ["done", "todo"]


def test_the_planner_is_told_the_workflow_that_lists_the_intent(tmp_path: Path) -> None:
    compiled = CompiledSkill.build(_skill(tmp_path))
    pairs = (("password_reset", "password_flow"), ("admin_access", "admin_access_flow"))
    for name, workflow in pairs:
        request = planner_request(
            compiled.skill,
            compiled.planner_system,
            compiled.goals_for([name]),
            {"intent": name},
            [],
            compiled.tools,
            None,
        )
        assert request.data["intent_workflow"] == workflow
