"""Loading an experiment: ``experiment.yaml``, or the reference framework's files as
they are (a folder with ``agent_types.yaml`` and ``skill_registry.yaml``).

:func:`read_experiment` never raises for a bad experiment: it returns what it could
load and every finding, each with file and line. :func:`load_experiment` raises
:class:`~skillwire.core.errors.ExperimentError` when there is any error.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from skillwire.conditions import compile_condition
from skillwire.core.errors import ConditionSyntaxError, ExperimentError
from skillwire.core.issues import Severity, SkillIssue
from skillwire.core.location import SourceLocation
from skillwire.sim.agent_types_reader import read_agent_types
from skillwire.sim.definitions import AgentRow, Experiment
from skillwire.sim.experiment_file import ExperimentFile
from skillwire.sim.registry_reader import read_registry
from skillwire.sim.sources import Document, read_csv, read_yaml

__all__ = ["ExperimentCheck", "is_experiment", "load_experiment", "read_experiment"]

EXPERIMENT_FILE = "experiment.yaml"
REFERENCE_FILES = ("agent_types.yaml", "skill_registry.yaml")
_REFERENCE_AGENTS = "agent_initial_profiles.csv"
_NO_HOOKS = "-"


@dataclass
class ExperimentCheck:
    """What loading found: the experiment (None when an error stopped it) and findings."""

    path: Path
    experiment: Experiment | None
    issues: list[SkillIssue] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """No error among the findings."""
        return not any(i.severity is Severity.ERROR for i in self.issues)


def is_experiment(path: Path) -> bool:
    """Whether ``path`` is an experiment: an ``experiment.yaml``, a folder holding one, or
    a folder (or file) of the reference framework's ``agent_types.yaml`` and registry."""
    if path.is_file():
        return path.name in (EXPERIMENT_FILE, *REFERENCE_FILES)
    if path.is_dir():
        return (path / EXPERIMENT_FILE).is_file() or all(
            (path / n).is_file() for n in REFERENCE_FILES
        )
    return False


def load_experiment(path: Path | str) -> Experiment:
    """Load the experiment at ``path``; raise ExperimentError with every error."""
    found = read_experiment(Path(path))
    if not found.ok or found.experiment is None:
        raise ExperimentError([i for i in found.issues if i.severity is Severity.ERROR])
    return found.experiment


def read_experiment(path: Path) -> ExperimentCheck:
    """Load the experiment at ``path`` with all its findings; never raises for its content."""
    check = ExperimentCheck(path, None)
    if path.is_file():
        root = path.parent
        main = path if path.name == EXPERIMENT_FILE else None
    elif path.is_dir():
        root = path
        main = path / EXPERIMENT_FILE if (path / EXPERIMENT_FILE).is_file() else None
    else:
        check.issues.append(
            SkillIssue(Severity.ERROR, "no such file or folder", SourceLocation(str(path)))
        )
        return check
    doc: Document | None = None
    if main is not None:
        spec, doc = _experiment_file(main, check.issues)
    else:
        spec = _reference_spec(root)
    if spec is None:
        return check
    hashes: dict[str, str] = {}
    if main is not None:
        hashes[main.name] = _sha(main)
    check.experiment = _assemble(
        root, spec, "experiment.yaml" if main else "reference", check.issues, hashes, doc
    )
    return check


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _experiment_file(
    main: Path, issues: list[SkillIssue]
) -> tuple[ExperimentFile | None, Document | None]:
    doc = read_yaml(main, str(main))
    if isinstance(doc, SkillIssue):
        issues.append(doc)
        return None, None
    if not isinstance(doc.data, dict):
        issues.append(doc.issue((), "experiment.yaml must be a mapping"))
        return None, doc
    try:
        return ExperimentFile.model_validate(doc.data), doc
    except ValidationError as exc:
        for err in exc.errors():
            loc = tuple(err["loc"])
            message = err["msg"] if err["type"] != "extra_forbidden" else f"unknown key '{loc[-1]}'"
            issues.append(doc.issue(loc, message))
        return None, doc


def _reference_spec(root: Path) -> ExperimentFile:
    """The reference framework's folder, read with the defaults its files imply (no world
    hooks: ``check`` loads it, ``sim run`` needs an experiment.yaml)."""
    agents: dict[str, Any] = {"file": _REFERENCE_AGENTS, "list_columns": {"memory": " | "}}
    return ExperimentFile.model_validate(
        {"name": root.name, "agents": agents, "world": {"hooks": _NO_HOOKS}}
    )


