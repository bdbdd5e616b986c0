"""Where the program is put together: configuration, store, models, runtime.

Only the CLI and the server import this module; the engine sees protocols only.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skillwire.config import SkillwireConfig, load_config
from skillwire.core.chat import ChatModel
from skillwire.core.errors import CredentialError, ModelConfigError, UsageError
from skillwire.core.issues import SkillIssue
from skillwire.core.store import JobStore
from skillwire.engine import Runtime, SkillResolver
from skillwire.skills import BasePolicy, LoadResult, load_base_policy
from skillwire.skills.model import Skill
from skillwire.store import SQLiteJobStore
from skillwire.store.postgres import PostgresJobStore, is_postgres_url, safe_url
from skillwire.store.sqlite import Durability
from skillwire.tools import Credentials, Executors, HttpExecutor, ShellExecutor
from skillwire.tools.credentials import load_secrets
from skillwire.tools.mcp import McpExecutor, McpServer
from skillwire.tools.report import tool_findings
from skillwire.tools.shell import bwrap_path

__all__ = [
    "DEFAULT_DB",
    "Database",
    "ModelChoice",
    "add_tool_findings",
    "base_policy",
    "choose_models",
    "credentials",
    "db_exists",
    "db_label",
    "default_db",
    "make_executors",
    "make_runtime",
    "mcp_survey",
    "open_store",
    "refuse_without_credentials",
    "start_tracing",
]

DEFAULT_DB = ".skillwire/jobs.db"

Database = Path | str
"""Where jobs are kept: a SQLite file, or a ``postgresql://`` URL (a ``str``)."""


def default_db(config: SkillwireConfig | None = None) -> Database:
    """``$SKILLWIRE_DB``, else the configuration's ``runtime.db`` (a relative path is
    relative to the configuration file's folder), else ``.skillwire/jobs.db``. A
    ``postgresql://`` URL in either is returned as it is (a ``str``)."""
    import os

    if os.environ.get("SKILLWIRE_DB"):
        env = os.environ["SKILLWIRE_DB"]
        return env if is_postgres_url(env) else Path(env)
    if config is not None and config.runtime.db:
        if is_postgres_url(config.runtime.db):
            return config.runtime.db
        db = Path(config.runtime.db).expanduser()
        if not db.is_absolute() and config.source:
            db = Path(config.source).parent / db
        return db
    return Path(DEFAULT_DB)


def base_policy(config: SkillwireConfig | None = None, path: Path | None = None) -> BasePolicy:
    """The operator's base policy: ``path`` (``--policy``), else the configuration's
    ``runtime.base_policy`` (relative to the configuration file's folder), else
    skillwire's default (no shell prefix, no root). Raises SkillError for a bad file."""
    if path is None and config is not None and config.runtime.base_policy:
        path = Path(config.runtime.base_policy).expanduser()
        if not path.is_absolute() and config.source:
            path = Path(config.source).parent / path
    if path is None:
        return BasePolicy()
    if not path.is_file():
        raise UsageError(f"no base policy file {path}")
    return load_base_policy(path)


def credentials(config: SkillwireConfig | None = None) -> Credentials:
    """Package credentials from the configured secrets file and the environment
    variables ``[credentials] env`` lists (never a model's API key)."""
    config = config or SkillwireConfig()
    reserved = {"OPENAI_API_KEY", "ANTHROPIC_API_KEY"}
    reserved |= {m.api_key_env for m in config.models.values() if m.api_key_env}
    env_names = config.credentials.env
    secrets_file = config.credentials.secrets_file
    if not secrets_file:
        return Credentials(env_names=env_names, reserved=reserved)
    path = Path(secrets_file).expanduser()
    if not path.is_absolute() and config.source:
        path = Path(config.source).parent / path
    try:
        secrets = load_secrets(path)
    except CredentialError as exc:
        raise UsageError(str(exc)) from None
    return Credentials(secrets=secrets, env_names=env_names, reserved=reserved)


