"""``skillwire run``, ``resume``, ``jobs`` and ``show``, on scripted models; user errors
exit non-zero with a message and no traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.engine.helpers import ORDER, call, input_script, intent, lookup_yaml
from typer.testing import CliRunner, Result

from skillwire.cli_app import app
from skillwire.cli_jobs import cli_actor

ROOT = Path(__file__).resolve().parent.parent
REFUND = ROOT / "examples" / "refund_support" / "domain.yaml"


@pytest.fixture
def env(tmp_path: Path) -> dict[str, Path]:
    """A job database and a script file (the refund that pauses for input, then for
    approval) in ``tmp_path``."""
    script = tmp_path / "script.json"
    script.write_text(json.dumps(input_script()))
    return {"db": tmp_path / "jobs.db", "script": script}


def cli(*args: str | Path) -> Result:
    """Run the command in process."""
    return CliRunner().invoke(app, [str(a) for a in args])


def ok(result: Result) -> Any:
    """The JSON a successful ``--json`` command printed."""
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def ended(result: Result, code: int) -> Any:
    """The JSON a ``--json`` run or resume printed, having exited ``code`` (1: the job
    ended otherwise than with SUCCESS or a pause for input or approval)."""
    assert result.exit_code == code, result.output
    return json.loads(result.stdout)


def user_error(result: Result, message: str) -> None:
    """Exit 2, the message on stderr, no traceback anywhere."""
    assert result.exit_code == 2, result.output
    assert message in result.stderr
    assert result.stderr.startswith("error:")
    assert "Traceback" not in result.output
    assert isinstance(result.exception, SystemExit)


def run_here(script: Path, *db: str | Path) -> dict[str, Any]:
    """``skillwire run`` of the refund in the current folder, with ``--db`` if given."""
    extra = ("--db", *db) if db else ()
    return ok(
        cli(
            "run",
            REFUND,
            "-m",
            "I want a refund of $750",
            "--model",
            f"scripted:{script}",
            *extra,
            "--json",
        )
    )


def start(env: dict[str, Path]) -> dict[str, Any]:
    """``skillwire run`` of the refund into ``env``'s database, paused for its order number."""
    return run_here(env["script"], env["db"])


def resume(env: dict[str, Path], job_id: str, *args: str) -> Result:
    """``skillwire resume JOB ...`` with the job's script."""
    return cli(
        "resume", job_id, *args, "--model", f"scripted:{env['script']}", "--db", env["db"], "--json"
    )


def test_run_resume_jobs_show_end_to_end(env: dict[str, Path]) -> None:
    job = start(env)
    assert (job["status"], job["outcome_class"]) == ("paused", "USER_ACTION_REQUIRED")
    assert job["waiting"]["requested_fields"] == ["order_id"]
    assert [e["kind"] for e in job["events"]][-1] == "paused"

    job = ok(resume(env, job["id"], "--input", f"order_id={ORDER}"))
    assert job["outcome_class"] == "APPROVAL_REQUIRED"
    assert job["waiting"]["approver"] == "supervisor"

    job = ok(resume(env, job["id"], "--approve", "--as", "supervisor"))
    assert (job["status"], job["outcome_class"]) == ("completed", "SUCCESS")
    assert job["fields"]["order_id"] == ORDER
    assert [c["stage"] for c in job["model_calls"]] == [r["stage"] for r in input_script()]

    listed = ok(cli("jobs", "--db", env["db"], "--json"))
    assert [(j["id"], j["status"]) for j in listed] == [(job["id"], "completed")]
    assert ok(cli("jobs", "--db", env["db"], "--status", "paused", "--json")) == []

    shown = ok(cli("show", job["id"], "--db", env["db"], "--json"))
    assert shown["events"] == job["events"] and shown["model_calls"] == job["model_calls"]
    text = cli("show", job["id"], "--db", env["db"])
    assert text.exit_code == 0
    for word in ("completed", "gate_decision", "APPROVAL_REQUIRED", "approval_granted", "polisher"):
        assert word in text.stdout
    table = cli("jobs", "--db", env["db"])
    assert table.exit_code == 0 and "completed" in table.stdout


def test_a_denial_from_the_command_line(env: dict[str, Path]) -> None:
    job = start(env)
    ok(resume(env, job["id"], "--input", f"order_id={ORDER}"))
    job = ended(resume(env, job["id"], "--deny", "--as", "supervisor"), 1)
    assert job["status"] == "completed"  # the planner answered after the denial
    kinds = [e["kind"] for e in job["events"]]
    assert kinds.count("approval_denied") == 1
    started = [e["data"]["tool"] for e in job["events"] if e["kind"] == "tool_started"]
    assert "process_refund" not in started