def _inside(root: Path, name: str) -> Path | None:
    path = (root / name).resolve()
    return path if path.is_relative_to(root.resolve()) else None


def _assemble(
    root: Path,
    spec: ExperimentFile,
    source: str,
    issues: list[SkillIssue],
    hashes: dict[str, str],
    main_doc: Document | None = None,
) -> Experiment | None:
    def where(path: tuple[str, ...], fallback: Path) -> SourceLocation:
        return main_doc.locate(path) if main_doc is not None else SourceLocation(str(fallback))

    agents, header = _agents(root, spec, issues, hashes)
    state_keys = tuple(k for k in header if k != spec.agents.id_column)
    # Conditions read the agents' plain values (not lists such as memory) and agent_type.
    first = agents[0].state if agents else {}
    scalars = {k for k in state_keys if isinstance(first.get(k), bool | int | float | str)}
    known = scalars | {"agent_type"} if agents else None
    docs: dict[str, Document] = {}
    for name in (spec.registry, spec.agent_types):
        path = _inside(root, name)
        if path is None or not path.is_file():
            issues.append(
                SkillIssue(
                    Severity.ERROR,
                    "file not found (or outside the experiment's folder)",
                    SourceLocation(str(root / name)),
                )
            )
            continue
        doc = read_yaml(path, str(root / name))
        if isinstance(doc, SkillIssue):
            issues.append(doc)
            continue
        docs[name] = doc
        hashes[name] = _sha(path)
    if len(docs) < 2:
        return None
    skills, default = read_registry(docs[spec.registry], known, issues)
    prompts: dict[str, str] = {}
    settings, types = read_agent_types(docs[spec.agent_types], root, known, issues, prompts)
    for name, text in prompts.items():
        hashes[name] = hashlib.sha256(text.encode()).hexdigest()
    types_doc = docs[spec.agent_types]
    for tname, tspec in types.items():
        for rule_set in tspec.governance.values():
            for rule in rule_set:
                for skill in sorted(rule.blocked_skills - set(skills)):
                    issues.append(
                        SkillIssue(
                            Severity.ERROR,
                            f"rule {rule.id} blocks '{skill}', "
                            "which is not a skill of the registry",
                            rule.location,
                        )
                    )
        for action in tspec.actions:
            if action.id not in skills:
                issues.append(
                    types_doc.issue(
                        (tname, "actions"), f"action '{action.id}' is not a skill of the registry"
                    )
                )
        for _flag, mapping in tspec.skill_maps:
            for number, skill in mapping:
                if skill not in skills:
                    issues.append(
                        types_doc.issue(
                            (tname, "parsing"),
                            f"skill map {number} -> '{skill}' is not a skill of the registry",
                        )
                    )
        if tspec.default_skill and tspec.default_skill not in skills:
            issues.append(
                types_doc.issue(
                    (tname, "parsing", "default_skill"),
                    f"default_skill '{tspec.default_skill}' is not a skill",
                )
            )
        if spec.governance not in tspec.governance and source == "experiment.yaml":
            issues.append(
                types_doc.issue(
                    (tname, "governance"),
                    f"agent type '{tname}' has no governance profile '{spec.governance}'",
                )
            )
    if source == "reference" and len(types) == 1:
        only = next(iter(types))
        agents = [AgentRow(a.id, a.agent_type or only, a.state) for a in agents]
    for row in agents:
        if row.agent_type not in types:
            issues.append(
                SkillIssue(
                    Severity.ERROR,
                    f"agent {row.id}: unknown agent type '{row.agent_type}'",
                    SourceLocation(str(root / spec.agents.file)),
                )
            )
            break
    tables: dict[str, list[dict[str, Any]]] = {}
    for tname, file in sorted(spec.world.tables.items()):
        path = _inside(root, file)
        if path is None:
            issues.append(
                SkillIssue(
                    Severity.ERROR,
                    "outside the experiment's folder",
                    SourceLocation(str(root / file)),
                )
            )
            continue
        read = read_csv(path, str(root / file))
        if isinstance(read, SkillIssue):
            issues.append(read)
            continue
        tables[tname] = read[1]
        hashes[file] = _sha(path)
    hooks_file: Path | None = None
    if source == "experiment.yaml":
        hooks_file = _inside(root, spec.world.hooks)
        if hooks_file is None or not hooks_file.is_file() or hooks_file.suffix != ".py":
            issues.append(
                SkillIssue(
                    Severity.ERROR,
                    "world.hooks must be a .py file in the experiment's folder",
                    where(("world", "hooks"), root / spec.world.hooks),
                )
            )
            hooks_file = None
        else:
            hashes[spec.world.hooks] = _sha(hooks_file)
    else:
        for csv_path in sorted(root.glob("*.csv")):
            if csv_path.name == spec.agents.file:
                continue
            read = read_csv(csv_path, str(csv_path))
            if isinstance(read, SkillIssue):
                issues.append(read)
            else:
                tables[csv_path.stem] = read[1]
                hashes[csv_path.name] = _sha(csv_path)
    inactive = None
    if spec.agents.inactive_when:
        try:
            inactive = compile_condition(spec.agents.inactive_when, known_names=known)
        except ConditionSyntaxError as exc:
            issues.append(
                SkillIssue(
                    Severity.ERROR,
                    f"agents.inactive_when does not parse: {exc}",
                    where(("agents", "inactive_when"), root / EXPERIMENT_FILE),
                )
            )
    max_retries = spec.max_retries if spec.max_retries is not None else settings.max_retries
    return Experiment(
        root=root,
        name=spec.name,
        source=source,
        skills=skills,
        default_skill=default,
        agent_types=types,
        response_fields=settings.fields,
        delimiters=settings.delimiters,
        rating_scale=settings.rating_scale,
        agents=tuple(agents),
        state_keys=state_keys,
        tables=tables,
        hooks_file=hooks_file,
        params=dict(spec.world.params),
        steps=spec.steps,
        seed=spec.seed,
        governance=spec.governance,
        model=spec.model,
        concurrency=spec.concurrency,
        max_retries=max_retries,
        max_reports_per_retry=settings.max_reports_per_retry,
        memory_window=settings.memory_window,
        temperature=spec.offline.temperature,
        inactive_when=inactive,
        files=dict(sorted(hashes.items())),
        issues=[i for i in issues if i.severity is not Severity.ERROR],
    )