def refuse_without_credentials(skill: Skill, creds: Credentials) -> None:
    """UsageError with the package's message when a required credential of ``skill`` is
    unusable and it says ``fail_fast``: its job does not start."""
    refusal = creds.resolve(skill).refusal()
    if refusal is not None:
        raise UsageError(f"{skill.id}: {refusal}")


def add_tool_findings(result: LoadResult, config: SkillwireConfig | None) -> None:
    """For ``skillwire check``: each loaded skill's tools (executor, sandbox, the
    credentials they need and whether they are set, the prefixes and roots the base
    policy must allow), each package's credentials that are unset or invalid and the
    tools that become unavailable, and what the MCP servers its tools name list
    (:func:`mcp_survey`), at the lines declaring them."""
    config = config or SkillwireConfig()
    creds = credentials(config)
    base = base_policy(config)
    loaded = [result.skills.get(r.skill_id or "") for r in result.report.skills if r.loaded]
    listed = mcp_survey([s for s in loaded if s is not None], config, base, creds)
    if config.tools.sandbox == "off":
        sandbox = "off"
    else:
        sandbox = "bwrap" if bwrap_path() is not None else "missing"
    for rep in result.report.skills:
        skill = result.skills.get(rep.skill_id or "")
        if skill is None or not rep.loaded:
            continue
        resolved = creds.resolve(skill) if skill.credentials is not None else None
        found = [
            *(resolved.issues() if resolved else []),
            *tool_findings(
                skill,
                base,
                resolved,
                sandbox,
                http_hosts=config.tools.http_allowed_hosts,
                mcp_servers=list(config.tools.mcp_servers),
            ),
            *listed.get(skill.id, []),
        ]
        for issue in found:
            rep.add(issue.location.file, [issue])


def mcp_survey(
    skills: Sequence[Skill], config: SkillwireConfig, base: BasePolicy, creds: Credentials
) -> dict[str, list[SkillIssue]]:
    """Start the MCP servers the operator configured that ``skills``' tools name (none
    other: a package names a server, never a command), list their tools, stop them; the
    findings per skill id (:mod:`skillwire.tools.mcp_report`)."""
    from skillwire.tools.mcp_report import mcp_findings, uses_configured_server

    executors = make_executors(config, base, creds)
    chosen = [s for s in skills if uses_configured_server(s, executors.mcp)]
    if not chosen:
        return {}
    try:
        import mcp  # noqa: F401
    except ImportError:
        return {}  # nothing can list them (their calls say the SDK is missing)

    async def survey() -> dict[str, list[SkillIssue]]:
        try:
            out: dict[str, list[SkillIssue]] = {}
            for skill in chosen:
                resolved = creds.resolve(skill) if skill.credentials is not None else None
                await executors.prepare(skill.tools, skill.root)
                out[skill.id] = mcp_findings(skill, executors.mcp, resolved)
            return out
        finally:
            await executors.aclose()

    return asyncio.run(survey())


def _config_dir(config: SkillwireConfig | None) -> str | None:
    """The folder of the configuration file (where a stdio MCP server starts)."""
    if config is None or not config.source:
        return None
    return str(Path(config.source).resolve().parent)


def base_guard(base: BasePolicy) -> Callable[[list[str]], list[str]]:
    """The shell executor's second wall: an argv checked against the operator's base
    policy alone (the gate checked it against the skill's merge, never wider)."""
    from skillwire.core.patterns import compile_pattern
    from skillwire.policy import AccessPolicy
    from skillwire.policy.shell import argv_problems

    access = AccessPolicy(
        shell_allowed=tuple(base.shell.allowedPrefixes),
        shell_denied=tuple(base.shell.denyPrefixes),
        shell_deny_operators=tuple(base.shell.denyOperators),
        shell_deny_patterns=tuple(compile_pattern(p) for p in base.shell.denyPatterns),
        read_roots=tuple(base.filesystem.allowedReadRoots),
        write_roots=tuple(base.filesystem.allowedWriteRoots),
    )
    return lambda argv: list(argv_problems(access, argv))