def test_a_refused_input_exits_non_zero_and_the_job_waits(env: dict[str, Path]) -> None:
    job = start(env)
    result = resume(env, job["id"], "--input", "order_id=ORD-1")
    user_error(result, "the input was not accepted")
    assert "does not match" in result.stderr
    waiting = json.loads(result.stdout)["waiting"]
    assert waiting["correlation_id"] == job["waiting"]["correlation_id"]
    assert waiting["error"].startswith("order_id:")


def test_user_errors_exit_2_with_a_message(env: dict[str, Path], tmp_path: Path) -> None:
    job = start(env)
    job_id = job["id"]
    user_error(
        resume(env, "no-such-job", "--approve", "--as", "supervisor"), "no job 'no-such-job'"
    )
    user_error(resume(env, job_id, "--input", "order_id"), "--input expects key=value")
    user_error(resume(env, job_id, "--input", "=ORD-12345"), "--input expects key=value")
    user_error(resume(env, job_id), "give --input key=value, --approve --as ROLE")
    user_error(resume(env, job_id, "--approve", "--deny", "--as", "x"), "not both")
    user_error(resume(env, job_id, "--approve", "--as", "supervisor"), "waits for input")
    ok(resume(env, job_id, "--input", f"order_id={ORDER}"))
    user_error(
        resume(env, job_id, "--approve", "--as", "clerk"), "only the role 'supervisor' may approve"
    )
    user_error(resume(env, job_id, "--approve"), "(you are 'no role')")
    ok(resume(env, job_id, "--approve", "--as", "supervisor"))
    user_error(resume(env, job_id, "--approve", "--as", "supervisor"), "is completed, not paused")
    user_error(cli("run", tmp_path / "missing.yaml", "-m", "hi", "--db", env["db"]), "no such file")
    user_error(
        cli(
            "run",
            REFUND,
            "-m",
            "hi",
            "--model",
            f"scripted:{tmp_path / 'no.yaml'}",
            "--db",
            env["db"],
        ),
        "no script file",
    )
    user_error(cli("show", "nope", "--db", env["db"]), "no job 'nope'")
    user_error(cli("jobs", "--db", tmp_path / "none.db"), "no job database")
    user_error(cli("jobs", "--db", env["db"], "--status", "sleeping"), "unknown status")


def test_a_broken_skill_or_script_is_a_message(env: dict[str, Path], tmp_path: Path) -> None:
    broken = tmp_path / "broken" / "domain.yaml"
    broken.parent.mkdir()
    broken.write_text("id: broken\ntools: 7\n")
    result = cli("run", broken, "-m", "hi", "--db", env["db"])
    user_error(result, "the skill has errors")
    assert "domain.yaml" in result.stderr
    bad_script = tmp_path / "bad.yaml"
    bad_script.write_text("- stage: sideways\n  text: hi\n")
    result = cli("run", REFUND, "-m", "hi", "--model", f"scripted:{bad_script}", "--db", env["db"])
    user_error(result, "unknown stage 'sideways'")


def test_the_installed_command_prints_no_traceback(tmp_path: Path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "skillwire",
            "resume",
            "nope",
            "--approve",
            "--as",
            "x",
            "--db",
            str(tmp_path / "jobs.db"),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
    )
    assert result.returncode == 2
    assert "error:" in result.stderr and "Traceback" not in result.stderr


# -- where jobs are stored: --db, $SKILLWIRE_DB, [runtime] db, .skillwire/jobs.db -------


@pytest.fixture
def no_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No $SKILLWIRE_DB, $SKILLWIRE_CONFIG or $SKILLWIRE_MODEL from the caller's shell."""
    for name in ("SKILLWIRE_DB", "SKILLWIRE_CONFIG", "SKILLWIRE_MODEL", "SKILLWIRE_GATE_MODEL"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_the_commands_use_runtime_db_of_skillwire_toml(
    env: dict[str, Path], tmp_path: Path, no_env: pytest.MonkeyPatch
) -> None:
    (tmp_path / "skillwire.toml").write_text('[runtime]\ndb = "data/jobs.db"\n')
    no_env.chdir(tmp_path)
    job = run_here(env["script"])
    configured = tmp_path / "data" / "jobs.db"
    assert configured.is_file(), "the job went elsewhere"
    assert not (tmp_path / ".skillwire").exists()
    assert [j["id"] for j in ok(cli("jobs", "--json"))] == [job["id"]]
    assert ok(cli("show", job["id"], "--json"))["id"] == job["id"]
    resumed = ok(
        cli(
            "resume",
            job["id"],
            "--input",
            f"order_id={ORDER}",
            "--model",
            f"scripted:{env['script']}",
            "--json",
        )
    )
    assert resumed["outcome_class"] == "APPROVAL_REQUIRED"


def test_a_relative_db_is_relative_to_the_folder_of_skillwire_toml(
    env: dict[str, Path], tmp_path: Path, no_env: pytest.MonkeyPatch
) -> None:
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "skillwire.toml").write_text('[runtime]\ndb = "state/jobs.db"\n')
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    no_env.chdir(elsewhere)
    no_env.setenv("SKILLWIRE_CONFIG", str(conf / "skillwire.toml"))
    job = run_here(env["script"])
    assert (conf / "state" / "jobs.db").is_file()
    assert not (elsewhere / "state").exists() and not (elsewhere / ".skillwire").exists()
    assert [j["id"] for j in ok(cli("jobs", "--json"))] == [job["id"]]


