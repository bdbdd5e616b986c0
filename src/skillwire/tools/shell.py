"""The ``shell_command`` executor: a program run with an argv list, never through a shell.

What runs was decided by the gate (:mod:`skillwire.policy.shell` checks the rendered argv
against the merged shell and filesystem policy). Here the call runs:

- the ``argsTemplate`` is filled (:mod:`skillwire.skills.shell_template`), and the first
  of ``command`` and the ``commandFallbacks`` found on the tools' ``PATH`` (the
  operator's ``[tools] shell_path``, never the runtime's own) is started with it;
- in a fresh empty working folder, removed afterwards, with an environment of its own:
  ``PATH``, ``LANG``, ``HOME`` and ``TMPDIR`` (the working folder), and the credentials
  bound to this tool, nothing of the runtime's environment;
- in a new process group: when ``timeoutMs`` passes, or the job is cancelled, the whole
  group is killed;
- inside a bubblewrap sandbox when ``bwrap`` is installed (``[tools] sandbox``: ``auto``
  uses it when found, ``required`` refuses to run without it, ``off`` never uses it):
  the system's programs and libraries read-only, the operator's read roots read-only,
  its write roots writable, the working folder, and nothing else of the file system;
  no network unless the executor says ``network: true``.

The result is ``{exitCode, stdout, stderr, truncated}``, each stream cut at
``maxOutputChars``. A non-zero exit is a failed outcome that keeps the result.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from skillwire.core.errors import ShellTemplateError
from skillwire.core.executor import ToolOutcome
from skillwire.skills.model_tools import ShellCommandExecutor, Tool
from skillwire.skills.shell_template import render_args

__all__ = [
    "DEFAULT_SHELL_PATH",
    "SandboxMode",
    "ShellExecutor",
    "bwrap_path",
    "sandbox_argv",
]

DEFAULT_SHELL_PATH = "/usr/local/bin:/usr/bin:/bin"
"""Where a shell tool's programs are looked up unless the operator says otherwise."""

SandboxMode = Literal["auto", "required", "off"]

_SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/opt")
"""Programs and libraries, bound read-only into the sandbox (a symlink as a symlink)."""

_SYSTEM_FILES = (
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/alternatives",
    "/etc/localtime",
    "/etc/ssl",
    "/etc/ca-certificates",
    "/etc/nsswitch.conf",
    "/etc/gitconfig",
)
"""Configuration programs need to start, bound read-only when present."""

_NETWORK_FILES = ("/etc/resolv.conf", "/etc/hosts")
"""Name resolution, bound only for a tool that declares ``network: true``."""

_LOADER_PREFIXES = ("LD_", "DYLD_")
"""Variables that change how a program is loaded: never set from a binding."""

_GRACE = 2.0
"""Seconds to wait for the output pipes to close after the group was killed."""

Guard = Callable[[list[str]], list[str]]
"""Why an argv (its program as the tool writes it) may not run, by the operator's base
policy: a second wall behind the gate, at the moment the program starts."""

Environment = Callable[[Tool, Path | None], dict[str, str]]
"""The extra environment of one tool's process, given the tool and its skill's folder
(its bound credentials)."""


def bwrap_path() -> str | None:
    """Where ``bwrap`` is installed, or None."""
    return shutil.which("bwrap")


def sandbox_argv(
    bwrap: str,
    argv: Sequence[str],
    *,
    workdir: str,
    read_roots: Sequence[str],
    write_roots: Sequence[str],
    network: bool,
) -> list[str]:
    """The bubblewrap command line that runs ``argv`` in ``workdir`` seeing only the
    system's programs, the roots and the working folder."""
    out = [bwrap, "--unshare-all", "--die-with-parent", "--new-session"]
    if network:
        out.append("--share-net")
    for folder in _SYSTEM_DIRS:
        if os.path.islink(folder):
            out += ["--symlink", os.readlink(folder), folder]
        elif os.path.isdir(folder):
            out += ["--ro-bind", folder, folder]
    for file in _SYSTEM_FILES + (_NETWORK_FILES if network else ()):
        out += ["--ro-bind-try", file, file]
    out += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    for root in read_roots:
        real = os.path.realpath(os.path.expanduser(root))
        out += ["--ro-bind-try", real, real]
    for root in write_roots:
        real = os.path.realpath(os.path.expanduser(root))
        out += ["--bind-try", real, real]
    out += ["--bind", workdir, workdir, "--chdir", workdir, "--", *argv]
    return out


@dataclass(frozen=True, slots=True)
class _Captured:
    text: str
    truncated: bool


async def _capture(stream: asyncio.StreamReader | None, limit: int) -> _Captured:
    """Read ``stream`` to its end, keeping at most ``limit`` characters (the rest is
    read and dropped, so that the program never blocks on a full pipe)."""
    if stream is None:
        return _Captured("", False)
    kept = bytearray()
    cap = limit * 4  # a character is at most four bytes of UTF-8
    dropped = False
    while True:
        chunk = await stream.read(65536)
        if not chunk:
            break
        room = cap - len(kept)
        if room > 0:
            kept += chunk[:room]
        if len(chunk) > room:
            dropped = True
    text = kept.decode("utf-8", errors="replace")
    if len(text) > limit:
        return _Captured(text[:limit], True)
    return _Captured(text, dropped)


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