def open_store(db: Database, durability: Durability = "default") -> JobStore:
    """The store of ``db``: PostgreSQL for a ``postgresql://`` URL (migrated; every
    commit of it is durable, whatever ``durability`` says), else the SQLite file (its
    folder created if needed) at the ``durability`` level (docs/engine.md)."""
    if isinstance(db, str) and is_postgres_url(db):
        return PostgresJobStore(db)
    path = _file(db)
    path.parent.mkdir(parents=True, exist_ok=True)
    return SQLiteJobStore(path, durability=durability)


def db_exists(db: Database) -> bool:
    """Whether ``db`` may hold jobs already: a URL always, a file if it exists."""
    return (isinstance(db, str) and is_postgres_url(db)) or _file(db).exists()


def _file(db: Database) -> Path:
    """``db`` as a SQLite file; :class:`UsageError` for a URL that became a path (a
    ``--db`` option parses as a path, which folds the URL's ``//``)."""
    if str(db).startswith(("postgresql:", "postgres:")):
        raise UsageError(
            "a PostgreSQL URL is not a SQLite file: give it in $SKILLWIRE_DB or runtime.db "
            "of skillwire.toml (--db takes a file)"
        )
    return Path(db)


def db_label(db: Database) -> str:
    """``db`` for messages: a URL without its password, or the file's path."""
    return safe_url(db) if isinstance(db, str) and is_postgres_url(db) else str(db)


def make_executors(
    config: SkillwireConfig | None = None,
    base: BasePolicy | None = None,
    creds: Credentials | None = None,
) -> Executors:
    """The tool executors, with the operator's ``[tools]`` settings; shell tools'
    sandbox binds the base policy's roots."""
    tools = (config or SkillwireConfig()).tools
    base = base or BasePolicy()
    shell = ShellExecutor(
        shell_path=tools.shell_path,
        sandbox=tools.sandbox,
        read_roots=base.filesystem.allowedReadRoots,
        write_roots=base.filesystem.allowedWriteRoots,
        guard=base_guard(base),
    )
    return Executors(
        python_modules=tools.python_modules,
        tool_timeout=tools.timeout,
        shell=shell,
        http=HttpExecutor(allowed_hosts=tools.http_allowed_hosts),
        mcp=McpExecutor(
            [
                McpServer(name, tuple(s.command or ()), s.url, dict(s.env), cwd=_config_dir(config))
                for name, s in tools.mcp_servers.items()
            ],
            timeout=tools.timeout,
        ),
        credentials=creds or credentials(config),
    )


@dataclass
class ModelChoice:
    """The models a job runs on, and what the caller should be told about the choice."""

    model: ChatModel
    gate_model: ChatModel
    notes: list[str]


