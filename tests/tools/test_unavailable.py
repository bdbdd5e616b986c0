"""Tools the runtime cannot run, told before planning: under
``missingCredentialBehavior: continue`` a tool whose credential is unset is not offered
to the planner (one line of its instructions says which and why), and a call of it that
a model proposes anyway is blocked by the gate (``TOOL_UNAVAILABLE``) without any
executor running; ``fail_fast`` is unchanged."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.engine.helpers import events_of, run
from tests.tools.helpers import (
    PY,
    SKILL_ID,
    base_of,
    job_package,
    job_script,
    shell_tool,
    write_base,
)
from typer.testing import CliRunner

from skillwire.assembly import refuse_without_credentials
from skillwire.cli_app import app
from skillwire.core import UsageError
from skillwire.core.job import JobStatus
from skillwire.engine import Runtime
from skillwire.engine.compiled import CompiledSkill
from skillwire.policy import BasePolicy, ReasonCode
from skillwire.skills import Skill, load_skill
from skillwire.store import SQLiteJobStore
from skillwire.testing import ScriptedModel
from skillwire.tools import Credentials, Executors, ShellExecutor

MESSAGE = "{{credentialId}} is not set; ask the operator"
TOKEN = "beta-secret-0123456789"


def _package(tmp_path: Path, mode: str = "continue", **extra: Any) -> tuple[Skill, Path]:
    """Three shell tools that each touch a marker file when they run: ``alpha`` bound to
    ``ALPHA_KEY``, ``gamma`` requiring it (``requiresCredentials``), ``beta`` bound to
    ``BETA_KEY``."""
    marks = tmp_path / "marks"
    marks.mkdir(parents=True)
    touch = "import pathlib, sys; pathlib.Path(sys.argv[1]).touch()"
    tools = [shell_tool(name, PY, ["-c", touch, str(marks / name)]) for name in ("alpha", "beta")]
    gamma = shell_tool("gamma", PY, ["-c", touch, str(marks / "gamma")])
    gamma["requiresCredentials"] = ["ALPHA_KEY"]
    tools.append(gamma)
    creds = {
        "credentials": [
            {"id": "ALPHA_KEY", "type": "env", "required": True, "secret": True},
            {"id": "BETA_KEY", "type": "env", "required": True, "secret": True},
        ],
        "bindings": [
            {"tool": "alpha", "credentialId": "ALPHA_KEY", "target": "A_TOKEN"},
            {"tool": "beta", "credentialId": "BETA_KEY", "target": "B_TOKEN"},
        ],
        "missingCredentialBehavior": {"mode": mode, "messageTemplate": MESSAGE},
        **extra,
    }
    folder = job_package(tmp_path / "pkg", tools, credentials=creds)
    return load_skill(folder), marks


def _base(tmp_path: Path) -> BasePolicy:
    return base_of(
        tmp_path,
        {
            "shell": {"allowedPrefixes": [f"{PY} -c"]},
            "filesystem": {"allowedWriteRoots": [str(tmp_path / "marks")]},
        },
    )


def _executors(environ: dict[str, str]) -> Executors:
    return Executors(shell=ShellExecutor(sandbox="off"), credentials=Credentials(environ=environ))


def _job(
    tmp_path: Path, skill: Skill, replies: list[dict[str, Any]], environ: dict[str, str]
) -> tuple[Any, ScriptedModel]:
    model = ScriptedModel(replies)

    async def go() -> Any:
        runtime = Runtime(
            SQLiteJobStore(tmp_path / "jobs.db"),
            model,
            executors=_executors(environ),
            base_policy=_base(tmp_path),
        )
        try:
            return await runtime.start(skill, "run the tool")
        finally:
            await runtime.store.close()

    return run(go()), model


def _planner_requests(model: ScriptedModel) -> list[Any]:
    return [c for c in model.calls if c.stage == "planner"]


def test_the_planner_is_not_offered_an_unavailable_tool_and_is_told_why(tmp_path: Path) -> None:
    skill, marks = _package(tmp_path)
    job, model = _job(tmp_path, skill, job_script("beta", {}), {"BETA_KEY": TOKEN})
    assert job.record.status is JobStatus.COMPLETED, job.events
    assert (marks / "beta").exists()
    requests = _planner_requests(model)
    assert requests
    for request in requests:
        offered = {t.name for t in request.tools}
        assert offered == {f"{SKILL_ID}__beta"}  # alpha (bound) and gamma (requires) left out
        system = request.messages[0].content
        lines = [line for line in system.splitlines() if line.startswith("UNAVAILABLE")]
        assert lines == [
            "UNAVAILABLE here, not offered, calls refused: "
            f"{SKILL_ID}__alpha (ALPHA_KEY is not set; ask the operator); "
            f"{SKILL_ID}__gamma (ALPHA_KEY is not set; ask the operator)"
        ]
        assert TOKEN not in repr(request)


@pytest.mark.parametrize(
    "name", [f"{SKILL_ID}__alpha", "alpha", f"{SKILL_ID}.alpha", f"{SKILL_ID}__gamma"]
)
def test_a_proposed_unavailable_tool_is_blocked_by_the_gate_and_never_runs(
    tmp_path: Path, name: str
) -> None:
    """Whatever name the model uses for it, the call is blocked with the reason, no
    executor starts (no ``tool_started``, no marker file), and the planner reads why."""
    skill, marks = _package(tmp_path)
    replies = job_script("alpha", {})
    replies[1]["tool_call"]["name"] = name
    job, model = _job(tmp_path, skill, replies, {"BETA_KEY": TOKEN})
    decisions = events_of(job, "gate_decision")
    assert decisions and decisions[0].data["decision"] == "block", job.events
    assert decisions[0].reason_code == ReasonCode.TOOL_UNAVAILABLE
    assert (
        "is unavailable in this runtime: ALPHA_KEY is not set; ask the operator"
        in (decisions[0].data["reasons"][0]["message"])
    )
    assert not events_of(job, "tool_started")
    assert not any(marks.iterdir())
    answer = [m.content for m in _planner_requests(model)[-1].messages if m.role == "tool"]
    assert any("ALPHA_KEY is not set; ask the operator" in text for text in answer)


def test_a_tool_becomes_available_once_its_credential_is_set(tmp_path: Path) -> None:
    skill, marks = _package(tmp_path)
    job, model = _job(
        tmp_path, skill, job_script("alpha", {}), {"ALPHA_KEY": "alpha-value", "BETA_KEY": TOKEN}
    )
    assert job.record.status is JobStatus.COMPLETED, job.events
    assert (marks / "alpha").exists()
    request = _planner_requests(model)[0]
    assert {t.name for t in request.tools} == {
        f"{SKILL_ID}__{n}" for n in ("alpha", "beta", "gamma")
    }
    assert "UNAVAILABLE" not in request.messages[0].content


def test_fail_fast_is_unchanged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Under ``fail_fast`` a job does not start while a required credential is unset
    (run exits 2, no job stored), whatever the planner would be offered."""
    skill, _ = _package(tmp_path, "fail_fast")
    with pytest.raises(UsageError, match="ALPHA_KEY is not set; ask the operator"):
        refuse_without_credentials(skill, Credentials(environ={"BETA_KEY": TOKEN}))
    monkeypatch.delenv("ALPHA_KEY", raising=False)
    (tmp_path / "none.toml").write_text("")
    monkeypatch.setenv("SKILLWIRE_CONFIG", str(tmp_path / "none.toml"))
    db = tmp_path / "jobs.db"
    result = CliRunner().invoke(
        app, ["run", str(skill.root), "-m", "go", "--model", "offline", "--db", str(db)]
    )
    assert result.exit_code == 2, result.output
    assert f"{SKILL_ID}: ALPHA_KEY is not set; ask the operator" in result.stderr
    assert not db.exists()


