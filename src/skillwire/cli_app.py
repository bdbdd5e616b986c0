"""The ``skillwire`` command line (typer and rich, imported only when the command runs)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer

from skillwire.cli_doctor import doctor_command
from skillwire.cli_new import edit_command, new_command
from skillwire.cli_signing import sign_command, signing_app, verify_command
from skillwire.cli_sim import sim_app
from skillwire.cli_skills import skills_app
from skillwire.cli_test import test_command

if TYPE_CHECKING:
    from skillwire.assembly import Database
    from skillwire.config import SkillwireConfig
    from skillwire.skills import LoadResult

app = typer.Typer(
    name="skillwire",
    help="Run LLM agents governed by declarative skills.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # help texts print as written: "[server]" stays
)


def _print_version(value: bool) -> None:
    if value:
        import skillwire

        typer.echo(f"skillwire {skillwire.__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", help="Print the version and exit.", callback=_print_version, is_eager=True
        ),
    ] = False,
) -> None:
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
    from skillwire.cli_check import add_rule_findings, explain_skills, render_report
    from skillwire.cli_jobs import guard
    from skillwire.cli_sim import check_experiments, split_experiments
    from skillwire.config import load_config, trust_policy
    from skillwire.skills import load_paths

    experiments, paths = split_experiments(paths)  # simulation experiments: docs/sim.md
    sim_failed = bool(experiments) and check_experiments(
        experiments, as_json=as_json, explain=explain, strict=strict, verbose=verbose
    )
    if experiments and not paths:
        raise typer.Exit(1 if sim_failed else 0)
    config = guard(load_config)
    from skillwire.assembly import add_tool_findings, base_policy

    result = guard(lambda: load_paths(paths, base=base_policy(config), trust=trust_policy(config)))
    _check_python_tools(result, config.tools.python_modules)

    guard(lambda: add_tool_findings(result, config))
    add_rule_findings(result)
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
    raise typer.Exit(1 if failed or sim_failed else 0)


def _check_python_tools(result: LoadResult, modules: Sequence[str]) -> None:
    """An error, at the line that names it, for each python tool whose callable lies
    outside its skill's folder and the operator's ``[tools] python_modules`` (the
    modules are read, never run); such a skill is then not loaded."""
    from skillwire.core.issues import Severity, SkillIssue
    from skillwire.skills.model_tools import PythonExecutor
    from skillwire.tools import callable_problem

    for rep in result.report.skills:
        skill = result.skills.get(rep.skill_id or "")
        if skill is None or not rep.loaded:
            continue
        for index, tool in enumerate(skill.tools):
            spec = tool.executor
            if not isinstance(spec, PythonExecutor):
                continue
            problem = callable_problem(spec.callable, skill.root, modules)
            if problem is None:
                continue
            path = ("tools", index, "executor", "callable")
            issue = SkillIssue(
                Severity.ERROR,
                f"python tool {tool.name} may not call {spec.callable}: {problem}",
                skill.locate(path),
                path,
                code="python_callable_refused",
                hint="define it in a module of the skill's folder, or list its module in "
                "[tools] python_modules of skillwire.toml",
            )
            rep.add(issue.location.file, [issue])
            rep.loaded = False


DbOption = Annotated[
    Path | None,
    typer.Option(
        "--db",
        help="SQLite file (default $SKILLWIRE_DB, else runtime.db of skillwire.toml, "
        "else .skillwire/jobs.db).",
    ),
]
ModelOption = Annotated[
    str | None,
    typer.Option("--model", help="A configured model name (default: offline), or scripted:FILE."),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print the job as JSON.")]


def _db(db: Path | None, config: SkillwireConfig | None = None) -> Database:
    """``--db``, else where the configuration (read now unless given) puts jobs."""
    from skillwire.assembly import default_db
    from skillwire.config import load_config

    if db is not None:
        return db
    return default_db(config or load_config())


@app.command()
def run(
    skill: Annotated[Path, typer.Argument(help="The skill file or package folder.")],
    message: Annotated[str, typer.Option("-m", "--message", help="The user's message.")],
    model: ModelOption = None,
    context: Annotated[
        list[str] | None,
        typer.Option(
            "--context",
            help="Context as key=value (repeatable), typed by the skill's field of that "
            "name (else text); key:=JSON for a JSON value.",
        ),
    ] = None,
    db: DbOption = None,
    as_json: JsonOption = False,
    queue: Annotated[
        bool, typer.Option("--queue", help="Queue the start for a worker; print the job id.")
    ] = False,
) -> None:
    """Start a job on SKILL and run it until it pauses or ends (``--queue``: a worker
    runs it; see ``skillwire worker``)."""
    from skillwire.cli_jobs import exit_for, guard, print_job, with_runtime
    from skillwire.cli_skills import start_on_version
    from skillwire.cli_values import context_schemas, split_pairs, typed_values
    from skillwire.config import load_config, trust_policy
    from skillwire.skills import load_skill

    def body() -> None:
        pairs = split_pairs(context or [], "--context")
        config = load_config()
        loaded = load_skill(skill, trust=trust_policy(config))
        ctx = typed_values(pairs, context_schemas(loaded), "--context")
        if queue:
            from skillwire.cli_worker import enqueue_run

            owner = str(ctx.get("user_id", ""))
            typer.echo(enqueue_run(config, loaded, message, ctx, owner))
            return
        job = with_runtime(
            _db(db, config),
            model,
            None,
            lambda rt: start_on_version(rt, loaded, message, ctx),
            skill=loaded,
            config=config,
        )
        print_job(job, as_json)
        exit_for(job)

    guard(body)


@app.command()
def resume(
    job_id: Annotated[str, typer.Argument(help="The paused job (its id or a unique start of it).")],
    input_pairs: Annotated[
        list[str] | None,
        typer.Option(
            "--input",
            help="A requested field as key=value, typed by the field's schema (a text "
            "field keeps 12345 as text); key:=JSON for a JSON value.",
        ),
    ] = None,
    approve: Annotated[bool, typer.Option("--approve", help="Approve the waiting call.")] = False,
    deny: Annotated[bool, typer.Option("--deny", help="Deny the waiting call.")] = False,
    as_role: Annotated[str | None, typer.Option("--as", help="Your role (approvals).")] = None,
    retry: Annotated[
        bool,
        typer.Option("--retry", help="Retry a job a model outage paused (MODEL_UNAVAILABLE)."),
    ] = False,
    model: ModelOption = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Give a paused job its input, approve or deny its waiting call, or retry it.

    A decision is for the call the job waits on now (printed to standard error, its
    pause's correlation id sent along) and is recorded as decided by ``cli:<your OS
    user>``. ``--retry`` runs the stage a model outage stopped again (recorded as asked
    by ``cli:<your OS user>``). Exits 2 with a message when the input is refused (the
    job waits on, unchanged), the decision is not allowed, or the job is not paused by a
    model outage (``--retry``; nothing changes).
    """
    from skillwire.cli_jobs import (
        cli_actor,
        decide_waiting,
        exit_for,
        full_job_id,
        give_input,
        guard,
        print_job,
        refused_input,
        with_runtime,
    )
    from skillwire.cli_values import split_pairs
    from skillwire.config import load_config
    from skillwire.core.errors import UsageError

    def body() -> None:
        if approve and deny:
            raise UsageError("give --approve or --deny, not both")
        if (approve or deny) and input_pairs:
            raise UsageError("give --input, or --approve/--deny, not both")
        if retry and (approve or deny or input_pairs):
            raise UsageError("--retry takes no --input, --approve or --deny")
        if not (approve or deny or input_pairs or retry):
            raise UsageError(
                "give --input key=value, --approve --as ROLE, --deny --as ROLE or --retry"
            )
        pairs = split_pairs(input_pairs or [], "--input")
        decision: Literal["approve", "deny"] | None = (
            "approve" if approve else "deny" if deny else None
        )
        config = load_config()
        path = _db(db, config)
        full_id = full_job_id(path, job_id)
        job = with_runtime(
            path,
            model,
            full_id,
            lambda rt: (
                decide_waiting(rt, full_id, decision, as_role)
                if decision is not None
                else rt.resume(full_id, retry=True, decided_by=cli_actor())
                if retry
                else give_input(rt, full_id, pairs)
            ),
            config=config,
        )
        print_job(job, as_json)
        refused = refused_input(job)
        if refused:
            raise UsageError(f"the input was not accepted, the job still waits: {refused}")
        exit_for(job)

    guard(body)