def choose_models(
    spec: str | None,
    *,
    skill: Skill | None = None,
    config: SkillwireConfig | None = None,
    calls_made: int = 0,
) -> ModelChoice:
    """The planner's and the gate's models.

    ``spec`` (``--model``) wins: ``scripted:FILE`` replays a script (skipping the
    ``calls_made`` replies a job already consumed) or a configured name. Otherwise the
    skill's ``engine.model`` if it is configured, else the runtime's default; the gate
    uses ``engine.finalization_gate.model``, else ``runtime.gate_model``, else the same.
    """
    from skillwire.models.registry import build_model

    config = config or load_config()
    notes: list[str] = []
    if spec and spec.startswith("scripted:"):
        from skillwire.testing import ScriptedModel

        path = Path(spec.removeprefix("scripted:"))
        if not path.is_file():
            raise UsageError(f"no script file {path}")
        scripted = ScriptedModel.from_file(path)
        scripted.skip(calls_made)
        return ModelChoice(scripted, scripted, notes)
    engine = skill.engine_config() if skill is not None else None
    name = spec or config.runtime.model
    if spec is None and engine is not None and engine.model:
        if config.model_named(engine.model) is not None:
            name = engine.model
        else:
            notes.append(
                f"the skill asks for model '{engine.model}', which is not configured: "
                f"using '{name}'"
            )
    gate_name = config.runtime.gate_model or name
    if engine is not None and engine.finalization_gate.model:
        if config.model_named(engine.finalization_gate.model) is not None:
            gate_name = engine.finalization_gate.model
        else:
            notes.append(
                f"the skill's gate model '{engine.finalization_gate.model}' is not "
                f"configured: using '{gate_name}'"
            )
    try:
        models = {}
        for wanted in {name, gate_name}:
            model_config = config.model_named(wanted)
            if model_config is None:
                raise UsageError(
                    f"model {wanted!r} is not configured (known: {', '.join(config.names())})"
                )
            models[wanted] = build_model(model_config)
    except ModelConfigError as exc:
        raise UsageError(str(exc)) from None
    return ModelChoice(models[name], models[gate_name], notes)


def make_runtime(
    db: Database,
    choice: ModelChoice,
    config: SkillwireConfig | None = None,
    *,
    skills: SkillResolver | None = None,
) -> Runtime:
    """A runtime on the store of ``db`` (:func:`open_store`), its tools run as
    ``config`` says; ``skills`` finds a stored job's skill (default: its source)."""
    from skillwire.models.offline import OfflineModel  # its classifier: intents.thresholds

    start_tracing(config)
    base = base_policy(config)
    durability = config.runtime.durability if config is not None else "default"
    return Runtime(
        open_store(db, durability),
        choice.model,
        classifier=OfflineModel(),
        gate_model=choice.gate_model,
        executors=make_executors(config, base),
        base_policy=base,
        skills=skills,
    )


def start_tracing(config: SkillwireConfig | None) -> bool:
    """Turn the engine's spans on when ``config`` says so (``[tracing]``, or the
    ``OTEL_*`` variables it read); whether they are on.

    A tracer provider of the SDK set up already (``opentelemetry-instrument``, a
    program embedding skillwire) is used as it is; otherwise one is made with the
    configured exporter. Raises UsageError when the SDK or the OTLP exporter asked
    for is not installed."""
    from skillwire.core import tracing

    if config is None or not config.tracing.enabled:
        return tracing.enabled()
    if tracing.enabled():
        return True
    try:
        from opentelemetry import trace
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter
    except ImportError:
        raise UsageError(
            "tracing is enabled but the OpenTelemetry SDK is not installed: "
            "pip install 'skillwire[otel]'"
        ) from None
    current = trace.get_tracer_provider()
    if isinstance(current, TracerProvider):
        tracing.enable(current)
        return True
    named = {"service.name": config.tracing.service_name}
    if os.environ.get("OTEL_SERVICE_NAME"):
        named = {}  # the SDK reads it
    provider = TracerProvider(resource=Resource.create(named))
    exporter = ConsoleSpanExporter() if config.tracing.exporter == "console" else _otlp()
    provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    tracing.enable(provider)
    return True


def _otlp() -> Any:
    """The OTLP span exporter (HTTP/protobuf; gRPC when only that one is installed)."""
    import importlib

    for transport in ("http", "grpc"):
        try:
            module = importlib.import_module(
                f"opentelemetry.exporter.otlp.proto.{transport}.trace_exporter"
            )
        except ImportError:
            continue
        return module.OTLPSpanExporter()
    raise UsageError(
        '[tracing] exporter = "otlp" needs the OTLP exporter, which is not installed: '
        'pip install opentelemetry-exporter-otlp-proto-http (or use exporter = "console")'
    )