class ShellExecutor:
    """Runs ``shell_command`` tools (see the module docstring).

    ``read_roots`` and ``write_roots`` are what the sandbox binds: the operator's base
    policy (each skill's merged roots, never wider, are checked by the gate).
    ``environment`` gives a tool's bound credentials (the registry,
    :class:`~skillwire.tools.Executors`, sets it and redacts every outcome); ``guard``,
    when given, checks the argv once more against the operator's base policy right
    before the program starts (the program as the tool writes it).
    """

    def __init__(
        self,
        *,
        shell_path: str = DEFAULT_SHELL_PATH,
        sandbox: SandboxMode = "auto",
        read_roots: Sequence[str] = (),
        write_roots: Sequence[str] = (),
        environment: Environment | None = None,
        guard: Guard | None = None,
    ) -> None:
        self.shell_path = shell_path
        self.guard = guard
        self.sandbox = sandbox
        self.read_roots = tuple(read_roots)
        self.write_roots = tuple(write_roots)
        self.environment = environment
        self.bwrap = bwrap_path() if sandbox != "off" else None

    @property
    def sandboxed(self) -> bool:
        """Whether shell tools run inside bubblewrap."""
        return self.bwrap is not None

    def program(self, spec: ShellCommandExecutor) -> tuple[str, list[str], str] | None:
        """The first installed program of ``command`` and the fallbacks, as a path, with
        its fixed arguments and its name as the tool writes it; None when none is
        installed."""
        for command, fixed in [
            (spec.command, []),
            *((f.command, list(f.fixedArgs)) for f in spec.commandFallbacks),
        ]:
            if "/" in command:
                if os.path.isfile(command) and os.access(command, os.X_OK):
                    return command, fixed, command
                continue
            found = shutil.which(command, path=self.shell_path)
            if found is not None:
                return found, fixed, command
        return None

    async def execute(
        self, tool: Tool, args: dict[str, Any], *, idempotency_key: str, skill_root: Path | None
    ) -> ToolOutcome:
        """Run the program; a failure to start, a timeout and a non-zero exit are
        failed outcomes."""
        spec = tool.executor
        if not isinstance(spec, ShellCommandExecutor):
            return ToolOutcome(False, error=f"{tool.name} has no shell_command executor")
        if self.sandbox == "required" and self.bwrap is None:
            return ToolOutcome(
                False,
                error="refused: [tools] sandbox is 'required' and bwrap is not installed",
            )
        try:
            rendered = render_args(spec.argsTemplate, args)
        except ShellTemplateError as exc:
            return ToolOutcome(False, error=f"refused: {exc}")
        chosen = self.program(spec)
        if chosen is None:
            names = [spec.command, *(f.command for f in spec.commandFallbacks)]
            return ToolOutcome(
                False, error=f"none of {', '.join(names)} is installed (PATH {self.shell_path})"
            )
        program, fixed, written = chosen
        if self.guard is not None:
            problems = self.guard([written, *fixed, *rendered])
            if problems:
                return ToolOutcome(
                    False, error="refused by the operator's base policy: " + "; ".join(problems)
                )
        argv = [program, *fixed, *rendered]
        workdir = tempfile.mkdtemp(prefix="skillwire-tool-")
        try:
            env = self._env(tool, skill_root, workdir)
            return await self._run(spec, argv, workdir, env)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)

    def _env(self, tool: Tool, skill_root: Path | None, workdir: str) -> dict[str, str]:
        """The process's environment: the tool's bound credentials, under the four
        variables it always gets (a binding cannot replace ``PATH`` or ``HOME``, nor set
        a loader variable such as ``LD_PRELOAD``)."""
        bound = self.environment(tool, skill_root) if self.environment is not None else {}
        env = {k: v for k, v in bound.items() if not k.startswith(_LOADER_PREFIXES)}
        env.update(PATH=self.shell_path, LANG="C.UTF-8", HOME=workdir, TMPDIR=workdir)
        return env

    async def _run(
        self, spec: ShellCommandExecutor, argv: list[str], workdir: str, env: dict[str, str]
    ) -> ToolOutcome:
        full = argv
        if self.bwrap is not None:
            full = sandbox_argv(
                self.bwrap,
                argv,
                workdir=workdir,
                read_roots=self.read_roots,
                write_roots=self.write_roots,
                network=spec.network,
            )
        try:
            process = await asyncio.create_subprocess_exec(
                *full,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                cwd=workdir,
                env=env,
                start_new_session=True,
            )
        except OSError as exc:
            return ToolOutcome(False, error=f"cannot start {argv[0]}: {exc.strerror or exc}")
        limit = spec.maxOutputChars
        readers = asyncio.gather(_capture(process.stdout, limit), _capture(process.stderr, limit))
        seconds = spec.timeoutMs / 1000
        timed_out = False
        try:
            await asyncio.wait_for(process.wait(), seconds)
        except TimeoutError:
            timed_out = True
            _kill_group(process.pid)
            await process.wait()
        except asyncio.CancelledError:
            _kill_group(process.pid)
            readers.cancel()
            raise
        _kill_group(process.pid)  # whatever it left running in its group
        try:
            out, err = await asyncio.wait_for(readers, _GRACE)
        except TimeoutError:  # a process outside the group holds a pipe: stop reading
            out, err = _Captured("", True), _Captured("", True)
        stdout, stderr = out.text, err.text
        result = {
            "exitCode": process.returncode,
            "stdout": stdout,
            "stderr": stderr,
            "truncated": out.truncated or err.truncated,
        }
        if timed_out:
            return ToolOutcome(
                False,
                result=result,
                error=f"timed out after {seconds:g} s; its process group was killed",
            )
        if process.returncode != 0:
            tail = stderr.strip().splitlines()[-1:] or [""]
            return ToolOutcome(
                False,
                result=result,
                error=f"{os.path.basename(argv[0])} exited with status {process.returncode}"
                + (f": {tail[0][:300]}" if tail[0] else ""),
            )
        return ToolOutcome(True, result=result)
