"""The ``skillwire`` command line (typer and rich, imported only when the command runs)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from skillwire.cli_check import explain_skills, render_report

app = typer.Typer(
    name="skillwire",
    help="Run LLM agents governed by declarative skills.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _root() -> None:
    """Run LLM agents governed by declarative skills."""


@app.command()
def check(
    paths: Annotated[list[Path], typer.Argument(help="Skill files or folders of skills.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    explain: Annotated[
        bool, typer.Option("--explain", help="Show how each rule is enforced.")
    ] = False,
    strict: Annotated[bool, typer.Option("--strict", help="Treat warnings as errors.")] = False,
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Also list what is present, not enforced.")
    ] = False,
) -> None:
    """Check skills: every error with file, line and column. Exit 1 on any error."""
    from skillwire.skills import load_paths

    result = load_paths(paths)
    report = result.report
    failed = not report.ok or (strict and report.warning_count > 0)
    if as_json:
        data = report.to_dict()
        if explain:
            data["explain"] = explain_skills(result.skills.values())
        typer.echo(json.dumps(data, indent=2))
    else:
        render_report(report, verbose=verbose, strict=strict)
        if explain:
            from skillwire.cli_check import render_explain

            render_explain(result.skills.values())
    raise typer.Exit(1 if failed else 0)
