"""The dry run that ends ``skillwire new`` and ``skillwire edit``: the skill's tests, its
generated scenarios among them (:func:`skillwire.builder.add_dry_run_tests` put them in
its ``tests:`` before the write), run by the shared runner of ``skillwire test``
(:func:`skillwire.skilltests.run_suite`). What the interview runs is what ``skillwire
test DIR`` runs later, case for case.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from skillwire.builder import Session
    from skillwire.tools import McpServer

__all__ = ["dry_run_skill"]

_STYLES = {"pass": "ok", "fail": "error", "manual": "note"}


def dry_run_skill(path: Path, session: Session, mcp: McpServer | None = None) -> bool:
    """Run every test of the skill at ``path`` as ``skillwire test`` does (offline, each
    scripted test on its script) and say how each ended. True when none failed.

    ``mcp``: the server the skill's mcp tools were listed from. ``skillwire.toml`` does
    not configure it yet (the interview prints its table at the end), so the dry run
    adds it to the configuration it runs with; a server the file configures already is
    the one the dry run (and every later job) calls."""
    from skillwire.config import McpServerConfig, load_config
    from skillwire.skilltests import run_suite, summary

    session.say(f"dry run: skillwire test {path.parent}", "note")
    config = load_config()
    if mcp is not None and mcp.name not in config.tools.mcp_servers:
        server = McpServerConfig(
            command=list(mcp.command) if mcp.url is None else None, url=mcp.url
        )
        servers = {**config.tools.mcp_servers, mcp.name: server}
        tools = config.tools.model_copy(update={"mcp_servers": servers})
        config = config.model_copy(update={"tools": tools})
    report = run_suite([path], config=config)
    for outcome in report.outcomes:
        mark = "FAIL" if outcome.verdict == "fail" else outcome.verdict
        shown = outcome.details if outcome.verdict == "fail" else []
        detail = "; ".join(shown) or outcome.title
        session.say(f"  {mark} {outcome.case}: {detail}", _STYLES[outcome.verdict])
    session.say(f"dry run: {summary(report)}", "error" if report.failed else "ok")
    return not report.failed
