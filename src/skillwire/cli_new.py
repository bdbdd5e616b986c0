"""``skillwire new DIR`` and ``skillwire edit DIR``: the guided authoring interview in a
terminal (docs/authoring.md). The interview itself is :mod:`skillwire.builder`; this
module reads the terminal, picks the model, lists an MCP server's tools for the builder
(through :mod:`skillwire.tools.mcp`, which the builder may not import) and runs the dry
run."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TextIO

import typer

if TYPE_CHECKING:
    from rich.console import Console

    from skillwire.builder import ImportedTools, Question, Session
    from skillwire.core.chat import ChatModel
    from skillwire.tools import McpServer

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
    session: Session,
    python: Path | None = None,
    openapi: Path | None = None,
    mcp: McpServer | None = None,
) -> list[ImportedTools]:
    from skillwire.builder import add_tools, tools_from_mcp, tools_from_openapi, tools_from_python

    found: list[ImportedTools] = []
    if python is not None:
        found.append(tools_from_python(python, session.draft.folder))
    if openapi is not None:
        found.append(tools_from_openapi(openapi))
    if mcp is not None:
        found.append(tools_from_mcp(list_mcp_tools(mcp), mcp.name))
    for imported in found:
        for skipped in imported.skipped:
            session.say(f"left out: {skipped}", "warning")
        add_tools(session, imported)
    return found


_SERVER_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")


def mcp_server_of(
    folder: Path, flag: bool, command: Sequence[str], url: str | None, name: str | None
) -> McpServer | None:
    """The MCP server ``--from-mcp -- CMD...`` or ``--from-mcp-url URL`` names (None
    without either), named ``name`` or after the skill's folder. Raises
    :class:`UsageError` for a command without ``--from-mcp`` and the like."""
    from skillwire.core.errors import UsageError
    from skillwire.skills.loader_single import derive_id
    from skillwire.tools import McpServer

    if command and not flag:
        raise UsageError(
            f"unexpected arguments {' '.join(command)!r}: an MCP server's command goes "
            "after --from-mcp -- (skillwire new DIR --from-mcp -- CMD ARGS...)"
        )
    if flag and not command:
        raise UsageError("--from-mcp lists the server whose command follows --: --from-mcp -- CMD")
    if flag and url is not None:
        raise UsageError("give the MCP server's command (--from-mcp -- CMD) or --from-mcp-url")
    if not flag and url is None:
        if name is not None:
            raise UsageError("--mcp-server names the server of --from-mcp or --from-mcp-url")
        return None
    if url is not None and not url.startswith(("http://", "https://")):
        raise UsageError(f"--from-mcp-url takes an http:// or https:// URL, not {url!r}")
    chosen = name if name is not None else derive_id(folder / "domain.yaml")
    if not chosen or not set(chosen) <= _SERVER_NAME_CHARS:
        raise UsageError(
            f"--mcp-server {chosen!r}: a server name is letters, digits, - and _ "
            "(it is a key of [tools.mcp_servers] in skillwire.toml)"
        )
    return McpServer(chosen, tuple(command), url)


def list_mcp_tools(server: McpServer) -> list[dict[str, Any]]:
    """The server's ``tools/list``, each tool as the protocol writes it (``name``,
    ``description``, ``inputSchema``, ``annotations``): the server is started (or
    connected to) for the listing and stopped."""
    import asyncio

    from skillwire.core.errors import UsageError
    from skillwire.tools.mcp import list_server_tools

    where = server.url or " ".join(server.command)
    try:
        tools = asyncio.run(list_server_tools(server))
    except ImportError:
        raise UsageError(
            "listing MCP tools needs the mcp SDK: pip install 'skillwire[tools]'"
        ) from None
    except Exception as exc:  # the server's failure, whatever it is: the author's to see
        error: BaseException = exc
        while isinstance(error, BaseExceptionGroup) and error.exceptions:
            error = error.exceptions[0]
        raise UsageError(
            f"cannot list the tools of the MCP server {where}: {type(error).__name__}: {error}"
        ) from None
    return [t.model_dump(by_alias=True, mode="json", exclude_none=True) for t in tools]


def toml_string(text: str) -> str:
    """``text`` as a TOML basic string: ``"`` and ``\\`` escaped, and every control
    character (TOML allows none but tab in a basic string) as ``\\uXXXX``."""
    out = []
    for char in text:
        if char in '"\\':
            out.append("\\" + char)
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\u{ord(char):04X}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def server_entry(server: McpServer) -> str:
    """The ``skillwire.toml`` table that configures ``server`` for the mcp executor."""
    if server.url is not None:
        where = f"url = {toml_string(server.url)}"
    else:
        where = f"command = [{', '.join(map(toml_string, server.command))}]"
    return f"[tools.mcp_servers.{server.name}]\n{where}"


def _say_server_entry(session: Session, server: McpServer) -> None:
    """Tell the operator what ``skillwire.toml`` needs for the skill's mcp tools to run
    (or that it has it already)."""
    from skillwire.config import load_config

    config = load_config()
    file = str(config.source) if config.source else "skillwire.toml"
    configured = config.tools.mcp_servers.get(server.name)
    if configured is not None:
        same = (configured.url == server.url) and (
            tuple(configured.command or ()) == server.command
        )
        if same:
            session.say(f"{file} configures the MCP server {server.name} already", "ok")
            return
        session.say(
            f"{file} configures the MCP server {server.name} otherwise: the skill's mcp "
            "tools call that one; the server listed was:",
            "warning",
        )
    else:
        session.say(
            f"the skill's mcp tools call the MCP server {server.name}: add to {file}", "note"
        )
    session.say(server_entry(server))
    if server.url is None:
        session.say(
            "(the server starts in the folder of skillwire.toml: a relative path in its "
            "command is read from there)",
            "note",
        )


def _run(
    session: Session,
    model_spec: str | None,
    *,
    yes: bool,
    dry_run: bool,
    drafts: bool,
    imported: Sequence[ImportedTools] = (),
    mcp: McpServer | None = None,
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
    passed = True
    if dry_run:
        from skillwire.cli_new_dry_run import dry_run_skill

        passed = dry_run_skill(path, session, mcp)
    if mcp is not None:
        _say_server_entry(session, mcp)
    if not passed:
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
FromMcpOption = Annotated[
    bool,
    typer.Option(
        "--from-mcp",
        help="List the tools of the MCP server whose command follows -- and make them "
        "mcp tools (skillwire new DIR --from-mcp -- CMD ARGS...).",
    ),
]
FromMcpUrlOption = Annotated[
    str | None,
    typer.Option("--from-mcp-url", help="The same for a streamable HTTP MCP server."),
]
McpServerOption = Annotated[
    str | None,
    typer.Option(
        "--mcp-server",
        help="The name skillwire.toml gives the MCP server (default: the skill's folder name).",
    ),
]
McpCommandArgument = Annotated[
    list[str] | None,
    typer.Argument(help="The MCP server's command and its arguments, after --from-mcp --."),
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
    from_mcp: FromMcpOption = False,
    from_mcp_url: FromMcpUrlOption = None,
    mcp_server: McpServerOption = None,
    model: ModelOption = None,
    yes: YesOption = False,
    dry_run: DryRunOption = True,
    command: McpCommandArgument = None,
) -> None:
    """Write a new skill with an interview: every answer is checked by the loader at
    once, and the file is written only when it loads (its diff shown first)."""
    from skillwire.cli_jobs import guard
    from skillwire.core.errors import UsageError

    def body() -> None:
        if (folder / "domain.yaml").exists():
            raise UsageError(f"{folder / 'domain.yaml'} exists: use skillwire edit {folder}")
        mcp = mcp_server_of(folder, from_mcp, command or [], from_mcp_url, mcp_server)
        session = _session(folder, new=True, description=" ".join(describe.split()), yes=yes)
        imported = _import_tools(session, from_python, from_openapi, mcp)
        _run(session, model, yes=yes, dry_run=dry_run, drafts=True, imported=imported, mcp=mcp)

    guard(body)


def edit_command(
    folder: Annotated[Path, typer.Argument(help="The folder of the skill (its domain.yaml).")],
    from_mcp: FromMcpOption = False,
    from_mcp_url: FromMcpUrlOption = None,
    mcp_server: McpServerOption = None,
    yes: YesOption = False,
    dry_run: DryRunOption = True,
    command: McpCommandArgument = None,
) -> None:
    """Run the interview on an existing skill: comments and order are kept, and the
    diff is shown before anything is written."""
    from skillwire.cli_jobs import guard
    from skillwire.core.errors import UsageError

    def body() -> None:
        if not (folder / "domain.yaml").is_file():
            raise UsageError(f"no {folder / 'domain.yaml'}: use skillwire new {folder}")
        mcp = mcp_server_of(folder, from_mcp, command or [], from_mcp_url, mcp_server)
        session = _session(folder, new=False, description="", yes=yes)
        imported = _import_tools(session, mcp=mcp)
        _run(session, None, yes=yes, dry_run=dry_run, drafts=False, imported=imported, mcp=mcp)

    guard(body)
