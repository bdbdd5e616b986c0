"""Helpers for the policy tests: skills written inline as YAML, gates built from them."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import yaml

from skillwire.core.store import ClaimCount, ClaimSnapshot
from skillwire.policy import BasePolicy, Decision, Gate, ReasonCode, ToolRun
from skillwire.skills import Skill, load_skill

REFUND_TOOLS = """
tools:
  - name: verify_identity
    inputs:
      - {name: order_id, type: string, required: true, pattern: "^ORD-[0-9]{5}$"}
  - name: check_eligibility
    inputs:
      - {name: order_id, type: string, required: true}
      - {name: amount, type: number, required: true}
  - name: process_refund
    description: Process a customer refund
    inputs:
      - {name: order_id, type: string, required: true, description: "The order number"}
      - {name: amount, type: number, required: true}
      - {name: note, type: string}
"""
"""Three refund tools, for skills that only add policy."""


REQUIRED_DATA: dict[str, Any] = {
    "problem": {"statement": "Help customers with their orders"},
    "intents": {"supported": [{"id": "intent_any", "description": "Anything"}]},
}
"""The parts spec 000 section 3.2 requires besides tools, for skills that only test policy."""


def with_required_data(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` with the required parts it lacks (:data:`REQUIRED_DATA`)."""
    return {**{k: v for k, v in REQUIRED_DATA.items() if k not in data}, **data}


def with_required(text: str) -> str:
    """``text`` with the required ``problem`` and ``intents`` it lacks appended (at the
    end, so that the lines a test names do not move)."""
    if text.lstrip().startswith("{"):
        try:
            return json.dumps(with_required_data(json.loads(text)))
        except ValueError:
            return text
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        return text
    if not isinstance(data, dict):
        return text
    return text + "".join(
        f"{key}: {json.dumps(part)}\n" for key, part in REQUIRED_DATA.items() if key not in data
    )


def skill_from(tmp_path: Path, *parts: str, name: str = "domain.yaml") -> Skill:
    """Write the YAML ``parts`` (each dedented on its own) to ``tmp_path/name``, with
    the required parts they lack (:func:`with_required`); load it."""
    path = tmp_path / name
    text = "\n".join(textwrap.dedent(p).strip("\n") for p in parts) + "\n"
    path.write_text(with_required(text))
    return load_skill(path)


def gate_from(tmp_path: Path, *parts: str, base: BasePolicy | None = None) -> Gate:
    """The gate of the skill written as ``parts``."""
    return Gate.for_skill(skill_from(tmp_path, *parts), base=base)


def runs(*tools: str, **args: object) -> list[ToolRun]:
    """Successful runs of ``tools``, each with ``args``."""
    return [ToolRun(t, dict(args), {"ok": True}) for t in tools]


def codes(decision: Decision) -> list[ReasonCode]:
    """The reason codes of a decision, in order."""
    return [r.code for r in decision.reasons]


def line_of(path: Path | str, needle: str) -> int:
    """The 1-based number of the first line of ``path`` containing ``needle``."""
    for number, line in enumerate(Path(path).read_text().splitlines(), start=1):
        if needle in line:
            return number
    raise AssertionError(f"{needle!r} not in {path}")


BIG = {"order_id": "ORD-1", "amount": 750}
"""A refund over both approval thresholds of :data:`APPROVALS`."""

APPROVALS = """
policy:
  approvals:
    - {tool_id: process_refund, when: "amount > 500", approver: supervisor}
    - {tool_id: process_refund, when: "amount > 700", approver: finance}
"""
"""Refunds need a supervisor over 500 and finance over 700."""


class FreshStore:
    """A gate whose checks read a ledger in which no job holds a claim (a new, empty job
    store), for tests of other rules on skills that also limit runs across jobs
    (``once_per``, ``rate_limit``: tests/policy/test_cross_job.py tests those)."""

    def __init__(self, gate: Gate) -> None:
        self.gate = gate

    def check(self, tool: str, args: dict[str, Any] | None = None, **given: Any) -> Decision:
        """``gate.check`` with ``ledger`` (nothing held) and ``user`` filled in."""
        given.setdefault("user", "u1")
        claims = self.gate.claims(
            tool,
            args,
            context=given.get("context"),
            entities=given.get("entities"),
            inputs=given.get("inputs"),
            user=given["user"],
            now=given.get("now"),
        )
        given.setdefault("ledger", ClaimSnapshot({c.key: ClaimCount(c.key, 0) for c in claims}))
        return self.gate.check(tool, args, **given)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.gate, name)
