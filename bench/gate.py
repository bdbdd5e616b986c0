"""Gate benchmark: the pre-tool gate's time per decision on a 50-rule, 20-tool skill.

Run ``python -m bench.gate``. A realistic support skill is generated (20 tools, half
described by ``inputs[]`` and half by ``inputSchema``; 50 compiled rules: conditional
approvals, deny conditions, sentence thresholds, tool denials, required-workflow order,
``once_only``, call limits, a precondition, an escalation, and one rule that reads the
job's ``history``, as the refund example has), written to a temporary folder and loaded
with :func:`skillwire.skills.load_skill` (not timed). Then 10,000 varied proposals (next
steps of a workflow and random calls; valid calls under and over thresholds, calls out of
order, missing and mistyped arguments, unknown tools, grants by the right and the wrong
role; histories of up to a dozen runs) are checked once to warm up, then five more times,
each decision timed on its own; a proposal's time is the least of its five. One JSON line
is printed::

    {"bench": "gate", "rules": 50, "tools": 20, "decisions": 50000, "p50_us": 10.38,
     "p99_us": 144.14, "decisions_per_s": 39579, "p99_us_history_conditions": 206.11,
     "p99_us_other": 31.51, "share_history_conditions": 0.059, "kinds": {...},
     "python": "3.11.7"}

``p99_us_history_conditions`` is the p99 of the decisions that evaluate a condition over
a non-empty ``history`` (``share_history_conditions`` of the mix), ``p99_us_other`` that
of the rest: the condition evaluator reads a run's fields in place, so those decisions
cost a little more per run of the tool the rule reads, not per run of the job.

The target is p99 under 50 microseconds per decision on a 2-core machine. The exit status
is 1 when the skill does not compile to exactly 50 rules over 20 tools.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import tempfile
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skillwire.policy import ApprovalGrant, Gate, ToolRun
from skillwire.skills import load_skill

__all__ = ["Proposal", "build_gate", "main", "proposals", "run", "skill_document"]

_ORDER = {"type": "string", "pattern": "^ORD-[0-9]{5}$"}
_CUSTOMER = {"type": "string", "pattern": "^C-[0-9]{4}$"}
# (name, {argument: JSON Schema}, required arguments); the first ten use inputs[].
_TOOLS: list[tuple[str, dict[str, dict[str, Any]], list[str]]] = [
    ("lookup_customer", {"customer_id": _CUSTOMER}, ["customer_id"]),
    ("verify_identity", {"customer_id": _CUSTOMER, "order_id": _ORDER}, ["customer_id"]),
    ("check_order_status", {"order_id": _ORDER}, ["order_id"]),
    (
        "check_eligibility",
        {"order_id": _ORDER, "amount": {"type": "number"}},
        ["order_id", "amount"],
    ),
    (
        "process_refund",
        {"order_id": _ORDER, "amount": {"type": "number"}, "reason": {"type": "string"}},
        ["order_id", "amount"],
    ),
    (
        "issue_credit",
        {"customer_id": _CUSTOMER, "credit": {"type": "number"}},
        ["customer_id", "credit"],
    ),
    ("cancel_order", {"order_id": _ORDER, "reason": {"type": "string"}}, ["order_id"]),
    (
        "update_address",
        {"customer_id": _CUSTOMER, "country": {"type": "string", "enum": ["US", "CA", "GB"]}},
        ["customer_id", "country"],
    ),
    (
        "send_email",
        {"customer_id": _CUSTOMER, "template": {"type": "string"}},
        ["customer_id", "template"],
    ),
    ("create_ticket", {"customer_id": _CUSTOMER, "priority": {"type": "integer"}}, ["customer_id"]),
    ("add_note", {"ticket_id": {"type": "string"}, "text": {"type": "string"}}, ["ticket_id"]),
    (
        "escalate_ticket",
        {"ticket_id": {"type": "string"}, "severity": {"type": "integer"}},
        ["ticket_id", "severity"],
    ),
    ("close_ticket", {"ticket_id": {"type": "string"}}, ["ticket_id"]),
    (
        "apply_discount",
        {"order_id": _ORDER, "percent": {"type": "number"}},
        ["order_id", "percent"],
    ),
    (
        "change_plan",
        {"customer_id": _CUSTOMER, "plan": {"type": "string", "enum": ["basic", "pro", "max"]}},
        ["customer_id", "plan"],
    ),
    ("reset_password", {"customer_id": _CUSTOMER}, ["customer_id"]),
    (
        "schedule_callback",
        {"customer_id": _CUSTOMER, "hours": {"type": "integer"}},
        ["customer_id", "hours"],
    ),
    (
        "transfer_funds",
        {
            "from_account": {"type": "string"},
            "to_account": {"type": "string"},
            "amount": {"type": "number"},
        },
        ["from_account", "to_account", "amount"],
    ),
    ("export_report", {"report": {"type": "string"}, "rows": {"type": "integer"}}, ["report"]),
    ("delete_record", {"customer_id": _CUSTOMER}, ["customer_id"]),
]

# Per-tool policy; each entry notes how many rules it compiles to.
_POLICIES: dict[str, dict[str, Any]] = {
    "process_refund": {  # 1 approval + 1 deny + once_only = 3
        "requires_approval": "conditional",
        "condition": "amount > 500",
        "conditions": [{"when": "amount > 5000", "action": "deny", "message": "too large"}],
        "once_only": {"per": "order_id"},
    },
    "issue_credit": {  # approval + deny + max_calls = 3
        "requires_approval": "conditional",
        "condition": "credit >= 100.5",
        "conditions": [{"when": "credit > 1000 || credit < 0", "action": "deny"}],
        "max_calls": 2,
    },
    "cancel_order": {  # once_only + deny = 2
        "once_only": True,
        "conditions": [
            {
                "when": "has(context.order_state) && context.order_state == 'shipped'",
                "action": "deny",
                "message": "a shipped order cannot be cancelled",
            }
        ],
    },
    "update_address": {  # approval = 1
        "conditions": [{"when": "country != 'US'", "action": "require_approval"}],
    },
    "send_email": {  # max_calls + deny = 2
        "max_calls": 5,
        "conditions": [{"when": "template.startsWith('internal_')", "action": "deny"}],
    },
    "escalate_ticket": {  # approval + deny = 2
        "conditions": [
            {"when": "severity >= 3", "action": "require_approval", "approver": "manager"},
            {"when": "severity > 5", "action": "deny"},
        ],
    },
    "close_ticket": {"once_only": {"per": "ticket_id"}},  # 1
    "apply_discount": {  # approval + allow exception = 2
        "requires_approval": "conditional",
        "condition": "percent > 10",
        "conditions": [{"when": "context.tier == 'vip' && percent <= 20", "action": "allow"}],
    },
    "change_plan": {  # approval + max_calls = 2
        "conditions": [{"when": "plan == 'max'", "action": "require_approval"}],
        "max_calls": 1,
    },
    "reset_password": {"requires_approval": "always", "once_only": True},  # 2 (+1 below)
    "schedule_callback": {  # 1
        "conditions": [{"when": "hours > 72 || hours < 1", "action": "deny"}],
    },
    "transfer_funds": {  # approval + deny + once_only + max_calls = 4
        "requires_approval": "conditional",
        "condition": "amount > 1000.0 && counts.transfer_funds >= 0",
        "conditions": [{"when": "from_account == to_account", "action": "deny"}],
        "once_only": {"per": "to_account"},
        "max_calls": 3,
    },
    "export_report": {  # 1
        "conditions": [{"when": "rows > 10000", "action": "require_approval"}],
    },
    "delete_record": {"allowed": "never"},  # 1
}
# tools: 28 rules so far.

_NEVER: list[Any] = [
    "Never share customer payment information",  # text
    "Never process refunds over $2,000 without finance approval",  # approval = 1
    "Never use delete_record",  # 1
    "Never apply discounts over 50",  # threshold = 1
    "Never transfer funds above 25000",  # threshold = 1
    "Never be dismissive to frustrated customers",  # text
    {  # 1
        "rule": "Never refund more than the order total",
        "tool": "process_refund",
        "when": "history.exists(h, h.tool == 'check_eligibility' && amount > h.result.total)",
        "action": "block",
    },
    {  # 1
        "rule": "Credits need a reason on record",
        "tool": "issue_credit",
        "when": "credit > 50",
        "action": "require_input",
        "fields": ["reason"],
    },
]
_ALWAYS: list[Any] = [
    "Always verify customer identity before account access",  # text
    "Always keep credit under 2000",  # threshold = 1
    {  # 1
        "rule": "Escalations outside business hours need the on-call lead",
        "when": "context.after_hours == true",
        "action": "require_approval",
        "approver": "oncall",
        "tool": "escalate_ticket",
    },
]
# guardrails: 8 rules.

_WORKFLOWS: list[dict[str, Any]] = [  # 3 + 2 + 1 = 6 order rules
    {
        "name": "refund",
        "steps": ["lookup_customer", "verify_identity", "check_eligibility", "process_refund"],
        "required": True,
    },
    {"name": "ticket", "steps": ["create_ticket", "add_note", "close_ticket"], "required": True},
    {
        "name": "account",
        "steps": ["verify_identity", "confirm_with_customer", "reset_password"],
        "required": True,
    },
]
_APPROVALS: list[dict[str, Any]] = [  # 4
    {"tool_id": "process_refund", "when": "amount > 500", "approver": "supervisor"},
    {"tool_id": "cancel_order", "when": "reason == 'fraud'", "approver": "risk"},
    {"tool_id": "transfer_funds", "conditions": ["amount > 10000"], "approver": "finance"},
    {"tool_id": "export_report", "approver": "privacy"},
]
_ESCALATION = {  # 1
    "enabled": True,
    "target": "team_lead",
    "conditions": [{"when": "severity >= 4", "message": "severe tickets go to a team lead"}],
}
_CAPS = {"add_note": 20, "lookup_customer": 10, "check_order_status": 10}  # 3


def skill_document() -> dict[str, Any]:
    """The generated skill as plain data (written out as JSON, which is valid YAML)."""
    tools: list[dict[str, Any]] = []
    for i, (name, props, required) in enumerate(_TOOLS):
        tool: dict[str, Any] = {"name": name, "description": name.replace("_", " ")}
        if i < 10:
            tool["inputs"] = [
                {**schema, "name": arg, "required": arg in required}
                for arg, schema in props.items()
            ]
        else:
            tool["inputSchema"] = {"type": "object", "required": required, "properties": props}
        policy = dict(_POLICIES.get(name, {}))
        if name in _CAPS:
            policy["max_calls"] = _CAPS[name]
        if policy:
            tool["policy"] = policy
        if name == "reset_password":  # 1
            tool["preconditions"] = ["context.authenticated == true"]
        tools.append(tool)
    return {
        "id": "bench-gate",
        "name": "Gate benchmark",
        "problem": {"statement": "Serve customers' orders, refunds and accounts"},
        "intents": {
            "supported": [
                {"id": "refund", "description": "refund an order", "examples": ["refund"]},
                {
                    "id": "status",
                    "description": "where is my order",
                    "examples": ["where is it"],
                    "tools": ["check_order_status", "lookup_customer"],
                },
            ]
        },
        "tools": tools,
        "policy": {
            "guardrails": {"never": _NEVER, "always": _ALWAYS},
            "workflows": _WORKFLOWS,
            "approvals": _APPROVALS,
            "escalation": _ESCALATION,
        },
    }


def build_gate(folder: Path) -> Gate:
    """Write the skill into ``folder``, load it and build its gate."""
    path = folder / "domain.yaml"
    path.write_text(json.dumps(skill_document(), indent=2), encoding="utf-8")
    return Gate.for_skill(load_skill(path))


@dataclass(frozen=True, slots=True)
class Proposal:
    """One proposed call and the job state it is checked against."""

    tool: str
    args: Mapping[str, Any]
    history: Sequence[ToolRun]
    context: Mapping[str, Any]
    approvals: Sequence[ApprovalGrant]
    intent: str | None


def _value(rng: random.Random, arg: str, schema: Mapping[str, Any]) -> Any:
    if "enum" in schema:
        return rng.choice(schema["enum"])
    kind = schema["type"]
    if kind == "integer":
        return rng.choice((0, 1, 2, 3, 4, 5, 6, 48, 100, 20000))
    if kind == "number":
        return rng.choice((5, 49.5, 99.99, 100.5, 250, 501, 750.25, 1200, 3000, 30000))
    if arg == "order_id":
        return f"ORD-{rng.randrange(10**5):05d}"
    if arg == "customer_id":
        return f"C-{rng.randrange(10**4):04d}"
    return rng.choice(("acct-1", "acct-2", "fraud", "damaged", "T-7", "weekly"))


def _args(rng: random.Random, props: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    args = {arg: _value(rng, arg, schema) for arg, schema in props.items()}
    roll = rng.random()
    if roll < 0.08 and args:  # a required value left out
        args.pop(rng.choice(sorted(args)))
    elif roll < 0.14 and args:  # a mistyped value, as models write them
        arg = rng.choice(sorted(args))
        args[arg] = str(args[arg]) if not isinstance(args[arg], str) else 12345
    elif roll < 0.17:
        args["unexpected"] = True
    return args


def _run(rng: random.Random, name: str, ok: bool = True) -> ToolRun:
    props = next(p for n, p, _r in _TOOLS if n == name)
    args = {arg: _value(rng, arg, schema) for arg, schema in props.items()}
    result: dict[str, Any] = {"ok": True}
    if name == "check_eligibility":
        result = {"eligible": True, "total": rng.choice((100, 900.0, 5000))}
    return ToolRun(name, args, result, ok=ok)


def _history(rng: random.Random) -> tuple[list[ToolRun], str | None]:
    """A job's history so far, and (half the time) the workflow step that comes next."""
    runs: list[ToolRun] = []
    for _ in range(rng.choice((0, 0, 1, 1, 2, 2, 3, 4, 5, 6, 8, 10))):
        runs.append(_run(rng, rng.choice(_TOOLS[:13])[0], ok=rng.random() > 0.1))
    if rng.random() < 0.5:
        steps = [s for s in rng.choice(_WORKFLOWS)["steps"] if any(s == t[0] for t in _TOOLS)]
        done = rng.randrange(len(steps))
        runs += [_run(rng, step) for step in steps[:done]]
        return runs, steps[done]
    return runs, None


