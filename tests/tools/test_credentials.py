"""Credentials: where values come from, validation, injection into the bound tool only,
redaction, missing-credential behaviour, ``skillwire check``, and a canary secret that
must appear nowhere a job leaves traces."""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import textwrap
from pathlib import Path
from typing import Any

import pytest
from tests.tools.helpers import (
    PY,
    job_package,
    job_script,
    package,
    shell_tool,
    tool_of,
    write_base,
    write_package,
)
from typer.testing import CliRunner

from skillwire.assembly import refuse_without_credentials
from skillwire.cli_app import app
from skillwire.core import UsageError
from skillwire.skills import load_skill
from skillwire.tools import Credentials, Executors, ShellExecutor
from skillwire.tools.credentials import load_secrets, mask

ALPHA = "alpha-secret-0123456789"
BETA = "beta-secret-9876543210"

ENV_PROBE = textwrap.dedent(
    """
    import hashlib, json, os
    print(json.dumps({k: hashlib.sha256(v.encode()).hexdigest() for k, v in os.environ.items()}))
    """
)
ECHO_SECRET = "import os, sys\nprint('token is ' + os.environ['API_TOKEN'])\n"


def spec(cid: str, *, required: bool = True, **extra: Any) -> dict[str, Any]:
    return {"id": cid, "type": "env", "required": required, "secret": True, **extra}


def two_tools(tmp_path: Path, mode: str = "fail_fast", message: str = "") -> Any:
    script = tmp_path / "probe.py"
    tmp_path.mkdir(parents=True, exist_ok=True)
    script.write_text(ENV_PROBE)
    tools = [shell_tool(name, PY, [str(script)]) for name in ("alpha", "beta", "plain")]
    creds = {
        "credentials": [
            spec("ALPHA_KEY", validation={"minLength": 8}, redaction={"showPrefix": 2}),
            spec("BETA_KEY", validation={"pattern": "^beta-"}),
        ],
        "bindings": [
            {"tool": "alpha", "credentialId": "ALPHA_KEY", "injectAs": "env", "target": "A_TOKEN"},
            {"tool": "beta", "credentialId": "BETA_KEY", "injectAs": "env", "target": "B_TOKEN"},
        ],
        "missingCredentialBehavior": {"mode": mode, "messageTemplate": message},
    }
    return package(tmp_path, tools, credentials=creds)


def run_tool(executors: Executors, skill: Any, name: str, args: dict[str, Any]) -> Any:
    return asyncio.run(
        executors.execute(tool_of(skill, name), args, idempotency_key="k", skill_root=skill.root)
    )