@app.command()
def jobs(
    db: DbOption = None,
    status: Annotated[str | None, typer.Option(help="Only jobs with this status.")] = None,
    outcome: Annotated[
        str | None,
        typer.Option(help="Only jobs with this outcome class (BLOCKED, DENIED, SUCCESS, ...)."),
    ] = None,
    limit: Annotated[int, typer.Option(help="At most this many.")] = 50,
    as_json: JsonOption = False,
) -> None:
    """List jobs, newest first."""
    import asyncio
    import shutil

    from rich.measure import Measurement
    from rich.table import Table

    from skillwire.assembly import db_exists, db_label, open_store
    from skillwire.cli_jobs import guard
    from skillwire.cli_output import console
    from skillwire.core.errors import UsageError
    from skillwire.core.job import JobStatus, OutcomeClass

    def body() -> None:
        path = _db(db)
        if not db_exists(path):
            raise UsageError(f"no job database at {path}")
        try:
            wanted = JobStatus(status) if status else None
        except ValueError:
            raise UsageError(f"unknown status {status!r}") from None
        try:
            outcome_class = OutcomeClass(outcome.upper()) if outcome else None
        except ValueError:
            known = ", ".join(OutcomeClass)
            raise UsageError(f"unknown outcome class {outcome!r}; one of {known}") from None

        async def fetch() -> list[Any]:
            store = open_store(path)
            try:
                return await store.list(status=wanted, outcome_class=outcome_class, limit=limit)
            finally:
                await store.close()

        records = asyncio.run(fetch())
        if as_json:
            typer.echo(
                json.dumps(
                    [
                        {
                            "id": r.id,
                            "skill_id": r.skill_id,
                            "status": str(r.status),
                            "outcome_class": r.outcome_class,
                            "owner": r.owner,
                            "created_at": r.created_at,
                        }
                        for r in records
                    ],
                    indent=2,
                )
            )
            return
        # Every cell whole on one line, the table as wide as it needs (a terminal narrower
        # than that wraps the lines): an id is never cut, so it can be pasted (show and
        # resume also take any unique start of one).
        table = Table(box=None, pad_edge=False)
        for col in ("id", "skill", "status", "outcome", "owner", "created"):
            table.add_column(col, no_wrap=True)
        for r in records:
            table.add_row(
                r.id,
                r.skill_id,
                str(r.status),
                str(r.outcome_class or ""),
                r.owner,
                r.created_at[:19].replace("T", " "),
            )
        out = console(width=10_000)
        needed = Measurement.get(out, out.options, table).maximum
        out.width = max(needed, shutil.get_terminal_size((80, 40)).columns)
        out.print(f"jobs in {db_label(path)}", soft_wrap=True)
        out.print(table)

    guard(body)


