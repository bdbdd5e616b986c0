"""``skillwire new DIR`` and ``skillwire edit DIR``: the guided authoring interview in a
terminal (docs/authoring.md). The interview itself is :mod:`skillwire.builder`; this
module reads the terminal, picks the model and runs the dry run."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TextIO

import typer

if TYPE_CHECKING:
    from rich.console import Console

    from skillwire.builder import ImportedTools, Question, Session
    from skillwire.core.chat import ChatModel

__all__ = ["TerminalPrompter", "edit_command", "new_command"]

_STYLES = {"error": "red", "ok": "green", "note": "cyan", "warning": "yellow", "diff": ""}


class TerminalPrompter:
    """Asks on a console and reads answers, one line each, from a text stream (the
    terminal's standard input, or a test's lines). Nothing the author or the model
    wrote is read as markup."""

    def __init__(self, stream: TextIO, out: Console) -> None:
        self.stream = stream
        self.out = out

    def ask(self, question: Question) -> str:
        """Print the question, its choices and default; read one line."""
        from skillwire.cli_output import styled

        parts: list[str | tuple[str, str]] = [(question.text, "bold")]
        if question.choices:
            numbered = ", ".join(f"{i}) {c}" for i, c in enumerate(question.choices, 1))
            parts.append(f"  [{numbered}]")
        if question.default:
            parts.append((f"  (default: {question.default})", "dim"))
        self.out.print(styled(*parts), soft_wrap=True)
        if question.note:
            self.out.print(styled(("  " + question.note, "dim")), soft_wrap=True)
        self.out.print("> ", end="")
        line = self.stream.readline()
        if not line:
            from skillwire.core.errors import UsageError

            raise UsageError("the input ended before the interview did: nothing written")
        return line.rstrip("\n")

    def say(self, text: str, style: str = "") -> None:
        """Print a line in its style."""
        from skillwire.cli_output import styled

        if style == "diff":
            for line in text.splitlines():
                color = "green" if line.startswith("+") else "red" if line.startswith("-") else ""
                self.out.print(styled((line, color)) if color else styled(line), soft_wrap=True)
            return
        color = _STYLES.get(style, "")
        self.out.print(styled((text, color)) if color else styled(text), soft_wrap=True)


class _EchoDefaults:
    """``--yes``: every question takes its default; what is said is still printed."""

    def __init__(self, out: TerminalPrompter) -> None:
        self.out = out

    def ask(self, question: Question) -> str:
        return ""

    def say(self, text: str, style: str = "") -> None:
        self.out.say(text, style)


def _drafting_model(spec: str | None) -> ChatModel | None:
    """The model that drafts from a description: ``--model``, else the configured
    default; None for the offline model (the interview is then deterministic)."""
    from skillwire.assembly import choose_models
    from skillwire.config import load_config
    from skillwire.models.offline import OfflineModel

    config = load_config()
    if spec is None:
        settings = config.model_named(config.runtime.model)
        if settings is None or settings.backend == "offline":
            return None
    model = choose_models(spec, config=config).model
    return None if isinstance(model, OfflineModel) else model


def _session(folder: Path, *, new: bool, description: str, yes: bool) -> Session:
    from skillwire.builder import Session, open_draft
    from skillwire.cli_output import console

    terminal = TerminalPrompter(sys.stdin, console(soft_wrap=True))
    prompter = _EchoDefaults(terminal) if yes else terminal
    draft = open_draft(folder, new=new, description=description)
    return Session(draft, prompter, description=description)


def _import_tools(
    session: Session, python: Path | None, openapi: Path | None
) -> list[ImportedTools]:
    from skillwire.builder import add_tools, tools_from_openapi, tools_from_python

    found: list[ImportedTools] = []
    if python is not None:
        found.append(tools_from_python(python, session.draft.folder))
    if openapi is not None:
        found.append(tools_from_openapi(openapi))
    for imported in found:
        for skipped in imported.skipped:
            session.say(f"left out: {skipped}", "warning")
        add_tools(session, imported.tools)
    return found


def _run(
    session: Session,
    model_spec: str | None,
    *,
    yes: bool,
    dry_run: bool,
    drafts: bool,
    imported: Sequence[ImportedTools] = (),
) -> None:
    import asyncio

    from skillwire.builder import add_dry_run_tests, draft_with_model, finish, interview

    model = _drafting_model(model_spec) if drafts else None
    if model is not None:
        if not session.description and not yes:
            answer = session.prompter.ask(
                _question("Describe the agent in a few sentences (what it is for, what it may do)")
            )
            session.description = answer.strip()
        if session.description:
            tools = [t for t in session.draft.data.get("tools") or [] if isinstance(t, dict)]

            async def drafted() -> bool:
                try:
                    return await draft_with_model(session, model, tools)
                finally:
                    await model.aclose()

            asyncio.run(drafted())
    interview(session)
    if dry_run:
        add_dry_run_tests(session)
    path = finish(session, confirm=not yes)
    if path is None:
        raise typer.Exit(1)
    for found in imported:
        for written in found.write_files():
            session.say(f"wrote {written} (the tools' module)", "ok")
    if dry_run:
        from skillwire.cli_new_dry_run import dry_run_skill

        if not dry_run_skill(path, session):
            raise typer.Exit(1)


def _question(text: str) -> Question:
    from skillwire.builder import Question

    return Question(text)


ModelOption = Annotated[
    str | None,
    typer.Option(
        "--model",
        help="The model that drafts from your description (a configured name, or "
        "scripted:FILE); default the configured one. Offline: a step-by-step interview.",
    ),
]
YesOption = Annotated[
    bool, typer.Option("--yes", "-y", help="Take every default and write without asking.")
]
DryRunOption = Annotated[
    bool,
    typer.Option(
        "--dry-run/--no-dry-run",
        help="Generate the skill's scenarios into its tests: and run its tests offline "
        "(as skillwire test does) after writing.",
    ),
]


def new_command(
    folder: Annotated[Path, typer.Argument(help="The folder of the new skill.")],
    describe: Annotated[
        str, typer.Option("--describe", help="What the agent is for, in a few sentences.")
    ] = "",
    from_python: Annotated[
        Path | None,
        typer.Option("--from-python", help="A Python file whose typed functions become tools."),
    ] = None,
    from_openapi: Annotated[
        Path | None,
        typer.Option("--from-openapi", help="An OpenAPI 3 document whose operations become tools."),
    ] = None,
    model: ModelOption = None,
    yes: YesOption = False,
    dry_run: DryRunOption = True,
) -> None:
    """Write a new skill with an interview: every answer is checked by the loader at
    once, and the file is written only when it loads (its diff shown first)."""
    from skillwire.cli_jobs import guard
    from skillwire.core.errors import UsageError

    def body() -> None:
        if (folder / "domain.yaml").exists():
            raise UsageError(f"{folder / 'domain.yaml'} exists: use skillwire edit {folder}")
        session = _session(folder, new=True, description=" ".join(describe.split()), yes=yes)
        imported = _import_tools(session, from_python, from_openapi)
        _run(session, model, yes=yes, dry_run=dry_run, drafts=True, imported=imported)

    guard(body)


def edit_command(
    folder: Annotated[Path, typer.Argument(help="The folder of the skill (its domain.yaml).")],
    yes: YesOption = False,
    dry_run: DryRunOption = True,
) -> None:
    """Run the interview on an existing skill: comments and order are kept, and the
    diff is shown before anything is written."""
    from skillwire.cli_jobs import guard
    from skillwire.core.errors import UsageError

    def body() -> None:
        if not (folder / "domain.yaml").is_file():
            raise UsageError(f"no {folder / 'domain.yaml'}: use skillwire new {folder}")
        session = _session(folder, new=False, description="", yes=yes)
        _run(session, None, yes=yes, dry_run=dry_run, drafts=False)

    guard(body)