def proposals(count: int, seed: int = 7) -> list[Proposal]:
    """``count`` varied proposals (a fixed seed: every run checks the same ones)."""
    rng = random.Random(seed)
    out: list[Proposal] = []
    for _ in range(count):
        if rng.random() < 0.03:
            out.append(Proposal("wipe_database", {"all": True}, (), {}, (), None))
            continue
        history, next_step = _history(rng)
        name, props, _required = (
            next(t for t in _TOOLS if t[0] == next_step) if next_step else rng.choice(_TOOLS)
        )
        args = _args(rng, props)
        grants: tuple[ApprovalGrant, ...] = ()
        if rng.random() < 0.2:
            grants = (ApprovalGrant(name, dict(args), rng.choice(("supervisor", "finance"))),)
        context: dict[str, Any] = {
            "tier": rng.choice(("vip", "basic")),
            "after_hours": rng.random() < 0.2,
            "authenticated": rng.random() < 0.8,
        }
        if rng.random() < 0.3:
            context["order_state"] = rng.choice(("shipped", "packed"))
        intent = rng.choice((None, None, None, "refund", "status"))
        out.append(Proposal(name, args, history, context, grants, intent))
    return out


def _percentile(sorted_ns: Sequence[int], fraction: float) -> float:
    index = min(len(sorted_ns) - 1, round(fraction * (len(sorted_ns) - 1)))
    return sorted_ns[index] / 1000


