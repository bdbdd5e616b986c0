"""Who answers an agent's prompt: the seeded offline proposer, a scripted list of raw
outputs or any :class:`~skillwire.core.chat.ChatModel` (a replay's recorded outputs are
answered in :mod:`skillwire.sim.runs`).

Every proposer returns raw text (the adapter parses it), or None when it has no answer
(a replay, :mod:`skillwire.sim.runs`, asked for a call the run never made).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from skillwire.core.chat import ChatMessage, ChatModel, ChatRequest
from skillwire.core.errors import UsageError
from skillwire.sim.definitions import AgentTypeSpec, ResponseField
from skillwire.sim.world import derive_seed

__all__ = [
    "ChatProposer",
    "DecisionRequest",
    "OfflineProposer",
    "Proposer",
    "ScriptedProposer",
]


@dataclass(frozen=True, slots=True)
class DecisionRequest:
    """One call: which agent, which attempt, the prompt, what it may choose."""

    step: int
    agent: str
    agent_type: AgentTypeSpec
    attempt: int
    prompt: str
    options: tuple[tuple[str, str], ...]
    """``(number, skill)`` offered."""
    rejected: tuple[str, ...]
    """Skills already rejected in this step's earlier attempts."""
    utilities: Mapping[str, float]
    appraisals: Mapping[str, str]


class Proposer(Protocol):
    """Something that answers a prompt with raw text."""

    @property
    def name(self) -> str:
        """For run.json."""
        ...

    async def propose(self, request: DecisionRequest) -> str | None:
        """The raw answer, or None when there is none (replay of an unmade call)."""
        ...


class OfflineProposer:
    """The reference model's choice rule as a stand-in for the LLM: a softmax over the
    world's ``utilities`` at ``temperature``, drawn from a generator seeded by (seed,
    step, agent, attempt), written in the response format like a model's answer."""

    def __init__(
        self,
        seed: int,
        temperature: float,
        fields: Sequence[ResponseField],
        delimiters: tuple[str, str],
    ) -> None:
        self.seed = seed
        self.temperature = temperature
        self.fields = tuple(fields)
        self.delimiters = delimiters

    @property
    def name(self) -> str:
        return f"offline(seed={self.seed}, temperature={self.temperature:g})"

    async def propose(self, request: DecisionRequest) -> str | None:
        return self.answer(request)

    def answer(self, request: DecisionRequest) -> str:
        """The raw answer (synchronous: the offline proposer never waits)."""
        choices = [(n, s) for n, s in request.options if s not in request.rejected] or list(
            request.options
        )
        scores = [float(request.utilities.get(s, -math.inf)) for _, s in choices]
        top = max(scores)
        if not math.isfinite(top):
            weights = [1.0] * len(choices)
        else:
            weights = [
                math.exp((v - top) / self.temperature) if math.isfinite(v) else 0.0 for v in scores
            ]
        import random

        rng = random.Random(
            derive_seed(self.seed, "propose", request.step, request.agent, request.attempt)
        )
        pick = rng.random() * sum(weights)
        chosen = choices[-1]
        for choice, weight in zip(choices, weights, strict=True):
            pick -= weight
            if pick < 0:
                chosen = choice
                break
        answer: dict[str, Any] = {}
        for f in self.fields:
            if f.type == "appraisal":
                label = request.appraisals.get(f.construct, "")
                answer[f.key] = {"label": label, "reason": f"offline appraisal {label}"}
            elif f.type == "choice":
                answer[f.key] = int(chosen[0]) if chosen[0].isdigit() else chosen[0]
            elif f.type == "text" and f.required:
                answer[f.key] = f"offline utilities chose {chosen[1]}"
        body = json.dumps(answer, sort_keys=True)
        return f"{self.delimiters[0]}\n{body}\n{self.delimiters[1]}"


class ScriptedProposer:
    """Raw outputs from a JSONL file, in call order (each line a JSON string, or an
    object with ``raw``). Calls go in agent order and attempt order."""

    def __init__(self, outputs: Sequence[str], source: str = "") -> None:
        self.outputs = list(outputs)
        self.source = source
        self.used = 0

    @classmethod
    def from_file(cls, path: Path) -> ScriptedProposer:
        """Read a script; a malformed line is a UsageError with its line number."""
        outputs: list[str] = []
        try:
            lines = path.read_text(encoding="utf-8-sig").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"{path}: cannot read the script: {exc}") from None
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except ValueError:
                raise UsageError(
                    f"{path}:{number}: not a JSON value (write each raw output as a JSON string)"
                ) from None
            if isinstance(value, dict) and isinstance(value.get("raw"), str):
                value = value["raw"]
            if not isinstance(value, str):
                raise UsageError(f'{path}:{number}: expected a JSON string or {{"raw": ...}}')
            outputs.append(value)
        return cls(outputs, str(path))

    @property
    def name(self) -> str:
        return f"scripted:{self.source}" if self.source else "scripted"

    async def propose(self, request: DecisionRequest) -> str | None:
        if self.used >= len(self.outputs):
            raise UsageError(
                f"the script {self.source or ''} has {len(self.outputs)} outputs; call "
                f"{self.used + 1} (step {request.step}, agent {request.agent}) has none"
            )
        self.used += 1
        return self.outputs[self.used - 1]


class ChatProposer:
    """Any ChatModel: the prompt as one user message, the text of the answer back."""

    def __init__(self, model: ChatModel) -> None:
        self.model = model

    @property
    def name(self) -> str:
        return self.model.name

    async def propose(self, request: DecisionRequest) -> str | None:
        spec = request.agent_type
        response = await self.model.complete(
            ChatRequest(
                "planner",
                (ChatMessage("user", request.prompt),),
                temperature=spec.temperature,
                max_tokens=spec.max_tokens,
            )
        )
        return response.text