def test_a_tools_environment_holds_only_its_own_bound_credentials(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ALPHA_KEY", ALPHA)
    monkeypatch.setenv("BETA_KEY", BETA)
    skill = two_tools(tmp_path)
    executors = Executors(
        shell=ShellExecutor(sandbox="off"),
        credentials=Credentials(env_names=["ALPHA_KEY", "BETA_KEY"]),
    )
    digest = {v: hashlib.sha256(v.encode()).hexdigest() for v in (ALPHA, BETA)}
    seen = {
        name: json.loads(run_tool(executors, skill, name, {}).result["stdout"])
        for name in ("alpha", "beta", "plain")
    }
    assert seen["alpha"].get("A_TOKEN") == digest[ALPHA]
    assert seen["beta"].get("B_TOKEN") == digest[BETA]
    for name, env in seen.items():
        names = set(env) - {"PATH", "LANG", "HOME", "TMPDIR", "PWD", "LC_CTYPE"}
        assert names == {"alpha": {"A_TOKEN"}, "beta": {"B_TOKEN"}, "plain": set()}[name]
        others = {digest[ALPHA], digest[BETA]} - {env.get("A_TOKEN"), env.get("B_TOKEN")}
        assert not others & set(env.values())  # not under any other name either


def test_values_come_from_the_environment_then_the_secrets_file(tmp_path: Path) -> None:
    secrets = tmp_path / "secrets.toml"
    secrets.write_text(f'ALPHA_KEY = "{ALPHA}"\nBETA_KEY = "{BETA}"\n')
    skill = two_tools(tmp_path / "p")
    creds = Credentials(secrets=load_secrets(secrets), environ={"BETA_KEY": "beta-from-env"})
    resolved = creds.resolve(skill)
    assert resolved.values == {"ALPHA_KEY": ALPHA, "BETA_KEY": "beta-from-env"}
    assert resolved.environment("alpha") == {"A_TOKEN": ALPHA}
    assert resolved.environment("tools-demo.beta") == {"B_TOKEN": "beta-from-env"}
    assert resolved.environment("plain") == {}


def test_validation_treats_a_bad_value_as_unset_and_never_repeats_it(tmp_path: Path) -> None:
    skill = two_tools(tmp_path)
    creds = Credentials(environ={"ALPHA_KEY": "short", "BETA_KEY": "gamma-value-xyz"})
    resolved = creds.resolve(skill)
    assert resolved.values == {}
    assert resolved.problems == {
        "ALPHA_KEY": "ALPHA_KEY is shorter than 8 characters",
        "BETA_KEY": "BETA_KEY does not match its validation pattern",
    }
    text = json.dumps([str(i) for i in resolved.issues()])
    assert "short" not in text.replace("shorter", "") and "gamma" not in text


def test_secrets_file_errors_never_quote_it(tmp_path: Path) -> None:
    bad = tmp_path / "secrets.toml"
    bad.write_text(f'ALPHA_KEY = "{ALPHA}\n')  # unterminated
    with pytest.raises(Exception) as caught:
        load_secrets(bad)
    assert ALPHA not in str(caught.value)
    (tmp_path / "n.toml").write_text("ALPHA_KEY = 5\n")
    with pytest.raises(Exception, match="must be strings"):
        load_secrets(tmp_path / "n.toml")


def test_redaction_shows_only_the_declared_prefix_and_suffix() -> None:
    assert mask("abcdefghijkl", 2, 2) == "ab****kl"
    assert mask("abcdefghijkl", 0, 0) == "****"
    assert mask("abcd", 2, 2) == "****"  # would show all of it
    assert mask("abcdefghijkl", 6, 0) == "****"  # would show half


def test_tool_output_is_redacted(tmp_path: Path) -> None:
    script = tmp_path / "echo.py"
    script.write_text(ECHO_SECRET)
    tool = shell_tool("echo", PY, [str(script)])
    creds = {
        "credentials": [spec("API_KEY", redaction={"showPrefix": 3, "showSuffix": 2})],
        "bindings": [{"tool": "echo", "credentialId": "API_KEY", "target": "API_TOKEN"}],
    }
    skill = package(tmp_path, [tool], credentials=creds)
    executors = Executors(
        shell=ShellExecutor(sandbox="off"),
        credentials=Credentials(environ={"API_KEY": ALPHA}),
    )
    outcome = run_tool(executors, skill, "echo", {})
    assert outcome.ok
    assert outcome.result["stdout"] == "token is alp****89\n"


def test_continue_marks_the_bound_tools_unavailable(tmp_path: Path) -> None:
    skill = two_tools(tmp_path, "continue", "{{credentialId}} is not set; ask the operator")
    executors = Executors(
        shell=ShellExecutor(sandbox="off"), credentials=Credentials(environ={"BETA_KEY": BETA})
    )
    failed = run_tool(executors, skill, "alpha", {})
    assert not failed.ok
    assert failed.error == "tools-demo.alpha is unavailable: ALPHA_KEY is not set; ask the operator"
    assert run_tool(executors, skill, "beta", {}).ok
    assert run_tool(executors, skill, "plain", {}).ok
    refuse_without_credentials(skill, Credentials(environ={}))  # continue: the job starts


def test_fail_fast_refuses_to_start_a_job(tmp_path: Path) -> None:
    skill = two_tools(tmp_path, "fail_fast", "{{credentialId}} is missing: see the runbook")
    with pytest.raises(UsageError, match="ALPHA_KEY is missing: see the runbook"):
        refuse_without_credentials(skill, Credentials(environ={"BETA_KEY": BETA}))
    refuse_without_credentials(skill, Credentials(environ={"ALPHA_KEY": ALPHA, "BETA_KEY": BETA}))


def test_check_lists_required_credentials_that_are_unset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    two_tools(tmp_path / "p")
    monkeypatch.delenv("ALPHA_KEY", raising=False)
    monkeypatch.setenv("BETA_KEY", BETA)
    config = tmp_path / "skillwire.toml"
    config.write_text('[credentials]\nenv = ["ALPHA_KEY", "BETA_KEY"]\n')
    monkeypatch.setenv("SKILLWIRE_CONFIG", str(config))
    result = CliRunner().invoke(app, ["check", str(tmp_path / "p" / "tools-demo"), "--json"])
    data = json.loads(result.stdout)
    issues = [i for s in data["skills"] for f in s["files"] for i in f["issues"]]
    unset = [i["message"] for i in issues if i["code"] == "credential-unset"]
    assert len(unset) == 1
    assert unset[0].startswith("credential ALPHA_KEY is not set (bound to tools-demo.alpha)")
    facts = [i["message"] for i in issues if i["code"] == "tool-report"]
    assert "tools-demo.alpha: executor shell_command" in facts[0]
    assert "credentials ALPHA_KEY (unset)" in facts[0]
    assert "credentials BETA_KEY (set)" in facts[1]


# -- the canary ------------------------------------------------------------------------

CANARY = "canary-7f3a9c2e5b1d4086-secret"


def test_a_canary_secret_appears_nowhere_a_job_leaves_traces(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The tool prints its secret (in its output, its error and a file name); the job
    runs through the CLI on the scripted model; then the events, the database files,
    the logs, ``skillwire show`` and the page are searched for it."""
    caplog.set_level(logging.DEBUG)
    code = (
        "import os, sys\nt = os.environ['API_TOKEN']\n"
        "print(t)\nprint('err ' + t, file=sys.stderr)\nsys.exit('failed with ' + t)\n"
    )
    script = tmp_path / "leak.py"
    script.write_text(code)
    tool = shell_tool("leak", PY, [str(script), "{{note}}"], {"note": {"type": "string"}})
    creds = {
        "credentials": [spec("CANARY_KEY", redaction={"showPrefix": 2, "showSuffix": 2})],
        "bindings": [{"tool": "leak", "credentialId": "CANARY_KEY", "target": "API_TOKEN"}],
    }
    folder = job_package(tmp_path, [tool], credentials=creds)
    base = write_base(
        tmp_path,
        {"shell": {"allowedPrefixes": [PY]}, "filesystem": {"allowedReadRoots": [str(tmp_path)]}},
    )
    config = tmp_path / "skillwire.toml"
    config.write_text(
        f'[runtime]\nbase_policy = "{base}"\n[tools]\nsandbox = "off"\n'
        '[credentials]\nenv = ["CANARY_KEY"]\n'
    )
    monkeypatch.setenv("SKILLWIRE_CONFIG", str(config))
    monkeypatch.setenv("CANARY_KEY", CANARY)
    db = tmp_path / "db" / "jobs.db"
    script_file = tmp_path / "script.json"
    script_file.write_text(json.dumps(job_script("leak", {"note": "hello"})))
    runner = CliRunner()
    started = runner.invoke(
        app,
        ["run", str(folder), "-m", "run the tool", "--model", f"scripted:{script_file}",
         "--db", str(db), "--json"],
    )  # fmt: skip
    assert started.exit_code == 1, started.output  # the tool failed: a job not done
    job = json.loads(started.stdout)
    failed = [e for e in job["events"] if e["kind"] == "tool_failed"]
    assert failed and "ca****et" in failed[0]["message"], job["events"]
    shown = runner.invoke(app, ["show", job["id"], "--db", str(db)])
    shown_json = runner.invoke(app, ["show", job["id"], "--db", str(db), "--json"])
    assert shown.exit_code == 0 and shown_json.exit_code == 0
    places = {
        "run --json": started.output,
        "show": shown.output,
        "show --json": shown_json.output,
        "logs": caplog.text,
    }
    for file in sorted((tmp_path / "db").iterdir()):
        places[f"database file {file.name}"] = file.read_bytes().decode("latin-1")
    places["page"] = _page(tmp_path, folder, db, job["id"])
    for where, text in places.items():
        assert CANARY not in text, f"the canary leaked into {where}"
        assert CANARY[4:-4] not in text, f"a part of the canary leaked into {where}"


def _page(tmp_path: Path, folder: Path, db: Path, job_id: str) -> str:
    """The job's page as an admin sees it in the web UI."""
    from fastapi.testclient import TestClient
    from tests.server.helpers import key, server_config

    from skillwire.server import ServerSettings, create_app

    settings = ServerSettings(skill_paths=[folder], db=db, config=server_config())
    with TestClient(create_app(settings)) as client:
        login = client.post(
            "/login", data={"key": key("boss"), "next": "/"}, follow_redirects=False
        )
        assert login.status_code == 303
        page = client.get(f"/jobs/{job_id}")
        assert page.status_code == 200, page.text
        assert "tools-demo.leak" in page.text
        return page.text


def test_the_example_secret_never_reaches_a_skill_load(tmp_path: Path) -> None:
    folder = write_package(
        tmp_path,
        [shell_tool("x", "ls", [])],
        credentials={"credentials": [spec("K")], "bindings": []},
    )
    assert load_skill(folder).credentials is not None


def test_skillwire_run_refuses_to_start_without_a_fail_fast_credential(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = tmp_path / "probe.py"
    script.write_text(ENV_PROBE)
    creds = {
        "credentials": [spec("ALPHA_KEY")],
        "bindings": [{"tool": "alpha", "credentialId": "ALPHA_KEY", "target": "A_TOKEN"}],
        "missingCredentialBehavior": {
            "mode": "fail_fast",
            "messageTemplate": "{{credentialId}} is missing: ask the operator",
        },
    }
    folder = job_package(tmp_path, [shell_tool("alpha", PY, [str(script)])], credentials=creds)
    monkeypatch.delenv("ALPHA_KEY", raising=False)
    (tmp_path / "none.toml").write_text("")
    monkeypatch.setenv("SKILLWIRE_CONFIG", str(tmp_path / "none.toml"))
    db = tmp_path / "jobs.db"
    result = CliRunner().invoke(
        app, ["run", str(folder), "-m", "go", "--model", "offline", "--db", str(db)]
    )
    assert result.exit_code == 2, result.output
    assert "tools-demo: ALPHA_KEY is missing: ask the operator" in result.stderr
    assert not db.exists()  # no job was created


def test_the_canary_never_reaches_a_prompt(tmp_path: Path) -> None:
    """The planner's next request carries the tool's (redacted) output, never the value."""
    from tests.engine.helpers import run

    from skillwire.engine import Runtime
    from skillwire.store import SQLiteJobStore
    from skillwire.testing import ScriptedModel

    script = tmp_path / "echo.py"
    script.write_text(ECHO_SECRET)
    creds = {
        "credentials": [spec("CANARY_KEY", redaction={"showPrefix": 2, "showSuffix": 2})],
        "bindings": [{"tool": "echo", "credentialId": "CANARY_KEY", "target": "API_TOKEN"}],
    }
    skill = load_skill(
        job_package(tmp_path, [shell_tool("echo", PY, [str(script)])], credentials=creds)
    )
    base = {"shell": {"allowedPrefixes": [PY]}, "filesystem": {"allowedReadRoots": [str(tmp_path)]}}
    from skillwire.skills import BasePolicy

    model = ScriptedModel(job_script("echo", {}))
    executors = Executors(
        shell=ShellExecutor(sandbox="off"), credentials=Credentials(environ={"CANARY_KEY": CANARY})
    )

    async def go() -> Any:
        runtime = Runtime(
            SQLiteJobStore(tmp_path / "jobs.db"),
            model,
            executors=executors,
            base_policy=BasePolicy.model_validate(base),
        )
        try:
            return await runtime.start(skill, "echo it")
        finally:
            await runtime.store.close()

    job = run(go())
    prompts = repr(model.calls)
    assert "token is ca****et" in prompts  # the tool's output reached the planner, redacted
    assert CANARY not in prompts and CANARY not in repr(job)


def test_the_environment_is_read_only_for_the_names_the_operator_lists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A package names the variables it reads: without the operator's list it could
    read any secret of the runtime, a model's API key included."""
    from skillwire.assembly import credentials
    from skillwire.config import SkillwireConfig

    monkeypatch.setenv("ALPHA_KEY", ALPHA)
    monkeypatch.setenv("BETA_KEY", BETA)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-model-key-0123456789")
    monkeypatch.setenv("MY_MODEL_KEY", "model-key-abcdef")
    monkeypatch.setenv("SKILLWIRE_TEST_SECRET", "runtime-own-value")
    skill = two_tools(tmp_path)
    unlisted = Credentials().resolve(skill)
    assert unlisted.values == {}
    assert unlisted.problems["ALPHA_KEY"] == (
        "ALPHA_KEY is not set (the environment has it, but [credentials] env does not list it)"
    )
    listed = Credentials(env_names=["ALPHA_KEY"]).resolve(skill)
    assert listed.values == {"ALPHA_KEY": ALPHA}
    config = SkillwireConfig.model_validate(
        {
            "credentials": {"env": ["*"]},
            "models": {"m": {"backend": "openai", "api_key_env": "MY_MODEL_KEY"}},
        }
    )
    creds = credentials(config)
    assert creds.value("BETA_KEY") == BETA
    for reserved in ("OPENAI_API_KEY", "MY_MODEL_KEY", "SKILLWIRE_TEST_SECRET"):
        assert creds.value(reserved) is None


def test_a_folder_that_becomes_a_package_later_gets_its_credentials(
    tmp_path: Path,
) -> None:
    """``of`` keeps the name of a folder's skill.json, never the answer: a folder first
    seen without one is looked at again on the next call."""
    creds = Credentials(environ={"ALPHA_KEY": ALPHA, "BETA_KEY": BETA})
    folder = tmp_path / "later"
    folder.mkdir()
    assert creds.of(folder) is None
    assert creds.of(folder) is None  # asked twice: still no package
    built = two_tools(tmp_path / "built").root
    assert built is not None
    for item in built.iterdir():
        (folder / item.name).write_bytes(item.read_bytes())
    found = creds.of(folder)
    assert found is not None, found
    assert found.problems == {}, found.problems
    assert found.environment("alpha") == {"A_TOKEN": ALPHA}