def test_unavailable_says_why_for_each_kind_of_tool(tmp_path: Path) -> None:
    """What the executors cannot run: a credential unset (bound or required), an MCP
    server not configured, an executor type this runtime lacks; nothing else."""
    skill, _ = _package(tmp_path)
    executors = _executors({"BETA_KEY": TOKEN})
    assert executors.unavailable(skill.tools, skill.root) == {
        f"{SKILL_ID}.alpha": "ALPHA_KEY is not set; ask the operator",
        f"{SKILL_ID}.gamma": "ALPHA_KEY is not set; ask the operator",
    }
    mcp = {
        "name": "remote",
        "description": "an MCP tool",
        "inputSchema": {"type": "object", "properties": {}},
        "executor": {"type": "mcp", "server": "nowhere"},
    }
    other = load_skill(job_package(tmp_path / "other", [mcp, shell_tool("ls", "ls", [])]))
    assert executors.unavailable(other.tools, other.root) == {
        f"{SKILL_ID}.remote": "MCP server 'nowhere' is not configured"
    }
    del executors.by_type["shell_command"]
    assert executors.unavailable(other.tools, other.root)[f"{SKILL_ID}.ls"] == (
        "executor type 'shell_command' is not available in this runtime"
    )


def test_a_long_reason_is_cut_in_the_planner_line(tmp_path: Path) -> None:
    skill, _ = _package(tmp_path)
    compiled = CompiledSkill.build(skill, unavailable={f"{SKILL_ID}.alpha": "x " * 500})
    line = compiled.planner_system.splitlines()[-2]
    assert line.startswith("UNAVAILABLE") and line.endswith("...)")
    assert len(line) < 250
    assert f"{SKILL_ID}__alpha" not in {t.name for t in compiled.tools}


