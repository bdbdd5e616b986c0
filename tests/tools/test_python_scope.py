"""Where python tools may come from: the skill's own folder (symlinks resolved, the file
must stay inside it) or a module prefix the operator lists. Anything else (the standard
library, installed packages, a foreign object reached through a skill module) is
refused before it runs, at ``skillwire check`` time and again at run time."""

from __future__ import annotations

import asyncio
import os
import textwrap
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from skillwire.core.executor import ToolOutcome
from skillwire.skills import Tool
from skillwire.tools import CallableRefusedError, Executors, callable_problem, resolve_callable
from skillwire.tools.python_scope import module_stamp

SNEAKY = """
import os
import subprocess as sp
from subprocess import getoutput


def fine(cmd):
    return {"fine": cmd}


class Box:
    runner = staticmethod(os.system)

    def method(self, cmd):
        return {"method": cmd}


box = Box()
"""


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A skill folder holding ``sneaky.py``, which imports ``os`` and ``subprocess``."""
    folder = tmp_path / "skill"
    folder.mkdir()
    (folder / "sneaky.py").write_text(textwrap.dedent(SNEAKY))
    return folder


def tool(target: str, arg: str = "cmd") -> Tool:
    """A tool whose executor names ``target`` and whose one argument is ``arg``."""
    return Tool.model_validate(
        {
            "name": "t",
            "inputs": [{"name": arg, "type": "string", "required": True}],
            "executor": {"type": "python", "callable": target},
        }
    )


def execute(
    target: str, args: dict[str, Any], root: Path | None, executors: Executors | None = None
) -> ToolOutcome:
    """One run of ``target`` with ``args``."""
    return asyncio.run(
        (executors or Executors()).execute(
            tool(target, next(iter(args))), args, idempotency_key="k", skill_root=root
        )
    )


@pytest.mark.parametrize(
    ("target", "arg"),
    [
        ("subprocess:getoutput", "cmd"),
        ("os:system", "command"),
        ("builtins:eval", "source"),
        ("importlib:import_module", "name"),
        ("sneaky:os.system", "command"),
        ("sneaky:sp.getoutput", "cmd"),
        ("sneaky:getoutput", "cmd"),
        ("sneaky:Box.runner", "command"),
        ("sneaky:fine.__class__", "cmd"),
    ],
)
def test_callables_outside_the_skill_are_refused_and_never_run(
    root: Path, tmp_path: Path, target: str, arg: str
) -> None:
    marker = tmp_path / "pwned"
    command = f"touch {marker}"
    if arg in ("source", "name"):
        command = "__import__('os').system(" + repr(command) + ")"
    outcome = execute(target, {arg: command}, root)
    assert not outcome.ok
    assert outcome.error.startswith(f"refused {target}: "), outcome.error
    assert not marker.exists(), "the command ran"
    with pytest.raises(CallableRefusedError):
        resolve_callable(target, root)


def test_the_refusal_says_where_callables_may_live(root: Path) -> None:
    outcome = execute("subprocess:getoutput", {"cmd": "true"}, root)
    assert outcome.error == (
        "refused subprocess:getoutput: module 'subprocess' is not in the skill's folder "
        "and not listed in [tools] python_modules"
    )
    walked = execute("sneaky:os.system", {"command": "true"}, root)
    assert "'sneaky:os' is a module" in walked.error
    imported = execute("sneaky:getoutput", {"cmd": "true"}, root)
    assert "is defined in 'subprocess'" in imported.error


def test_what_the_skill_module_defines_runs(root: Path) -> None:
    assert execute("sneaky:fine", {"cmd": "x"}, root) == ToolOutcome(True, {"fine": "x"})
    assert execute("sneaky:box.method", {"cmd": "y"}, root) == ToolOutcome(True, {"method": "y"})


def test_a_symlink_out_of_the_skill_folder_is_refused(root: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "evil.py").write_text("def run(cmd):\n    return {'ran': cmd}\n")
    (outside / "inner.py").write_text("def run(cmd):\n    return {'ran': cmd}\n")
    (root / "evil.py").symlink_to(outside / "evil.py")
    (root / "pkg").symlink_to(outside, target_is_directory=True)
    for target in ("evil:run", "pkg.inner:run"):
        outcome = execute(target, {"cmd": "x"}, root)
        assert outcome.error.startswith(f"refused {target}: "), outcome.error
        assert "outside the skill's folder" in outcome.error
        assert callable_problem(target, root) is not None
    # a link that stays inside the folder is the skill's own file
    (root / "alias.py").symlink_to(root / "sneaky.py")
    assert execute("alias:fine", {"cmd": "x"}, root).ok


def test_a_skill_folder_reached_through_a_symlink_is_still_its_folder(
    root: Path, tmp_path: Path
) -> None:
    linked = tmp_path / "linked"
    linked.symlink_to(root, target_is_directory=True)
    assert execute("sneaky:fine", {"cmd": "x"}, linked) == ToolOutcome(True, {"fine": "x"})


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """An importable package ``opmods_<n>`` (outside any skill), on ``sys.path``; its name."""
    name = f"opmods_{abs(hash(tmp_path)) % 10**8}"
    package = tmp_path / "site" / name
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "tools.py").write_text("def hello(cmd):\n    return {'hello': cmd}\n")
    (tmp_path / "site" / f"{name}_evil.py").write_text("def hello(cmd):\n    return {}\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    return name


def test_modules_the_operator_lists_run_and_only_those(root: Path, site: str) -> None:
    listed = Executors(python_modules=[site])
    assert execute(f"{site}.tools:hello", {"cmd": "x"}, root, listed).result == {"hello": "x"}
    assert execute(f"{site}:tools", {"cmd": "x"}, root, listed).error.startswith("refused")
    # a name that merely starts with the listed one is another module
    evil = execute(f"{site}_evil:hello", {"cmd": "x"}, root, listed)
    assert evil.error.startswith(f"refused {site}_evil:hello: ")
    # what one runtime's operator allowed is not remembered for another runtime
    assert execute(f"{site}.tools:hello", {"cmd": "x"}, root).error.startswith("refused")
    assert callable_problem(f"{site}.tools:hello", root, [site]) is None
    assert callable_problem(f"{site}.tools:hello", root) is not None


def test_without_a_skill_folder_only_listed_modules_resolve(site: str) -> None:
    assert execute(f"{site}.tools:hello", {"cmd": "x"}, None, Executors(python_modules=[site])).ok
    assert execute("sneaky:fine", {"cmd": "x"}, None).error.startswith("refused sneaky:fine")


@pytest.mark.parametrize(
    "target", ["sneaky:fine\n", "sneaky:fine ", "sneaky..x:fine", "sneaky:fine..x", "sneaky:"]
)
def test_malformed_callable_paths_are_refused(root: Path, target: str) -> None:
    with pytest.raises(ValidationError):
        tool(target)
    with pytest.raises(CallableRefusedError):
        resolve_callable(target, root)
    assert callable_problem(target, root) is not None


def test_the_static_check_reads_the_module_without_running_it(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (root / "loud.py").write_text(
        "import os\nopen(os.environ['MARKER'], 'w').close()\ndef fine(cmd):\n    return {}\n"
    )
    monkeypatch.setenv("MARKER", str(root / "ran"))
    assert callable_problem("loud:fine", root) is None
    assert callable_problem("loud:os.system", root) == (
        "'os' is imported by loud.py, not defined there"
    )
    assert callable_problem("loud:missing", root) == "loud.py defines no 'missing'"
    assert callable_problem("sneaky:getoutput", root) == (
        "'getoutput' is imported by sneaky.py, not defined there"
    )
    assert callable_problem("sneaky:Box.method", root) is None
    assert not (root / "ran").exists(), "the check ran the module"
    (root / "broken.py").write_text("def fine(:\n")
    assert (callable_problem("broken:fine", root) or "").startswith("broken.py does not parse")


def test_a_changed_module_runs_its_new_code_and_an_unchanged_one_is_not_run_again(
    tmp_path: Path,
) -> None:
    """``serve --watch`` reloads a skill whose module changed: the executor runs the
    new code (resolving and module caches both see the change)."""
    folder = tmp_path / "skill"
    folder.mkdir()
    module = folder / "reloaded_tool.py"
    module.write_text("def answer(cmd: str) -> dict:\n    return {'v': 1}\n")
    first = resolve_callable("reloaded_tool:answer", folder)
    assert resolve_callable("reloaded_tool:answer", folder) is first  # not run again
    executors = Executors()
    assert execute("reloaded_tool:answer", {"cmd": "x"}, folder, executors).result == {"v": 1}
    module.write_text("def answer(cmd: str) -> dict:\n    return {'v': 2}\n")
    os.utime(module, ns=(1, 1))  # even with a clock that went back: another content
    assert execute("reloaded_tool:answer", {"cmd": "x"}, folder, executors).result == {"v": 2}
    assert resolve_callable("reloaded_tool:answer", folder)(cmd="x") == {"v": 2}


def test_module_stamp_reads_the_file_each_time_whatever_it_was_before(tmp_path: Path) -> None:
    """The stamp's file name is kept per callable and folder, never its stamp: a module
    that appears, changes or goes is seen at the next call; a name that is not
    ``module:attr`` (a path out of the folder) names no file, however often asked."""
    folder = tmp_path / "skill"
    folder.mkdir()
    assert module_stamp("later:fn", folder) is None
    module = folder / "later.py"
    module.write_text("def fn():\n    return 1\n")
    first = module_stamp("later:fn", folder)
    assert first == (module.stat().st_size, module.stat().st_mtime_ns)
    module.write_text("def fn():\n    return 22\n")
    assert module_stamp("later:fn", folder) not in (None, first)
    module.unlink()
    assert module_stamp("later:fn", folder) is None
    (folder / "pkg").mkdir()
    (folder / "pkg" / "mod.py").write_text("def fn():\n    return 3\n")
    assert module_stamp("pkg.mod:fn", folder) is not None
    assert module_stamp("pkg.mod:fn", tmp_path) is None  # another folder, another file
    (tmp_path / "outside.py").write_text("def fn():\n    return 4\n")
    for _ in range(2):
        assert module_stamp("../outside:fn", folder) is None
        assert module_stamp("later:fn", None) is None


def test_a_module_that_turns_async_runs_awaited_and_waits_learns_it(tmp_path: Path) -> None:
    """``waits`` reads the callable as last resolved (the run looks at the module's
    file): after the module changes from sync to async, the next run still runs the
    new code, awaited, and ``waits`` says so from then on."""
    folder = tmp_path / "skill"
    folder.mkdir()
    module = folder / "turning.py"
    module.write_text("def answer(cmd: str) -> dict:\n    return {'v': 1}\n")
    quick = Tool.model_validate(
        {
            "name": "t",
            "inputs": [{"name": "cmd", "type": "string", "required": True}],
            "executor": {"type": "python", "callable": "turning:answer", "blocking": False},
        }
    )
    executors = Executors()
    assert not executors.waits(quick, folder)
    module.write_text("async def answer(cmd: str) -> dict:\n    return {'v': 2}\n")
    os.utime(module, ns=(1, 1))
    run = executors.execute(quick, {"cmd": "x"}, idempotency_key="k", skill_root=folder)
    assert asyncio.run(run).result == {"v": 2}
    assert executors.waits(quick, folder), "an async callable may wait"
    module.write_text("this is not python\n")
    os.utime(module, ns=(2, 2))
    run = executors.execute(quick, {"cmd": "x"}, idempotency_key="k", skill_root=folder)
    assert "cannot load" in (asyncio.run(run).error or ""), "a run sees the broken module"
