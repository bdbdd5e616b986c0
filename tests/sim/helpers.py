"""Helpers for the simulation tests: the flood example, copies of it to break, and
proposers that answer what a test wants (and remember what they were asked)."""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from skillwire.sim import Experiment, load_experiment
from skillwire.sim.proposers import DecisionRequest
from skillwire.sim.runner import RunSettings, Simulation, encode_record

FLOOD = Path(__file__).resolve().parents[2] / "examples" / "flood_abm"
START, END = "<<<DECISION_START>>>", "<<<DECISION_END>>>"


def answer(decision: Any, threat: str = "M", coping: str = "M", **extra: Any) -> str:
    """A well-formed raw output in the flood response format."""
    body = {
        "reasoning": "test",
        "threat_appraisal": {"label": threat, "reason": "t"},
        "coping_appraisal": {"label": coping, "reason": "c"},
        "decision": decision,
        **extra,
    }
    return f"{START}\n{json.dumps(body)}\n{END}"


class FunctionProposer:
    """Answers with ``respond(request)``; keeps every request."""

    def __init__(self, respond: Callable[[DecisionRequest], str | None]) -> None:
        self.respond = respond
        self.requests: list[DecisionRequest] = []

    @property
    def name(self) -> str:
        return "function"

    async def propose(self, request: DecisionRequest) -> str | None:
        self.requests.append(request)
        return self.respond(request)


def copy_example(folder: Path) -> Path:
    """A writable copy of the flood example in ``folder``."""
    target = folder / "flood"
    shutil.copytree(FLOOD, target, ignore=shutil.ignore_patterns("__pycache__"))
    return target


def edit(path: Path, old: str, new: str) -> None:
    """Replace ``old`` (which must be there) by ``new`` in ``path``."""
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new), encoding="utf-8")


def simulate(
    experiment: Experiment | Path,
    proposer: Any,
    *,
    profile: str = "strict",
    steps: int = 3,
    agents: int | None = 5,
    seed: int = 42,
    concurrency: int = 8,
) -> tuple[list[dict[str, Any]], Simulation]:
    """Run and return every audit record (as the audit file would hold them)."""
    exp = experiment if isinstance(experiment, Experiment) else load_experiment(experiment)
    sim = Simulation(exp, proposer, RunSettings(profile, seed, steps, agents, concurrency))
    sim.setup()

    async def go() -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for step in range(1, steps + 1):
            out.extend(json.loads(encode_record(r)) for r in await sim.step(step))
        return out

    return asyncio.run(go()), sim


def results_of(record: dict[str, Any], ok: bool | None = None) -> list[tuple[str, str]]:
    """``(validator, rule)`` of a record's results (only failed ones with ok=False)."""
    return [(r["validator"], r["rule"]) for r in record["results"] if ok is None or r["ok"] is ok]


def cycle(outputs: Sequence[str]) -> Callable[[DecisionRequest], str]:
    """A respond function that returns ``outputs`` in turn, forever."""
    state = {"i": 0}

    def respond(_: DecisionRequest) -> str:
        out = outputs[state["i"] % len(outputs)]
        state["i"] += 1
        return out

    return respond