def test_the_db_option_and_variable_win_over_the_configuration(
    env: dict[str, Path], tmp_path: Path, no_env: pytest.MonkeyPatch
) -> None:
    (tmp_path / "skillwire.toml").write_text('[runtime]\ndb = "configured.db"\n')
    no_env.chdir(tmp_path)
    no_env.setenv("SKILLWIRE_DB", str(tmp_path / "variable.db"))
    from_variable = run_here(env["script"])
    from_option = run_here(env["script"], tmp_path / "option.db")
    assert not (tmp_path / "configured.db").exists()
    assert [j["id"] for j in ok(cli("jobs", "--json"))] == [from_variable["id"]]
    listed = ok(cli("jobs", "--db", tmp_path / "option.db", "--json"))
    assert [j["id"] for j in listed] == [from_option["id"]]


def test_without_configuration_jobs_go_to_the_default_file(
    env: dict[str, Path], tmp_path: Path, no_env: pytest.MonkeyPatch
) -> None:
    no_env.chdir(tmp_path)
    run_here(env["script"])
    assert (tmp_path / ".skillwire" / "jobs.db").is_file()


def test_a_broken_configuration_is_a_message(tmp_path: Path, no_env: pytest.MonkeyPatch) -> None:
    (tmp_path / "skillwire.toml").write_text("[runtime]\ndb = 7\n")
    no_env.chdir(tmp_path)
    user_error(cli("jobs"), "runtime.db")


# -- skillwire check: where python tools may come from ---------------------------------

PYTHON_SKILL = """\
id: shell-by-python
problem: {statement: "Run things"}
intents:
  supported:
    - id: run
      description: Run a thing
      examples: ["run it"]
tools:
  - name: own
    description: The skill's own function
    executor: {type: python, callable: "own_tools:lookup"}
  - name: escape
    description: A command the shell policy would refuse
    executor: {type: python, callable: "%s"}
"""