@app.command()
def show(
    job_id: Annotated[str, typer.Argument(help="The job (its id or a unique start of it).")],
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """A job's timeline: stages, gate decisions with reason codes, model calls."""
    import asyncio

    from skillwire.assembly import db_exists, open_store
    from skillwire.cli_jobs import guard, print_job, render_timeline
    from skillwire.core.errors import NotFoundError
    from skillwire.core.store import resolve_job_id
    from skillwire.engine import JobView

    def body() -> None:
        path = _db(db)
        if not db_exists(path):
            raise NotFoundError(f"no job database at {path}")

        async def fetch() -> JobView:
            store = open_store(path)
            try:
                full_id = await resolve_job_id(store, job_id)
                record = await store.get(full_id)
                if record is None:  # deleted since
                    raise NotFoundError(f"no job '{full_id}'")
                events, calls = await store.events(full_id), await store.model_calls(full_id)
                return JobView(record, events, calls)
            finally:
                await store.close()

        job = asyncio.run(fetch())
        if as_json:
            print_job(job, True)
        else:
            render_timeline(job)

    guard(body)


@app.command()
def models(
    probe: Annotated[bool, typer.Option(help="Check whether each model answers.")] = True,
    as_json: JsonOption = False,
) -> None:
    """List the configured models and whether they are reachable."""
    import asyncio

    from rich.table import Table

    from skillwire.cli_jobs import guard
    from skillwire.cli_output import console, styled, terminal_width
    from skillwire.config import load_config
    from skillwire.models.registry import probe_model

    def body() -> None:
        config = load_config()

        async def check() -> list[tuple[str, str, str, bool, str]]:
            rows: list[tuple[str, str, str, bool, str]] = []
            for name in config.names():
                cfg = config.model_named(name)
                assert cfg is not None
                ok, detail = (await probe_model(cfg)) if probe else (True, "not probed")
                rows.append((name, cfg.backend, cfg.model or "-", ok, detail))
            return rows

        rows = asyncio.run(check())
        default, gate = config.runtime.model, config.runtime.gate_model or config.runtime.model
        if as_json:
            typer.echo(
                json.dumps(
                    {
                        "config": config.source or None,
                        "default": default,
                        "gate_model": gate,
                        "models": [
                            {"name": n, "backend": b, "model": m, "reachable": ok, "detail": d}
                            for n, b, m, ok, d in rows
                        ],
                    },
                    indent=2,
                )
            )
            return
        table = Table(title=f"models ({config.source or 'no skillwire.toml: defaults'})")
        for col in ("name", "backend", "model", "role", "reachable", "detail"):
            table.add_column(col, overflow="fold")
        for name, backend, model_name, ok, detail in rows:
            role = ", ".join(r for r, n in (("default", default), ("gate", gate)) if n == name)
            reachable = styled("yes") if ok else styled(("no", "red"))
            table.add_row(name, backend, model_name, role, reachable, detail)
        console(width=terminal_width()).print(table)

    guard(body)


_SERVER_EXTRA = frozenset(
    {"fastapi", "starlette", "uvicorn", "jinja2", "multipart", "python_multipart"}
)
"""The modules of the ``server`` extra (``python-multipart`` is ``multipart``)."""


def _missing_extra_module(exc: BaseException | None) -> str | None:
    """The module of the ``server`` extra whose absence caused ``exc`` (starlette
    raises its own ImportError from the ModuleNotFoundError), or None."""
    while exc is not None:
        if isinstance(exc, ModuleNotFoundError):
            name = exc.name or ""
            if name.partition(".")[0] in _SERVER_EXTRA:
                return name
        exc = exc.__cause__ or exc.__context__
    return None


@app.command()
def call(
    skill: Annotated[Path, typer.Argument(help="The skill file or package folder.")],
    tool: Annotated[str, typer.Argument(help="The tool's name (a package's local name works).")],
    args: Annotated[str, typer.Option("--args", help="The arguments, a JSON object.")] = "{}",
    as_role: Annotated[
        str | None, typer.Option("--as", help="Approve as this role if the call needs it.")
    ] = None,
    policy: Annotated[
        Path | None, typer.Option("--policy", help="The operator's base policy file.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
) -> None:
    """Call one tool through the gate and its executor, outside a job. Exit 1 when
    blocked, 3 when it needs an approval --as does not give, 4 when the tool fails."""
    from skillwire.cli_call import run_call
    from skillwire.cli_jobs import guard

    code = guard(
        lambda: run_call(skill, tool, args, as_role=as_role, policy=policy, as_json=as_json)
    )
    raise typer.Exit(code)


mcp_app = typer.Typer(help="MCP servers: list their tools as skill tool entries.")
app.add_typer(mcp_app, name="mcp")


@mcp_app.command("tools")
def mcp_tools(
    command: Annotated[
        list[str] | None, typer.Argument(help="The stdio server's command, after --.")
    ] = None,
    url: Annotated[
        str | None, typer.Option("--url", help="A streamable HTTP server instead.")
    ] = None,
    server: Annotated[
        str, typer.Option("--server", help="The server name the entries use.")
    ] = "server",
) -> None:
    """Print an MCP server's tools as tools.json entries an author can paste."""
    from skillwire.cli_call import mcp_tools as listing
    from skillwire.cli_jobs import guard

    guard(lambda: listing(command or [], url=url, server=server))


@app.command()
def serve(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(
            help="Skill files or folders (default: [server] skills, ./skills, ./examples)."
        ),
    ] = None,
    host: Annotated[str, typer.Option(help="The address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="The port to listen on.")] = 8080,
    db: DbOption = None,
    dev: Annotated[
        bool, typer.Option("--dev", help="Add one printed key with every role (development only).")
    ] = False,
    config: Annotated[
        Path | None, typer.Option("--config", help="skillwire.toml (default ./skillwire.toml).")
    ] = None,
    queue: Annotated[
        bool,
        typer.Option("--queue", help="Queue starts and resumes for workers (PostgreSQL)."),
    ] = False,
    watch: Annotated[
        bool,
        typer.Option(
            "--watch",
            help="Reload skills when their files change; a broken change keeps the last "
            "good version.",
        ),
    ] = False,
) -> None:
    """Serve the HTTP API (/api, OpenAPI at /api/openapi.json) and the web page (/)."""
    from skillwire.core.errors import SkillError, UsageError

    try:
        from skillwire.server.serve import serve as run_server
    except ImportError as exc:
        missing = _missing_extra_module(exc)
        if missing is None:
            raise
        typer.echo(
            f"error: skillwire serve needs the server extra (no module {missing!r}): "
            "pip install 'skillwire[server]'",
            err=True,
        )
        raise typer.Exit(2) from None
    try:
        run_server(
            list(paths or []),
            host=host,
            port=port,
            db=db,
            dev=dev,
            config_path=config,
            queue=queue,
            watch=watch,
        )
    except (UsageError, SkillError) as exc:  # printed as is: messages hold [[server.keys]]
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None


keys_app = typer.Typer(
    help="API keys for `skillwire serve`.", no_args_is_help=True, rich_markup_mode=None
)
app.add_typer(keys_app, name="keys")


@keys_app.command("hash")
def keys_hash(key: Annotated[str, typer.Argument(help="The key to hash.")]) -> None:
    """Print the SHA-256 of KEY, for key_sha256 in [[server.keys]]."""
    from skillwire.server.auth import hash_key

    typer.echo(hash_key(key))


@keys_app.command("new")
def keys_new(
    principal: Annotated[str, typer.Argument(help="Who the key is for (the owner of their jobs).")],
    role: Annotated[
        list[str] | None,
        typer.Option("--role", help="A role (repeatable): user, admin, or an approver role."),
    ] = None,
) -> None:
    """Make a random key: print it once, and the [[server.keys]] entry to add."""
    from skillwire.server.auth import hash_key, new_key

    key = new_key()
    roles = ", ".join(json.dumps(r) for r in (role or ["user"]))
    typer.echo(f"key (give it to {principal}; it is not stored anywhere): {key}\n")
    typer.echo("add to skillwire.toml:\n")
    typer.echo(
        f"[[server.keys]]\nprincipal = {json.dumps(principal)}\nroles = [{roles}]\n"
        f'key_sha256 = "{hash_key(key)}"'
    )


app.add_typer(sim_app, name="sim")
from skillwire.cli_db import db_app  # noqa: E402 - registered after the app's commands
from skillwire.cli_worker import worker  # noqa: E402

app.add_typer(db_app, name="db")
app.command()(worker)
app.command("new")(new_command)
app.command("edit")(edit_command)
app.command("test")(test_command)
app.command("doctor")(doctor_command)
app.add_typer(signing_app, name="signing-key")
app.command("sign")(sign_command)
app.command("verify")(verify_command)
app.add_typer(skills_app, name="skills")
