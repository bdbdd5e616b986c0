"""Executors: how tools run once the gate allows them.

:class:`Executors` picks one by the tool's ``executor.type``: ``python``,
``simulate``, ``shell_command`` (:mod:`skillwire.tools.shell`), ``http_request``
(:mod:`skillwire.tools.http`) and ``mcp`` (:mod:`skillwire.tools.mcp`) run here; an
unknown type fails with a clear outcome.

A package's credentials are injected into the tools bound to them, a tool whose bound
credential is unset fails as unavailable, and every outcome is redacted of secret
values (:mod:`skillwire.tools.credentials`).

:meth:`Executors.unavailable` tells the engine beforehand which tools of a skill cannot
run here, and why: an executor type this runtime lacks, a credential the tool needs
unusable (under ``missingCredentialBehavior: continue``; under ``fail_fast`` the job
does not start), an MCP server that is not configured, did not start, or does not offer
the tool (known once :meth:`Executors.prepare` listed the server's tools).

Every outcome's ``state_changes`` are checked against the tool's declared ``effects``:
a tool that reports a change it does not declare fails (effect safety), whatever
executor ran it.

A ``python`` callable comes from the skill's folder or a module the operator lists
(``python_modules``), and every call has a time limit (the tool's ``timeoutMs``, else
``tool_timeout``): see :mod:`skillwire.tools.python_scope` and
:mod:`skillwire.tools.python_callable`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from skillwire.core.executor import ExecutorRegistry, ToolExecutor, ToolOutcome
from skillwire.skills.model_tools import Tool
from skillwire.tools.credentials import Credentials, SkillCredentials
from skillwire.tools.http import HttpExecutor
from skillwire.tools.mcp import McpExecutor, McpServer
from skillwire.tools.python_callable import DEFAULT_TOOL_TIMEOUT, PythonCallableExecutor
from skillwire.tools.python_scope import (
    CallableRefusedError,
    callable_problem,
    module_listed,
    resolve_callable,
)
from skillwire.tools.shell import DEFAULT_SHELL_PATH, ShellExecutor
from skillwire.tools.simulate import SimulatedExecutor, fill_template
from skillwire.tools.tool_threads import ToolThreads, ToolTimeoutError

__all__ = [
    "DEFAULT_SHELL_PATH",
    "DEFAULT_TOOL_TIMEOUT",
    "CallableRefusedError",
    "Credentials",
    "Executors",
    "HttpExecutor",
    "McpExecutor",
    "McpServer",
    "PythonCallableExecutor",
    "ShellExecutor",
    "SimulatedExecutor",
    "SkillCredentials",
    "ToolThreads",
    "ToolTimeoutError",
    "callable_problem",
    "fill_template",
    "module_listed",
    "resolve_callable",
    "undeclared_effects",
]


class Executors(ExecutorRegistry[Tool]):
    """Executor by type; replace or add entries to plug in others. The
    :class:`~skillwire.core.executor.ExecutorRegistry` that the program gives the
    engine's runtime.

    ``python_modules`` are the module prefixes the operator lets python tools name
    besides the skill's own folder; ``tool_timeout`` is the seconds a python tool call
    may take when the tool declares no ``timeoutMs``; ``shell`` runs ``shell_command``
    tools (default: no roots bound, sandboxed when ``bwrap`` is installed).
    """

    def __init__(
        self,
        extra: dict[str, ToolExecutor[Tool]] | None = None,
        *,
        python_modules: Sequence[str] = (),
        tool_timeout: float = DEFAULT_TOOL_TIMEOUT,
        shell: ShellExecutor | None = None,
        http: HttpExecutor | None = None,
        mcp: McpExecutor | None = None,
        credentials: Credentials | None = None,
    ) -> None:
        self.credentials = credentials or Credentials()
        shell = shell or ShellExecutor()
        http = http or HttpExecutor()
        self.mcp = mcp or McpExecutor()
        self.http = http
        for executor in (shell, http, self.mcp):
            if executor.environment is None:
                executor.environment = self.environment
        self.by_type: dict[str, ToolExecutor[Tool]] = {
            "python": PythonCallableExecutor(modules=python_modules, timeout=tool_timeout),
            "simulate": SimulatedExecutor(),
            "shell_command": shell,
            "http_request": http,
            "mcp": self.mcp,
        }
        self.by_type.update(extra or {})

    async def aclose(self) -> None:
        """Stop the MCP servers started for this runtime's tools, close its HTTP
        connections."""
        await self.mcp.aclose()
        await self.http.aclose()

    def environment(self, tool: Tool, skill_root: Path | None) -> dict[str, str]:
        """The credentials bound to ``tool`` (of the skill in ``skill_root``), by the
        variable or header each binding names: only that tool's own."""
        creds = self.credentials.of(skill_root)
        return creds.environment(tool.name) if creds is not None else {}

    def unavailable(self, tools: Sequence[Tool], skill_root: Path | None) -> Mapping[str, str]:
        """The tools among ``tools`` (of the skill in ``skill_root``) that cannot run
        here, by full name, each with why: the executor type is missing, a credential
        the tool needs is unusable, its MCP server is not configured, did not start or
        does not offer it (as far as :meth:`prepare` learnt)."""
        creds = self.credentials.of(skill_root)
        out: dict[str, str] = {}
        for tool in tools:
            why = self._why_unavailable(tool, skill_root, creds)
            if why is not None:  # a server's error could quote a value: redacted
                out[tool.name] = creds.redact_text(why) if creds is not None else why
        return out

    def _why_unavailable(
        self, tool: Tool, skill_root: Path | None, creds: SkillCredentials | None
    ) -> str | None:
        kind = tool.executor.type if tool.executor is not None else "simulate"
        executor = self.by_type.get(kind)
        if executor is None:
            return f"executor type '{kind}' is not available in this runtime"
        missing = creds.missing(tool.name) if creds is not None else None
        if missing is not None:
            return missing
        if executor is self.mcp:
            return self.mcp.unavailable(tool, skill_root)
        return None

    async def prepare(self, tools: Sequence[Tool], skill_root: Path | None) -> None:
        """Start the MCP servers ``tools`` name and list their tools (once per runtime;
        a server that did not start is tried again next time), so that
        :meth:`unavailable` knows which tools they lack. A tool that cannot run anyway
        (a credential unset) starts nothing."""
        if self.by_type.get("mcp") is not self.mcp:
            return
        served = [t for t in tools if t.executor is not None and t.executor.type == "mcp"]
        if not served:
            return  # no server to start: the credentials need not be looked up
        creds = self.credentials.of(skill_root)
        runnable = [t for t in served if creds is None or creds.missing(t.name) is None]
        if runnable:
            await self.mcp.prepare(runnable, skill_root)

    def waits(self, tool: Tool, skill_root: Path | None) -> bool:
        """Whether running ``tool`` may wait (on a thread, for I/O), so that the job
        gives its turn back meanwhile (:mod:`skillwire.engine.turns`): not for
        ``simulate``, nor for a sync ``python`` callable with ``blocking: false``, which
        run on the loop at once; yes for any other executor."""
        kind = tool.executor.type if tool.executor is not None else "simulate"
        executor = self.by_type.get(kind)
        if isinstance(executor, SimulatedExecutor):
            return False
        if isinstance(executor, PythonCallableExecutor):
            return executor.waits(tool, skill_root)
        return executor is not None

    async def execute(
        self, tool: Tool, args: dict[str, Any], *, idempotency_key: str, skill_root: Path | None
    ) -> ToolOutcome:
        """Run ``tool`` with the executor its declaration names."""
        kind = tool.executor.type if tool.executor is not None else "simulate"
        executor = self.by_type.get(kind)
        if executor is None:
            return ToolOutcome(
                False, error=f"executor type '{kind}' is not available in this runtime yet"
            )
        creds = self.credentials.of(skill_root)
        if creds is not None:
            unavailable = creds.unavailable(tool.name)
            if unavailable is not None:
                return ToolOutcome(False, error=unavailable)
        outcome = await executor.execute(
            tool, args, idempotency_key=idempotency_key, skill_root=skill_root
        )
        if creds is not None:
            outcome = creds.redact_outcome(outcome)
        return undeclared_effects(tool, outcome)


def undeclared_effects(tool: Tool, outcome: ToolOutcome) -> ToolOutcome:
    """``outcome``, or a failed one when it reports state changes the tool does not
    declare in ``effects`` (they are refused: the job records the failure, not them)."""
    if not outcome.state_changes:
        return outcome
    extra = sorted(k for k in outcome.state_changes if k not in tool.effects)
    if not extra:
        return outcome
    declared = ", ".join(tool.effects) or "none"
    return ToolOutcome(
        False,
        result=outcome.result,
        error=f"refused: {tool.name} reported state changes it does not declare "
        f"({', '.join(extra)}; declared: {declared}); they were not applied",
    )
