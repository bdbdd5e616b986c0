"""The world: the experiment's Python hooks, the agents' state and seeded randomness.

The hooks module (``world.hooks`` in experiment.yaml) is a Python file of the
experiment, run like a python tool's module. Its functions, all optional but the
skills' own:

- ``setup(world, agents)``: once, before step 1 (add state keys, world state);
- ``begin_step(world, agents)``: the world's events of the step (each agent's
  ``observation``), before anyone decides;
- ``prompt_fields(world, agent) -> dict[str, str]``: the prompt's domain placeholders;
- ``utilities(world, agent) -> dict[skill, float]`` and
  ``appraisals(world, agent) -> dict[construct, label]``: for the offline proposer;
- one function per skill (``implementation_mapping: sim.NAME``): ``NAME(state,
  observation)`` changes the agent's ``state`` (a copy: what it changes is compared with
  the skill's ``allowed_state_changes`` and kept only when allowed);
- ``end_step(world, agents, executed)``: the world's update after the decisions
  (``executed``: agent id -> skill or None).

Randomness comes only from :meth:`World.rng`, seeded by the experiment's seed, the
step and a key: the same run draws the same numbers, whatever the order of the calls.
"""

from __future__ import annotations

import hashlib
import importlib.util
import random
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from skillwire.core.errors import UsageError
from skillwire.sim.definitions import Experiment

__all__ = ["Agent", "Hooks", "World", "derive_seed", "load_hooks", "plain_copy"]


def derive_seed(seed: int, *key: object) -> int:
    """A 64-bit seed from ``seed`` and ``key`` (stable across runs and platforms)."""
    text = "\x1f".join([str(seed), *(str(k) for k in key)])
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


def plain_copy(value: Any) -> Any:
    """A copy of plain JSON data (dicts and lists copied, scalars shared)."""
    if isinstance(value, dict):
        return {k: plain_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain_copy(v) for v in value]
    return value


@dataclass
class Agent:
    """One agent: id, type, state (plain JSON), this step's observation."""

    id: str
    agent_type: str
    state: dict[str, Any]
    observation: dict[str, Any] = field(default_factory=dict)
    active: bool = True


@dataclass
class World:
    """What the hooks share: parameters, tables, the world's own state, the step."""

    seed: int
    params: dict[str, Any]
    tables: dict[str, list[dict[str, Any]]]
    state: dict[str, Any] = field(default_factory=dict)
    step: int = 0
    steps: int = 0

    def rng(self, *key: object) -> random.Random:
        """A generator seeded by (seed, step, *key): ``world.rng("flood", agent.id)``."""
        return random.Random(derive_seed(self.seed, self.step, *key))


Hook = Callable[..., Any]


@dataclass(frozen=True)
class Hooks:
    """The hooks module's functions."""

    module: ModuleType
    skills: dict[str, Hook]

    def get(self, name: str) -> Hook | None:
        """The optional hook ``name``, or None."""
        found = getattr(self.module, name, None)
        return found if callable(found) else None


def load_hooks(experiment: Experiment) -> Hooks:
    """Import the experiment's hooks module and find every skill's function."""
    path = experiment.hooks_file
    if path is None:
        raise UsageError(
            f"{experiment.root}: the experiment has no world hooks: write an experiment.yaml "
            "naming them (world.hooks), see docs/sim.md"
        )
    # One module per file and content: an edited hooks file is imported afresh.
    digest = hashlib.sha256(str(path).encode() + path.read_bytes()).hexdigest()[:16]
    name = f"skillwire_sim_world_{digest}"
    module = sys.modules.get(name)
    if module is None:
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise UsageError(f"{path}: cannot import the world hooks")
        module = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(module)
        except Exception as exc:
            raise UsageError(
                f"{path}: importing the world hooks failed: {type(exc).__name__}: {exc}"
            ) from None
        sys.modules[name] = module
    skills: dict[str, Hook] = {}
    missing: list[str] = []
    for skill in experiment.skills.values():
        found = getattr(module, skill.hook, None)
        if callable(found):
            skills[skill.id] = found
        else:
            missing.append(f"{skill.hook} (for {skill.id})")
    if missing:
        raise UsageError(f"{path}: the world hooks define no function {', '.join(missing)}")
    return Hooks(module, skills)


def call_mapping(hook: Hook | None, *args: Any) -> Mapping[str, Any]:
    """A hook's mapping result ({} without the hook)."""
    if hook is None:
        return {}
    found = hook(*args)
    if not isinstance(found, Mapping):
        raise UsageError(f"the world hook {getattr(hook, '__name__', hook)} must return a mapping")
    return found