def test_check_names_the_tools_that_become_unavailable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    skill, _ = _package(tmp_path)
    monkeypatch.delenv("ALPHA_KEY", raising=False)
    monkeypatch.setenv("BETA_KEY", TOKEN)
    config = tmp_path / "skillwire.toml"
    config.write_text('[credentials]\nenv = ["ALPHA_KEY", "BETA_KEY"]\n')
    monkeypatch.setenv("SKILLWIRE_CONFIG", str(config))
    result = CliRunner().invoke(app, ["check", str(skill.root), "--json"])
    data = json.loads(result.stdout)
    issues = [i for s in data["skills"] for f in s["files"] for i in f["issues"]]
    (unset,) = [i for i in issues if i["code"] == "credential-unset"]
    assert unset["severity"] == "warning"
    assert unset["message"] == (
        f"credential ALPHA_KEY is not set (bound to {SKILL_ID}.alpha): {SKILL_ID}.alpha, "
        f"{SKILL_ID}.gamma are unavailable (not offered to the planner, calls refused)"
    )
    assert unset["file"].endswith("credentials.json") and unset["line"]


def test_skillwire_call_blocks_an_unavailable_tool_and_runs_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``skillwire call`` asks the executors first, as a job does: a tool whose credential
    is unset is blocked by the gate (exit 1, ``TOOL_UNAVAILABLE``), not tried and failed
    (exit 4); the same call with the credential set runs."""
    skill, marks = _package(tmp_path)
    policy = write_base(
        tmp_path,
        {
            "shell": {"allowedPrefixes": [f"{PY} -c"]},
            "filesystem": {"allowedWriteRoots": [str(marks)]},
        },
    )
    config = tmp_path / "skillwire.toml"
    config.write_text('[credentials]\nenv = ["ALPHA_KEY", "BETA_KEY"]\n')
    monkeypatch.setenv("SKILLWIRE_CONFIG", str(config))
    monkeypatch.delenv("ALPHA_KEY", raising=False)
    monkeypatch.setenv("BETA_KEY", TOKEN)
    args = ["call", str(skill.root), "alpha", "--args", "{}", "--policy", str(policy), "--json"]
    blocked = CliRunner().invoke(app, args)
    assert blocked.exit_code == 1, blocked.output
    data = json.loads(blocked.stdout)
    assert data["decision"] == "block", data
    reason = data["reasons"][0]
    assert reason["code"] == str(ReasonCode.TOOL_UNAVAILABLE), data
    assert "ALPHA_KEY is not set; ask the operator" in reason["message"], data
    assert not any(marks.iterdir())
    monkeypatch.setenv("ALPHA_KEY", "alpha-value")
    ran = CliRunner().invoke(app, args)
    assert ran.exit_code == 0, ran.output
    assert (marks / "alpha").exists()
