"""``skillwire doctor``: whether this machine can run the skills, as a table."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

__all__ = ["doctor_command"]

_STYLE = {"ok": "green", "missing": "bold red", "manual": "cyan"}


def doctor_command(
    paths: Annotated[list[Path], typer.Argument(help="Skill files or folders of skills.")],
    timeout: Annotated[
        float, typer.Option("--timeout", help="Seconds each check command may run.")
    ] = 30.0,
) -> None:
    """Check prerequisites (their howToCheck commands, never through a shell),
    credentials, tools' executors and required adapters. Manual items are listed with
    their instructions. Exit 1 when a required item is missing."""
    from rich.table import Table

    from skillwire.cli_jobs import guard
    from skillwire.cli_output import console, styled, terminal_width
    from skillwire.doctor import diagnose

    def body() -> None:
        report = diagnose(paths, timeout=timeout)
        table = Table(title="skill doctor")
        for col in ("skill", "kind", "item", "required", "state", "detail", "expected", "fix"):
            table.add_column(col, overflow="fold")
        for c in report.checks:
            table.add_row(
                c.skill,
                c.kind,
                c.item,
                "yes" if c.required else "no",
                styled((c.state, _STYLE[c.state])),
                c.detail,
                c.expected,
                c.how_to_fix if c.state != "ok" else "",
            )
        out = console(width=terminal_width())
        out.print(table)
        missing = [c for c in report.checks if c.required and c.state == "missing"]
        manual = sum(1 for c in report.checks if c.state == "manual")
        out.print(
            f"{len(report.checks)} checks: {len(missing)} required missing, "
            f"{manual} manual: " + ("failed" if missing else "ok")
        )
        raise typer.Exit(1 if report.failed else 0)

    guard(body)
