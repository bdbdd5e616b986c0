"""The ``shell_command`` executor on real programs (``python3``, ``git``, ``ls``): argv
only, fallbacks, output caps, the process group killed at the time limit, an
environment of its own, and the bubblewrap sandbox where it is installed."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import pytest
from tests.tools.helpers import PY, package, shell_tool, tool_of

from skillwire.core.executor import ToolOutcome
from skillwire.tools import Executors
from skillwire.tools.shell import ShellExecutor, bwrap_path

HAS_BWRAP = bwrap_path() is not None
needs_bwrap = pytest.mark.skipif(not HAS_BWRAP, reason="bubblewrap (bwrap) is not installed")

ECHO = textwrap.dedent(
    """
    import json, os, sys
    print(json.dumps({"argv": sys.argv[1:], "cwd": os.getcwd(), "env": dict(os.environ)}))
    """
)


def run(executor: ShellExecutor, tool: Any, args: dict[str, Any]) -> ToolOutcome:
    return asyncio.run(executor.execute(tool, args, idempotency_key="k", skill_root=None))


def py_tool(tmp_path: Path, code: str, template: list[str] | None = None, **spec: Any) -> Any:
    tmp_path.mkdir(parents=True, exist_ok=True)
    script = tmp_path / "script.py"
    script.write_text(code)
    tool = shell_tool(
        "py",
        PY,
        [str(script), *(template or ["{{...args}}"])],
        {"args": {"type": "array"}, "word": {"type": "string"}},
        **spec,
    )
    return tool_of(package(tmp_path, [tool]), "py")


def test_arguments_arrive_as_argv_never_through_a_shell(tmp_path: Path) -> None:
    tool = py_tool(tmp_path, ECHO)
    tricky = ["$(touch pwned)", "; rm -rf /", "a b", "`id`", "*", "'\"", "\n"]
    outcome = run(ShellExecutor(sandbox="off"), tool, {"args": tricky})
    assert outcome.ok, outcome.error
    seen = json.loads(outcome.result["stdout"])
    assert seen["argv"] == tricky
    assert not (tmp_path / "pwned").exists()
    assert outcome.result["exitCode"] == 0


def test_the_environment_holds_nothing_of_the_runtime(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RUNTIME_SECRET_TOKEN", "do-not-leak")
    tool = py_tool(tmp_path, ECHO)
    outcome = run(ShellExecutor(sandbox="off"), tool, {"args": []})
    seen = json.loads(outcome.result["stdout"])
    assert set(seen["env"]) <= {"PATH", "LANG", "HOME", "TMPDIR", "LC_CTYPE", "PWD"}
    assert "do-not-leak" not in outcome.result["stdout"]
    # a fresh working folder, removed afterwards
    assert seen["cwd"] == seen["env"]["HOME"]
    assert not os.path.exists(seen["cwd"])


def test_a_non_zero_exit_fails_and_keeps_the_result(tmp_path: Path) -> None:
    tool = py_tool(tmp_path, "import sys\nprint('out')\nsys.exit('boom')\n")
    outcome = run(ShellExecutor(sandbox="off"), tool, {"args": []})
    assert not outcome.ok
    assert outcome.error.endswith("exited with status 1: boom")
    assert outcome.result["stdout"] == "out\n"


def test_output_is_cut_at_max_output_chars(tmp_path: Path) -> None:
    tool = py_tool(tmp_path, "print('é' * 100000)\n", maxOutputChars=1000)
    outcome = run(ShellExecutor(sandbox="off"), tool, {"args": []})
    assert outcome.ok
    assert outcome.result["stdout"] == "é" * 1000
    assert outcome.result["truncated"] is True


def test_the_time_limit_kills_the_whole_process_group(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    code = textwrap.dedent(
        f"""
        import subprocess, sys, time
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        open({str(pid_file)!r}, "w").write(str(child.pid))
        time.sleep(600)
        """
    )
    tool = py_tool(tmp_path, code, timeoutMs=1500)
    outcome = run(ShellExecutor(sandbox="off"), tool, {"args": []})
    assert not outcome.ok
    assert "timed out after 1.5 s; its process group was killed" in outcome.error
    assert not _alive(int(pid_file.read_text()))


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting for a reaper does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state not in ("Z", "X")


def test_a_fallback_runs_when_the_command_is_not_installed(tmp_path: Path) -> None:
    tool = tool_of(
        package(
            tmp_path,
            [
                shell_tool(
                    "lister",
                    "no-such-program-skillwire",
                    ["{{dir}}"],
                    {"dir": {"type": "string"}},
                    commandFallbacks=[{"command": "ls", "fixedArgs": ["-1"]}],
                )
            ],
        ),
        "lister",
    )
    (tmp_path / "listed").mkdir()
    (tmp_path / "listed" / "b.txt").write_text("")
    (tmp_path / "listed" / "a.txt").write_text("")
    outcome = run(ShellExecutor(sandbox="off"), tool, {"dir": str(tmp_path / "listed")})
    assert outcome.ok, outcome.error
    assert outcome.result["stdout"] == "a.txt\nb.txt\n"
    missing = tool.model_copy(
        update={"executor": tool.executor.model_copy(update={"commandFallbacks": []})}
    )
    failed = run(ShellExecutor(sandbox="off"), missing, {"dir": "x"})
    assert not failed.ok and "none of no-such-program-skillwire is installed" in failed.error


def test_the_tools_path_is_the_operators_not_the_runtimes(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "hello-skillwire"
    fake.write_text("#!/bin/sh\necho fake\n")
    fake.chmod(0o755)
    tool = tool_of(package(tmp_path, [shell_tool("hello", "hello-skillwire", [])]), "hello")
    assert not run(ShellExecutor(sandbox="off"), tool, {}).ok
    outcome = run(ShellExecutor(sandbox="off", shell_path=f"{bin_dir}:/usr/bin:/bin"), tool, {})
    assert outcome.ok and outcome.result["stdout"] == "fake\n"


def test_git_runs_on_a_real_repository(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@e"]
    subprocess.run([*git, "init", "-q"], check=True)
    (repo / "f.txt").write_text("x")
    subprocess.run([*git, "add", "f.txt"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "first commit"], check=True)
    tool = shell_tool(
        "git",
        "git",
        ["-C", "{{repo}}", "log", "--format=%s", "{{#if n}}--max-count={{n}}{{/if}}"],
        {"repo": {"type": "string"}, "n": {"type": "integer"}},
    )
    skill = package(tmp_path, [tool])
    outcome = run(ShellExecutor(sandbox="off"), tool_of(skill, "git"), {"repo": str(repo), "n": 1})
    assert outcome.ok, outcome.error
    assert outcome.result["stdout"] == "first commit\n"


def test_sandbox_required_without_bwrap_refuses(tmp_path: Path) -> None:
    tool = py_tool(tmp_path, ECHO)
    executor = ShellExecutor(sandbox="required")
    executor.bwrap = None  # as on a machine without bubblewrap
    outcome = run(executor, tool, {"args": []})
    assert not outcome.ok and "bwrap is not installed" in outcome.error


def test_the_registry_runs_shell_tools(tmp_path: Path) -> None:
    tool = py_tool(tmp_path, "print('hi')\n")
    outcome = asyncio.run(
        Executors(shell=ShellExecutor(sandbox="off")).execute(
            tool, {"args": []}, idempotency_key="k", skill_root=None
        )
    )
    assert outcome.ok and outcome.result["stdout"] == "hi\n"


# -- the sandbox ----------------------------------------------------------------------

PROBE = textwrap.dedent(
    """
    import json, os, socket, sys
    found = {}
    for name in sys.argv[1:]:
        kind, _, path = name.partition(":")
        try:
            if kind == "read":
                open(path).read()
            elif kind == "write":
                open(path, "w").write("written")
            elif kind == "net":
                host, port = path.split("/")
                socket.create_connection((host, int(port)), timeout=2).close()
            found[name] = "ok"
        except OSError as exc:
            found[name] = type(exc).__name__
    print(json.dumps(found))
    """
)


@needs_bwrap
def test_the_sandbox_binds_only_the_roots(tmp_path: Path) -> None:
    ro, rw, secret = tmp_path / "ro", tmp_path / "rw", tmp_path / "secret"
    for folder in (ro, rw, secret):
        folder.mkdir()
        (folder / "f.txt").write_text("data")
    tool = py_tool(tmp_path, PROBE)
    script_dir = str(tmp_path)  # the script itself must be readable
    executor = ShellExecutor(
        sandbox="auto", read_roots=[str(ro), script_dir], write_roots=[str(rw)]
    )
    executor.read_roots = (str(ro), str(tmp_path / "script.py"))
    probes = [
        f"read:{ro}/f.txt",
        f"write:{rw}/new.txt",
        f"write:{ro}/new.txt",
        f"read:{secret}/f.txt",
        "read:/etc/shadow",
        f"read:{Path.home()}/.bashrc",
    ]
    outcome = run(executor, tool, {"args": probes})
    assert outcome.ok, outcome.error
    found = json.loads(outcome.result["stdout"])
    assert found[probes[0]] == "ok"
    assert found[probes[1]] == "ok" and (rw / "new.txt").read_text() == "written"
    assert found[probes[2]] != "ok" and not (ro / "new.txt").exists()
    assert found[probes[3]] == "FileNotFoundError"
    assert found[probes[4]] == "FileNotFoundError"
    assert found[probes[5]] == "FileNotFoundError"


@needs_bwrap
def test_the_sandbox_has_no_network_unless_declared(tmp_path: Path) -> None:
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    try:
        probe = [f"net:127.0.0.1/{port}"]
        closed = py_tool(tmp_path / "a", PROBE)
        executor = ShellExecutor(sandbox="auto")
        executor.read_roots = (str(tmp_path / "a" / "script.py"),)
        found = json.loads(run(executor, closed, {"args": probe}).result["stdout"])
        assert found[probe[0]] != "ok"
        opened = py_tool(tmp_path / "b", PROBE, network=True)
        executor.read_roots = (str(tmp_path / "b" / "script.py"),)
        found = json.loads(run(executor, opened, {"args": probe}).result["stdout"])
        assert found[probe[0]] == "ok"
    finally:
        server.close()


@needs_bwrap
def test_the_sandbox_kills_on_timeout(tmp_path: Path) -> None:
    tool = py_tool(tmp_path, "import time\ntime.sleep(600)\n", timeoutMs=1000)
    executor = ShellExecutor(sandbox="auto")
    executor.read_roots = (str(tmp_path / "script.py"),)
    outcome = run(executor, tool, {"args": []})
    assert not outcome.ok and "timed out" in outcome.error
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True, check=False)
    assert str(tmp_path / "script.py") not in ps.stdout


def test_bwrap_is_found_where_installed() -> None:
    assert (shutil.which("bwrap") is not None) == HAS_BWRAP


def test_the_executor_checks_the_base_policy_again_before_starting(tmp_path: Path) -> None:
    """A second wall: run without the gate, the program still meets the operator's
    base policy right before it starts."""
    from skillwire.assembly import make_executors
    from skillwire.skills import BasePolicy

    secret = tmp_path / "secret.txt"
    secret.write_text("s3cret")
    tool = tool_of(
        package(
            tmp_path, [shell_tool("cat", "cat", ["--", "{{path}}"], {"path": {"type": "string"}})]
        ),
        "cat",
    )
    allowed = BasePolicy.model_validate(
        {"shell": {"allowedPrefixes": ["cat"]}, "filesystem": {"allowedReadRoots": [str(tmp_path)]}}
    )

    def call(base: BasePolicy) -> ToolOutcome:
        executors = make_executors(None, base)
        return asyncio.run(
            executors.execute(tool, {"path": str(secret)}, idempotency_key="k", skill_root=None)
        )

    assert call(allowed).result["stdout"] == "s3cret"
    refused = call(BasePolicy())
    assert not refused.ok
    assert refused.error.startswith("refused by the operator's base policy: ")
    outside = call(BasePolicy.model_validate({"shell": {"allowedPrefixes": ["cat"]}}))
    assert "outside the allowed roots" in outside.error


def test_a_binding_cannot_replace_the_fixed_variables_or_the_loaders(tmp_path: Path) -> None:
    tool = py_tool(tmp_path, ECHO)

    def bound(_tool: Any, _root: Path | None) -> dict[str, str]:
        return {"PATH": "/tmp/evil", "HOME": "/root", "LD_PRELOAD": "/tmp/x.so", "TOKEN": "t"}

    outcome = run(ShellExecutor(sandbox="off", environment=bound), tool, {"args": []})
    env = json.loads(outcome.result["stdout"])["env"]
    assert env["PATH"] == "/usr/local/bin:/usr/bin:/bin"
    assert env["HOME"] != "/root" and "LD_PRELOAD" not in env
    assert env["TOKEN"] == "t"