def _agents(
    root: Path, spec: ExperimentFile, issues: list[SkillIssue], hashes: dict[str, str]
) -> tuple[list[AgentRow], list[str]]:
    file = spec.agents.file
    path = _inside(root, file)
    where = SourceLocation(str(root / file))
    if path is None or not path.is_file():
        issues.append(
            SkillIssue(
                Severity.ERROR, "agents file not found (or outside the experiment's folder)", where
            )
        )
        return [], []
    read = read_csv(path, str(root / file), list_columns=spec.agents.list_columns)
    if isinstance(read, SkillIssue):
        issues.append(read)
        return [], []
    header, rows = read
    hashes[file] = _sha(path)
    id_col = spec.agents.id_column
    if id_col not in header:
        issues.append(
            SkillIssue(
                Severity.ERROR,
                f"the agents file has no '{id_col}' column",
                SourceLocation(where.file, 1),
            )
        )
        return [], header
    for column in spec.agents.list_columns:
        if column not in header:
            issues.append(
                SkillIssue(
                    Severity.ERROR,
                    f"list column '{column}' is not in the agents file",
                    SourceLocation(where.file, 1),
                )
            )
    type_col = spec.agents.type_column
    if type_col is not None and type_col not in header:
        issues.append(
            SkillIssue(
                Severity.ERROR,
                f"the agents file has no '{type_col}' column",
                SourceLocation(where.file, 1),
            )
        )
        return [], header
    agents: list[AgentRow] = []
    seen: set[str] = set()
    for number, row in enumerate(rows, 2):
        agent_id = str(row[id_col])
        if not agent_id or agent_id in seen:
            issues.append(
                SkillIssue(
                    Severity.ERROR,
                    f"agent id '{agent_id}' is empty or given twice",
                    SourceLocation(where.file, number),
                )
            )
            continue
        seen.add(agent_id)
        agent_type = str(row[type_col]) if type_col else (spec.agents.agent_type or "")
        state = {k: v for k, v in row.items() if k not in (id_col, type_col)}
        agents.append(AgentRow(agent_id, agent_type, state))
    if not agents:
        issues.append(SkillIssue(Severity.ERROR, "the agents file has no agents", where))
    if not spec.agents.agent_type and not type_col and spec.world.hooks != _NO_HOOKS:
        issues.append(
            SkillIssue(Severity.ERROR, "give agents.agent_type or agents.type_column", where)
        )
    return agents, header
