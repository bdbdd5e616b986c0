"""A run on disk: ``RUN_DIR/audit.jsonl`` (one record per decision attempt) and
``RUN_DIR/run.json`` (what the run was: config hashes, seed, model, versions); replay
from the recorded raw outputs.

The audit holds no wall-clock time and no order that depends on a dict's or a set's
history: run twice with the same answers, it is the same bytes.
"""

from __future__ import annotations

import hashlib
import json
import platform
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skillwire.core.errors import ModelError, UsageError
from skillwire.sim.definitions import Experiment
from skillwire.sim.loading import load_experiment
from skillwire.sim.proposers import DecisionRequest, Proposer
from skillwire.sim.runner import RunSettings, Simulation, encode_record

__all__ = [
    "AUDIT_FILE",
    "RUN_FILE",
    "RUN_SCHEMA_VERSION",
    "ReplayOutcome",
    "RunResult",
    "iter_audit",
    "read_audit",
    "replay_run",
    "run_experiment",
]

AUDIT_FILE = "audit.jsonl"
RUN_FILE = "run.json"
RUN_SCHEMA_VERSION = 1
"""Version of run.json and of the audit's record shape. A reader refuses a newer one."""


@dataclass(frozen=True)
class RunResult:
    """What a run wrote."""

    out: Path
    records: int
    steps: int
    agents: int
    audit_sha256: str


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("skillwire")
    except PackageNotFoundError:
        return "unknown"


