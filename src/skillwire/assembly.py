"""Where the program is put together: configuration, store, models, runtime.

Only the CLI and the server import this module; the engine sees protocols only.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from skillwire.config import SkillwireConfig, load_config
from skillwire.core.chat import ChatModel
from skillwire.core.errors import ModelConfigError, UsageError
from skillwire.engine import Runtime, SkillResolver
from skillwire.skills.model import Skill
from skillwire.store import SQLiteJobStore
from skillwire.tools import Executors

__all__ = [
    "DEFAULT_DB",
    "ModelChoice",
    "choose_models",
    "default_db",
    "make_executors",
    "make_runtime",
]

DEFAULT_DB = ".skillwire/jobs.db"


def default_db(config: SkillwireConfig | None = None) -> Path:
    """``$SKILLWIRE_DB``, else the configuration's ``runtime.db`` (a relative path is
    relative to the configuration file's folder), else ``.skillwire/jobs.db``."""
    import os

    if os.environ.get("SKILLWIRE_DB"):
        return Path(os.environ["SKILLWIRE_DB"])
    if config is not None and config.runtime.db:
        db = Path(config.runtime.db).expanduser()
        if not db.is_absolute() and config.source:
            db = Path(config.source).parent / db
        return db
    return Path(DEFAULT_DB)


def make_executors(config: SkillwireConfig | None = None) -> Executors:
    """The tool executors, with the operator's ``[tools]`` settings."""
    tools = (config or SkillwireConfig()).tools
    return Executors(python_modules=tools.python_modules, tool_timeout=tools.timeout)


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
    db: Path,
    choice: ModelChoice,
    config: SkillwireConfig | None = None,
    *,
    skills: SkillResolver | None = None,
) -> Runtime:
    """A runtime on the SQLite store at ``db`` (created if needed), its tools run as
    ``config`` says; ``skills`` finds a stored job's skill (default: its source)."""
    db.parent.mkdir(parents=True, exist_ok=True)
    return Runtime(
        SQLiteJobStore(db),
        choice.model,
        gate_model=choice.gate_model,
        executors=make_executors(config),
        skills=skills,
    )
