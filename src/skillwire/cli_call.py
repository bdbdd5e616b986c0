"""``skillwire call SKILL TOOL --args JSON``: one tool call through the gate and its
executor, outside a job, for authors and operators trying a tool.

The call is checked by the skill's gate over the operator's base policy (``--policy``,
else the configuration's ``runtime.base_policy``, else skillwire's default) exactly as
in a job with no history, then run by the executor the tool declares, with the
operator's ``[tools]`` settings and the tool's bound credentials.

Exit codes: 0 the tool ran and succeeded; 1 the gate blocked the call (or asks for
input it lacks), with the reason; 2 a usage error (bad JSON, unknown skill); 3 the call
needs an approval that ``--as`` does not give; 4 the tool ran and failed.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer
from rich.console import Console

from skillwire.assembly import base_policy, credentials, make_executors
from skillwire.config import load_config
from skillwire.core.errors import UsageError
from skillwire.core.executor import ToolOutcome
from skillwire.policy import Allow, ApprovalGrant, Block, Decision, Gate, NeedApproval, NeedInput
from skillwire.skills import load_skill

__all__ = ["EXIT_APPROVAL", "EXIT_BLOCKED", "EXIT_FAILED", "CallResult", "call_tool", "run_call"]

EXIT_BLOCKED = 1
EXIT_APPROVAL = 3
EXIT_FAILED = 4


@dataclass
class CallResult:
    """What one ``skillwire call`` decided and, if the tool ran, what it produced."""

    tool: str
    args: dict[str, Any]
    decision: Decision
    approved_by: str | None = None
    outcome: ToolOutcome | None = None

    @property
    def exit_code(self) -> int:
        """The command's exit code (see the module docstring)."""
        if isinstance(self.decision, NeedApproval) and self.outcome is None:
            return EXIT_APPROVAL
        if self.outcome is None:
            return EXIT_BLOCKED
        return 0 if self.outcome.ok else EXIT_FAILED

    def to_dict(self) -> dict[str, Any]:
        """The JSON form ``--json`` prints."""
        decision = self.decision
        data: dict[str, Any] = {
            "tool": self.tool,
            "args": self.args,
            "decision": decision.kind,
            "reasons": [r.to_dict() for r in decision.reasons],
            "approved_by": self.approved_by,
        }
        if isinstance(decision, NeedApproval):
            data["approver"] = decision.approver
        if isinstance(decision, NeedInput):
            data["missing"] = list(decision.requested_fields)
            data["prompt"] = decision.prompt
        if self.outcome is not None:
            data["outcome"] = {
                "ok": self.outcome.ok,
                "result": self.outcome.result,
                "state_changes": self.outcome.state_changes,
                "error": self.outcome.error,
            }
        data["exit_code"] = self.exit_code
        return data


def parse_args(text: str) -> dict[str, Any]:
    """``--args``: a JSON object."""
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"--args is not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise UsageError(f"--args must be a JSON object, got {type(value).__name__}")
    return value


def call_tool(
    skill_path: Path,
    tool_name: str,
    args: dict[str, Any],
    *,
    as_role: str | None = None,
    policy: Path | None = None,
    config_path: Path | None = None,
) -> CallResult:
    """Check one call with the gate and, when it may run, run it.

    The gate knows what the runtime cannot run, as in a job: the executors are asked
    first (an MCP server the tool names is started and lists its tools), and an
    unavailable tool is blocked with ``TOOL_UNAVAILABLE`` (exit 1), never tried."""
    config = load_config(config_path)
    skill = load_skill(skill_path)
    base = base_policy(config, policy)
    creds = credentials(config)
    creds.resolve(skill)
    executors = make_executors(config, base, creds)
    named = skill.tool(tool_name)
    asked = [named] if named is not None else []

    async def run() -> CallResult:
        try:
            await executors.prepare(asked, skill.root)
            unavailable = executors.unavailable(asked, skill.root)
            gate = Gate.for_skill(skill, base=base, unavailable=unavailable)
            decision = gate.check(tool_name, args)
            approved_by = None
            if (
                isinstance(decision, NeedApproval)
                and as_role is not None
                and as_role == decision.approver
            ):
                grant = ApprovalGrant(decision.tool, decision.args, as_role, "skillwire-call")
                decision = gate.check(tool_name, args, approvals=[grant], correlation_ids=None)
                approved_by = as_role
            result = CallResult(tool_name, args, decision, approved_by)
            if not isinstance(decision, Allow):
                return result
            tool = skill.tool(decision.tool)
            if tool is None:  # the gate allowed a tool the skill has: cannot happen
                raise UsageError(f"no tool {decision.tool}")
            result.tool = tool.name
            result.outcome = await executors.execute(
                tool,
                dict(decision.args),
                idempotency_key=f"call-{uuid.uuid4().hex}",
                skill_root=skill.root,
            )
            return result
        finally:
            await executors.aclose()

    return asyncio.run(run())


def render(result: CallResult) -> None:
    """Print a call's decision and outcome for a person (no markup from the values)."""
    out = Console(highlight=False, soft_wrap=True)
    decision = result.decision
    if isinstance(decision, Block):
        out.print(f"blocked: {result.tool}", markup=False)
        for reason in decision.reasons:
            where = f" ({reason.source})" if reason.source else ""
            out.print(f"  - {reason.message}{where}", markup=False)
    elif isinstance(decision, NeedInput):
        out.print(f"needs input: {', '.join(decision.requested_fields)}", markup=False)
        out.print(f"  {decision.prompt}", markup=False)
    elif isinstance(decision, NeedApproval):
        out.print(
            f"needs approval by {decision.approver}: {decision.reason_text}\n"
            f"  run again with --as {decision.approver} to approve it",
            markup=False,
        )
    if result.outcome is None:
        return
    if result.approved_by:
        out.print(f"approved as {result.approved_by}", markup=False)
    outcome = result.outcome
    out.print("ok" if outcome.ok else f"failed: {outcome.error}", markup=False)
    if outcome.result is not None:
        out.print(json.dumps(outcome.result, indent=2, ensure_ascii=False), markup=False)
    if outcome.state_changes:
        out.print("state changes: " + json.dumps(outcome.state_changes), markup=False)


def run_call(
    skill: Path,
    tool: str,
    args_text: str,
    *,
    as_role: str | None,
    policy: Path | None,
    as_json: bool,
) -> int:
    """The command's body: call, print; the exit code the result gives."""
    result = call_tool(skill, tool, parse_args(args_text), as_role=as_role, policy=policy)
    if as_json:
        typer.echo(json.dumps(result.to_dict(), indent=2, default=str))
    else:
        render(result)
    return result.exit_code


def mcp_tools(command: list[str], *, url: str | None, server: str) -> None:
    """``skillwire mcp tools -- CMD ARGS...`` (or ``--url``): print the server's tools as
    ``tools.json`` entries naming ``server``."""
    from skillwire.tools.mcp import McpServer, list_server_tools, tool_entries

    if (not command) == (url is None):
        raise UsageError("give the server's command after --, or --url, not both")
    found = McpServer(server, tuple(command), url)
    try:
        tools = asyncio.run(list_server_tools(found))
    except ImportError:
        raise UsageError(
            "listing MCP tools needs the mcp SDK: pip install 'skillwire[tools]'"
        ) from None
    except Exception as exc:
        raise UsageError(
            f"cannot list the tools of {url or ' '.join(command)}: {type(exc).__name__}: {exc}"
        ) from None
    typer.echo(json.dumps({"tools": tool_entries(tools, server)}, indent=2))