async def run_experiment(
    experiment: Experiment,
    proposer: Proposer,
    settings: RunSettings,
    out: Path,
    *,
    model_spec: str,
    progress: Callable[[int, int], None] | None = None,
) -> RunResult:
    """Run ``experiment`` into ``out`` (created; an existing audit is replaced)."""
    simulation = Simulation(experiment, proposer, settings)
    out.mkdir(parents=True, exist_ok=True)
    simulation.setup()
    initial = simulation.initial
    digest = hashlib.sha256()
    count = 0
    path = out / AUDIT_FILE
    with path.open("w", encoding="utf-8", newline="\n") as audit:
        for step in range(1, settings.steps + 1):
            lines = [encode_record(r) + "\n" for r in await simulation.step(step)]
            text = "".join(lines)
            audit.write(text)
            digest.update(text.encode())
            count += len(lines)
            if progress is not None:
                progress(step, settings.steps)
    tracked = sorted({k for s in experiment.skills.values() for k in s.allowed_state_changes})
    run = {
        "schema_version": RUN_SCHEMA_VERSION,
        "experiment": {
            "name": experiment.name,
            "path": str(experiment.root.resolve()),
            "source": experiment.source,
        },
        "config_hashes": experiment.files,
        "seed": settings.seed,
        "steps": settings.steps,
        "agents": len(simulation.agents),
        "agent_limit": settings.agents,
        "governance": settings.profile,
        "model": model_spec,
        "model_name": proposer.name,
        "concurrency": settings.concurrency,
        "max_retries": experiment.max_retries,
        "versions": {"skillwire": _version(), "python": platform.python_version()},
        "audit": {"file": AUDIT_FILE, "records": count, "sha256": digest.hexdigest()},
        "tracked_state": tracked,
        "initial_state": {aid: {k: s.get(k) for k in tracked} for aid, s in initial.items()},
    }
    (out / RUN_FILE).write_text(json.dumps(run, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return RunResult(out, count, settings.steps, len(simulation.agents), digest.hexdigest())


def read_run(run_dir: Path) -> dict[str, Any]:
    """``run.json``, checked for its schema version."""
    path = run_dir / RUN_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path}: not a run directory ({exc})") from None
    version = data.get("schema_version") if isinstance(data, dict) else None
    if not isinstance(version, int) or version > RUN_SCHEMA_VERSION:
        raise UsageError(
            f"{path}: run format version {version!r} is not one this skillwire reads "
            f"(<= {RUN_SCHEMA_VERSION})"
        )
    return dict(data)


def iter_audit(run_dir: Path) -> Iterator[dict[str, Any]]:
    """The records of ``RUN_DIR/audit.jsonl``, one at a time; a broken line is a
    UsageError with its number."""
    path = run_dir / AUDIT_FILE
    try:
        with path.open(encoding="utf-8") as handle:
            for number, line in enumerate(handle, 1):
                try:
                    record = json.loads(line)
                except ValueError:
                    raise UsageError(f"{path}:{number}: not a JSON record") from None
                if not isinstance(record, dict):
                    raise UsageError(f"{path}:{number}: not a JSON object")
                yield record
    except OSError as exc:
        raise UsageError(f"{path}: cannot read the audit ({exc.strerror or exc})") from None


def read_audit(run_dir: Path) -> list[dict[str, Any]]:
    """Every record of ``RUN_DIR/audit.jsonl``."""
    return list(iter_audit(run_dir))


class _Recorded:
    """The run's answers by (step, agent, attempt); a recorded model failure fails again."""

    def __init__(self, records: Iterable[dict[str, Any]], name: str) -> None:
        self.answers: dict[tuple[int, str, int], str] = {}
        self.failures: dict[tuple[int, str, int], str] = {}
        self._name = name
        prefix = "the model call failed: "
        for r in records:
            key = (r.get("step"), r.get("agent"), r.get("attempt"))
            if not (
                isinstance(key[0], int) and isinstance(key[1], str) and isinstance(key[2], int)
            ):
                continue
            if isinstance(r.get("raw_output"), str):
                self.answers[(key[0], key[1], key[2])] = r["raw_output"]
            else:
                for result in r.get("results") or []:
                    if isinstance(result, dict) and result.get("validator") == "model":
                        self.failures[(key[0], key[1], key[2])] = str(
                            result.get("message", "")
                        ).removeprefix(prefix)

    @property
    def name(self) -> str:
        return f"replay of {self._name}"

    async def propose(self, request: DecisionRequest) -> str | None:
        key = (request.step, request.agent, request.attempt)
        if key in self.failures:
            raise ModelError(self.failures[key])
        return self.answers.get(key)


@dataclass(frozen=True)
class ReplayOutcome:
    """What a replay found."""

    out: Path
    profile: str
    counterfactual: bool
    identical: bool | None
    """Same profile: whether the audit is byte-identical; None for a counterfactual."""
    first_difference: int | None
    result: RunResult


async def replay_run(
    run_dir: Path, profile: str | None = None, *, progress: Callable[[int, int], None] | None = None
) -> ReplayOutcome:
    """Rerun ``run_dir`` from its recorded model outputs into ``RUN_DIR/replay/PROFILE``.

    With the run's own profile the new audit must be byte-identical to the old; with
    another it is a counterfactual (calls the run never made fall back, marked
    ``replay/unrecorded``)."""
    run = read_run(run_dir)
    experiment = load_experiment(Path(run["experiment"]["path"]))
    changed = sorted(
        name
        for name, digest in run.get("config_hashes", {}).items()
        if experiment.files.get(name) != digest
    )
    if changed or set(experiment.files) != set(run.get("config_hashes", {})):
        raise UsageError(
            "the experiment changed since the run (files: "
            f"{', '.join(changed) or 'the set of files'}): a replay would not be faithful"
        )
    chosen = profile or run["governance"]
    settings = RunSettings(
        chosen,
        int(run["seed"]),
        int(run["steps"]),
        run.get("agent_limit"),
        int(run.get("concurrency", 8)),
    )
    proposer = _Recorded(iter_audit(run_dir), str(run.get("model_name", run.get("model", ""))))
    out = run_dir / "replay" / chosen
    result = await run_experiment(
        experiment, proposer, settings, out, model_spec=f"replay:{run_dir}", progress=progress
    )
    if chosen != run["governance"]:
        return ReplayOutcome(out, chosen, True, None, None, result)
    original = (run_dir / AUDIT_FILE).read_bytes()
    replayed = (out / AUDIT_FILE).read_bytes()
    if original == replayed:
        return ReplayOutcome(out, chosen, False, True, None, result)
    old, new = original.splitlines(), replayed.splitlines()
    first = next(
        (i for i, (a, b) in enumerate(zip(old, new, strict=False), 1) if a != b),
        min(len(old), len(new)) + 1,
    )
    return ReplayOutcome(out, chosen, False, False, first, result)