def run(distinct: int = 10_000, rounds: int = 5) -> dict[str, Any]:
    """Build the gate, warm it up, time ``rounds`` passes over ``distinct`` proposals.

    Each proposal's time is the least of its ``rounds`` timings (as ``timeit`` advises:
    a larger one is another process taking the CPU, not the gate's work); the
    percentiles are over proposals. ``decisions_per_s`` is from the fastest pass.
    """
    with tempfile.TemporaryDirectory(prefix="skillwire-bench-gate-") as tmp:
        gate = build_gate(Path(tmp))
    cases = proposals(distinct)
    kinds: Counter[str] = Counter()
    reads_history = {
        t
        for t in gate.tools
        if any(r.condition and "history" in r.condition.names for r in gate.policy.for_tool(t))
    }
    for p in cases:  # warm-up, and the mix of decisions the timed passes see
        decision = gate.check(
            p.tool,
            p.args,
            context=p.context,
            history=p.history,
            approvals=p.approvals,
            intent=p.intent,
        )
        kinds[decision.kind] += 1
    best = [2**62] * len(cases)
    fastest_pass = float("inf")
    clock = time.perf_counter_ns
    check = gate.check
    for _ in range(rounds):
        start = clock()
        for i, p in enumerate(cases):
            t0 = clock()
            check(
                p.tool,
                p.args,
                context=p.context,
                history=p.history,
                approvals=p.approvals,
                intent=p.intent,
            )
            spent = clock() - t0
            best[i] = min(best[i], spent)
        fastest_pass = min(fastest_pass, (clock() - start) / 1e9)
    timings = sorted(best)
    history_timings = sorted(
        b for b, p in zip(best, cases, strict=True) if p.tool in reads_history and p.history
    )
    other_timings = sorted(
        b for b, p in zip(best, cases, strict=True) if not (p.tool in reads_history and p.history)
    )
    return {
        "bench": "gate",
        "rules": len(gate.policy.rules),
        "tools": len(gate.tools),
        "decisions": distinct * rounds,
        "p50_us": round(_percentile(timings, 0.50), 2),
        "p99_us": round(_percentile(timings, 0.99), 2),
        "decisions_per_s": round(distinct / fastest_pass),
        "p99_us_history_conditions": round(_percentile(history_timings, 0.99), 2)
        if history_timings
        else None,
        "p99_us_other": round(_percentile(other_timings, 0.99), 2),
        "share_history_conditions": round(len(history_timings) / len(timings), 3),
        "kinds": dict(sorted(kinds.items())),
        "python": platform.python_version(),
    }


def main(argv: list[str] | None = None) -> int:
    """Print the benchmark's JSON line; exit 1 unless the skill has exactly 50 rules."""
    parser = argparse.ArgumentParser(prog="python -m bench.gate", description=__doc__)
    parser.add_argument("--proposals", type=int, default=10_000, help="distinct proposals")
    parser.add_argument("--rounds", type=int, default=5, help="timed passes over them")
    args = parser.parse_args(argv)
    line = run(args.proposals, args.rounds)
    print(json.dumps(line))
    return 0 if line["rules"] == 50 and line["tools"] == 20 else 1


if __name__ == "__main__":
    raise SystemExit(main())
