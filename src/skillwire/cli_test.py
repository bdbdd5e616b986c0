"""``skillwire test``: run the skills' tests, print a table, write JUnit XML."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

__all__ = ["test_command"]

_STYLE = {"pass": "green", "fail": "bold red", "manual": "cyan"}


def test_command(
    paths: Annotated[list[Path], typer.Argument(help="Skill files or folders of skills.")],
    junit: Annotated[
        Path | None, typer.Option("--junit", help="Also write the results as JUnit XML here.")
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            help="The model of dry runs that are not scripted: a configured name or "
            "scripted:FILE (default: offline).",
        ),
    ] = None,
    timeout: Annotated[
        float, typer.Option("--timeout", help="Seconds each test command may run.")
    ] = 60.0,
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Also show manual cases' steps.")
    ] = False,
) -> None:
    """Run the tests skills carry: tests.json commands, scenarios[] and tests: dry runs.

    Dry runs use the offline model unless a test is scripted or --model says otherwise.
    Manual scenarios are listed, never run. Exit 1 when any test fails."""
    from rich.table import Table

    from skillwire.cli_jobs import guard
    from skillwire.cli_output import console, styled, terminal_width
    from skillwire.skilltests import junit_xml, run_suite, summary

    def body() -> None:
        report = run_suite(paths, model=model, timeout=timeout)
        out = console(width=terminal_width())
        table = Table(title="skill tests")
        for col in ("skill", "case", "kind", "result", "seconds", "detail"):
            table.add_column(col, overflow="fold")
        for o in report.outcomes:
            shown = o.details if (o.verdict == "fail" or verbose) else o.details[:1]
            table.add_row(
                o.skill,
                o.case,
                o.kind,
                styled((o.verdict, _STYLE[o.verdict])),
                f"{o.seconds:.2f}",
                "\n".join(shown),
            )
        out.print(table)
        for o in report.outcomes:
            if o.verdict == "fail":
                out.print(styled(("FAIL", "bold red"), f" {o.skill} {o.case} ({o.location})"))
                for line in o.details:
                    out.print(f"  {line}", soft_wrap=True)
        if junit is not None:
            junit.write_text(junit_xml(report), encoding="utf-8")
        if not report.outcomes:
            out.print("no tests found")
        out.print(summary(report))
        raise typer.Exit(1 if report.failed else 0)

    guard(body)