def check_python_skill(folder: Path, target: str) -> Result:
    """``skillwire check --json`` of a skill whose second tool names ``target``."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "own_tools.py").write_text("import os\n\ndef lookup():\n    return {}\n")
    (folder / "domain.yaml").write_text(PYTHON_SKILL % target)
    return cli("check", folder / "domain.yaml", "--json")


@pytest.mark.parametrize(
    "target", ["subprocess:getoutput", "os:system", "builtins:eval", "own_tools:os.system"]
)
def test_check_refuses_python_tools_outside_the_skill_with_file_and_line(
    tmp_path: Path, no_env: pytest.MonkeyPatch, target: str
) -> None:
    no_env.chdir(tmp_path)
    result = check_python_skill(tmp_path / "skill", target)
    assert result.exit_code == 1, result.output
    report = json.loads(result.stdout)
    assert not report["ok"]
    found = [
        i
        for s in report["skills"]
        for f in s["files"]
        for i in f["issues"]
        if i["code"] == "python_callable_refused"
    ]
    assert len(found) == 1, found
    assert found[0]["file"].endswith("domain.yaml") and found[0]["line"] == 14
    assert found[0]["severity"] == "error" and target in found[0]["message"]
    text = cli("check", tmp_path / "skill" / "domain.yaml")
    assert text.exit_code == 1 and "domain.yaml:14" in text.stdout


def test_check_accepts_the_modules_the_operator_lists(
    tmp_path: Path, no_env: pytest.MonkeyPatch
) -> None:
    (tmp_path / "skillwire.toml").write_text('[tools]\npython_modules = ["subprocess"]\n')
    no_env.chdir(tmp_path)
    result = check_python_skill(tmp_path / "skill", "subprocess:getoutput")
    assert result.exit_code == 0, result.output


def test_the_examples_python_tools_pass_check(no_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    no_env.chdir(tmp_path)
    result = cli("check", ROOT / "examples", "--json")
    assert result.exit_code == 0, result.output


def test_run_applies_the_tools_section_of_skillwire_toml(
    tmp_path: Path, no_env: pytest.MonkeyPatch
) -> None:
    module = f"optools_{abs(hash(tmp_path)) % 10**8}"
    package = tmp_path / "site" / module
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "tools.py").write_text(
        "import asyncio\n\n"
        "def hello(order_id):\n    return {'hello': order_id}\n\n"
        "async def hang(order_id):\n    await asyncio.Event().wait()\n"
    )
    no_env.syspath_prepend(str(tmp_path / "site"))
    skill = tmp_path / "skill" / "domain.yaml"
    skill.parent.mkdir()
    skill.write_text(
        lookup_yaml("operator-tools", hello=f"{module}.tools:hello", hang=f"{module}.tools:hang")
    )
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps(
            [
                intent("lookup", order_id=ORDER),
                call("hello", "hello", order_id=ORDER),
                call("hang", "hang", order_id=ORDER),
                call("final_answer", "f", answer="done", fields={"order_id": ORDER}),
            ]
        )
    )
    no_env.chdir(tmp_path)

    def tool_events() -> list[tuple[str, str, str]]:
        job = ended(
            cli("run", skill, "-m", "look up my order", "--model", f"scripted:{script}", "--json"),
            1,  # a tool failed
        )
        return [
            (e["kind"], e["data"]["tool"], e["message"])
            for e in job["events"]
            if e["kind"] in ("tool_finished", "tool_failed")
        ]

    refused = tool_events()  # no skillwire.toml: only the skill's folder
    assert [(kind, tool) for kind, tool, _ in refused] == [
        ("tool_failed", "hello"),
        ("tool_failed", "hang"),
    ]
    assert refused[0][2].startswith(f"refused {module}.tools:hello: ")
    (tmp_path / "skillwire.toml").write_text(
        f'[tools]\npython_modules = ["{module}"]\ntimeout = 0.05\n'
    )
    events = tool_events()
    assert [(kind, tool) for kind, tool, _ in events] == [
        ("tool_finished", "hello"),
        ("tool_failed", "hang"),
    ]
    assert events[1][2].startswith("timed out after 0.05 s")


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ('[tools]\npython_modules = ["os; rm"]\n', "tools.python_modules.0"),
        ('[tools]\npython_modules = [""]\n', "tools.python_modules.0"),
        ("[tools]\ntimeout = 0\n", "tools.timeout"),
        ("[tools]\ntimeuot = 5\n", "tools.timeuot"),
    ],
)
def test_a_wrong_tools_section_is_a_message(
    tmp_path: Path, no_env: pytest.MonkeyPatch, toml: str, message: str
) -> None:
    (tmp_path / "skillwire.toml").write_text(toml)
    no_env.chdir(tmp_path)
    result = cli("check", ROOT / "examples")
    user_error(result, message)


def test_the_configured_default_tool_timeout_is_the_runtimes() -> None:
    from skillwire.config import ToolsConfig
    from skillwire.tools import DEFAULT_TOOL_TIMEOUT

    assert ToolsConfig().timeout == DEFAULT_TOOL_TIMEOUT


def test_a_decision_names_the_call_and_who_decided(env: dict[str, Path]) -> None:
    """The CLI decides the call the job waits on now, sends its pause's correlation id,
    says which call it decided, and is recorded as ``cli:<OS user>``."""
    job = start(env)
    waiting = ok(resume(env, job["id"], "--input", f"order_id={ORDER}"))["waiting"]
    result = resume(env, job["id"], "--approve", "--as", "supervisor")
    job = ok(result)
    actor = cli_actor()
    assert actor.startswith("cli:") and len(actor) > 4
    assert f"{actor} (supervisor) approved process_refund" in result.stderr
    assert waiting["correlation_id"] in result.stderr
    granted = [e for e in job["events"] if e["kind"] == "approval_granted"]
    assert [(e["data"]["decided_by"], e["data"]["correlation_id"]) for e in granted] == [
        (actor, waiting["correlation_id"])
    ]


def test_the_cli_user_may_not_approve_a_job_they_own(env: dict[str, Path]) -> None:
    """A job started with ``--context user_id=cli:<you>`` is yours: another must approve."""
    job = ok(
        cli(
            "run",
            REFUND,
            "-m",
            "I want a refund of $750",
            "--context",
            f"user_id={cli_actor()}",
            "--model",
            f"scripted:{env['script']}",
            "--db",
            env["db"],
            "--json",
        )
    )
    assert job["owner"] == cli_actor()
    ok(resume(env, job["id"], "--input", f"order_id={ORDER}"))
    user_error(resume(env, job["id"], "--approve", "--as", "supervisor"), "may not approve")
    denied = ended(resume(env, job["id"], "--deny", "--as", "supervisor"), 1)
    assert denied["status"] == "completed"


# -- a model reply never wedges a job or prints a traceback (issue 16 item 10) ---------


def test_deeply_nested_json_from_the_model_is_no_traceback(tmp_path: Path) -> None:
    script = tmp_path / "deep.json"
    deep = "[" * 100_000 + "]" * 100_000
    script.write_text(json.dumps([{"stage": "intent", "text": deep}]))
    result = cli(
        "run", REFUND, "-m", "refund", "--model", f"scripted:{script}", "--db", tmp_path / "j.db"
    )
    assert result.exit_code == 1, repr(result.exception)  # not SUCCESS
    assert "OUT_OF_DOMAIN" in result.stdout


def test_a_lone_surrogate_from_the_model_is_no_traceback(tmp_path: Path) -> None:
    from tests.engine.helpers import call, final, gate, intent, polish

    script = tmp_path / "surrogate.json"
    replies = [
        intent(order_id=ORDER, amount=40),
        call("verify_identity", "c1", order_id=ORDER),
        final(answer="Done \ud800"),
        call("check_eligibility", "c2", order_id=ORDER, amount=40),
        call("process_refund", "c3", order_id=ORDER, amount=40),
        final(),
        gate(),
        polish("Done \udc00 " + ORDER),
    ]
    script.write_text(json.dumps(replies))
    result = cli(
        "run", REFUND, "-m", "refund", "--model", f"scripted:{script}", "--db", tmp_path / "j.db"
    )
    assert result.exit_code == 0, repr(result.exception)
    assert "completed" in result.stdout


def test_jobs_filters_by_outcome_class(env: dict[str, Path], tmp_path: Path) -> None:
    from tests.engine.helpers import FILES_SKILL, call, intent, skill_from

    skill = skill_from(tmp_path / "files", FILES_SKILL).origin
    script = tmp_path / "blocked.json"
    script.write_text(
        json.dumps(
            [
                intent("intent_tidy"),
                call("deleteFile", "d1", path="a.txt"),
                call("final_answer", "f", answer="Nothing was removed.", fields={"summary": "-"}),
            ]
        )
    )
    blocked = ended(
        cli(
            "run", skill, "-m", "tidy", "--model", f"scripted:{script}", "--db", env["db"], "--json"
        ),
        1,
    )
    assert blocked["outcome_class"] == "BLOCKED"
    paused = start(env)
    listed = ok(cli("jobs", "--db", env["db"], "--outcome", "BLOCKED", "--json"))
    assert [j["id"] for j in listed] == [blocked["id"]]
    waiting = ok(cli("jobs", "--db", env["db"], "--outcome", "user_action_required", "--json"))
    assert [j["id"] for j in waiting] == [paused["id"]]
    user_error(cli("jobs", "--db", env["db"], "--outcome", "NOPE"), "unknown outcome class")


def test_a_job_database_that_is_not_one_is_a_one_line_error(tmp_path: Path) -> None:
    garbage = tmp_path / "jobs.db"
    garbage.write_bytes(b"not a database " * 200)
    for args in (("jobs",), ("show", "some-job")):
        result = cli(*args, "--db", garbage)
        assert result.exit_code == 1, result.output
        assert result.stderr.startswith("error:") and len(result.stderr.strip().splitlines()) == 1
        assert "Traceback" not in result.output
        assert isinstance(result.exception, SystemExit)


def test_a_failed_job_exits_1_after_printing_it(tmp_path: Path) -> None:
    from tests.engine.helpers import intent

    script = tmp_path / "chatter.json"
    chatter = [{"stage": "planner", "text": "let me think"}] * 40
    script.write_text(json.dumps([intent(order_id=ORDER, amount=40), *chatter]))
    db = tmp_path / "j.db"
    result = cli(
        "run", REFUND, "-m", "refund", "--model", f"scripted:{script}", "--db", db, "--json"
    )
    assert result.exit_code == 1, result.output
    job = json.loads(result.stdout)
    assert (job["status"], job["outcome_class"]) == ("failed", "ENGINE_BUDGET_EXHAUSTED")
