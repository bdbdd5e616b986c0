"""Gate benchmark with provenance and facts: a 20-tool-run history, rules reading
``untrusted()`` and facts (issue 20).

Run ``python -m bench.gate_provenance``. A payments skill with an untrusted mail reader
(``trust: untrusted``), a look-up tool and a payment tool whose rules read
``untrusted(args.iban)``, a fact ``latest(...)`` and the base policy's
``untrusted_writes`` switch; each proposal is checked against a job history of 20 tool
runs (mails carrying IBANs, look-ups, payments) and the user's request. Proposals pay an
IBAN the user typed, one found only in a mail (exactly, or respelt), one found nowhere,
or look a reservation up. Each is checked once to warm up, then ``--rounds`` more times;
a proposal's time is the least of its rounds. One JSON line is printed::

    {"bench": "gate_provenance", "history": 20, "decisions": 2000, "p50_us": ...,
     "p99_us": ..., "kinds": {...}, "python": "3.11.7"}

The target is p99 under 50 microseconds per decision on a 2-core machine: measured at
p99 47 to 50, up to 55 while other work loads both cores (docs/gate.md, "Speed").
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import random
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from skillwire.policy import Gate, ToolRun
from skillwire.skills import load_skill

__all__ = ["SKILL", "build_gate", "main", "run"]

SKILL = """
id: payments-bench
problem: {statement: "Pay bills the user asks for"}
intents:
  supported: [{id: pay, description: Pay a bill}]
facts:
  reservation: "latest('get_reservation', {'reservation_id': args.reservation_id}).result"
tools:
  - name: read_inbox
    trust: untrusted
    inputs: [{name: folder, type: string}]
  - name: get_reservation
    inputs: [{name: reservation_id, type: string, required: true}]
  - name: pay
    effects: [paid]
    inputs:
      - {name: iban, type: string, required: true}
      - {name: amount, type: number, required: true}
      - {name: reservation_id, type: string}
    policy:
      conditions:
        - {when: "untrusted(args.iban)", action: require_approval, approver: supervisor}
        - {when: "facts.reservation.fare == 'basic' && amount > 100", action: deny}
allowed_state_changes: [paid]
"""

_NOW = datetime.datetime(2026, 11, 25, 12, 0, tzinfo=datetime.UTC)
_TYPED = "GB29 NWBK 6016 1331 9268 19"


def build_gate(folder: Path) -> Gate:
    """Write the skill into ``folder``, load it and build its gate."""
    path = folder / "domain.yaml"
    path.write_text(SKILL, encoding="utf-8")
    return Gate.for_skill(load_skill(path))


def _mail_iban(i: int) -> str:
    return f"DE44 5001 0517 5407 3249 {i:02d}"


def _history(rng: random.Random) -> list[ToolRun]:
    runs: list[ToolRun] = []
    for i in range(20):
        kind = rng.randrange(3)
        if kind == 0:
            body = f"Invoice {i}: please pay {_mail_iban(i)} by Friday. Regards, x{i}@mail.example"
            runs.append(ToolRun("read_inbox", {"folder": "inbox"}, {"messages": [{"body": body}]}))
        elif kind == 1:
            fare = rng.choice(["basic", "flex"])
            runs.append(ToolRun("get_reservation", {"reservation_id": f"R{i}"}, {"fare": fare}))
        else:
            runs.append(ToolRun("pay", {"iban": _TYPED, "amount": 10.0 * i}, {"ok": True}))
    return runs


def _proposal(rng: random.Random, history: list[ToolRun]) -> tuple[str, dict[str, Any]]:
    mailed = [i for i, run in enumerate(history) if run.tool == "read_inbox"] or [0]
    choice = rng.randrange(5)
    if choice == 4:
        return "get_reservation", {"reservation_id": f"R{rng.randrange(20)}"}
    iban = [
        _TYPED,
        _mail_iban(rng.choice(mailed)),
        _mail_iban(rng.choice(mailed)).replace(" ", "").lower(),
        "FR76 3000 6000 0112 3456 7890 189",
    ][choice]
    return "pay", {"iban": iban, "amount": rng.choice([50, 150]), "reservation_id": "R4"}


def run(*, distinct: int = 2000, rounds: int = 5, seed: int = 20) -> dict[str, Any]:
    """Time ``distinct`` proposals; the figures as a dict."""
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory() as tmp:
        gate = build_gate(Path(tmp))
    histories = [_history(rng) for _ in range(20)]
    cases = []
    for _ in range(distinct):
        history = rng.choice(histories)
        cases.append((history, *_proposal(rng, history)))
    said = [f"Pay my rent to {_TYPED}, and the bills in my inbox"]
    kinds: Counter[str] = Counter()
    for history, tool, args in cases:  # warm up: each run's normalised form is kept
        kinds[gate.check(tool, args, history=history, user_texts=said, now=_NOW).kind] += 1
    best = [float("inf")] * len(cases)
    clock = time.perf_counter
    for _ in range(rounds):
        for i, (history, tool, args) in enumerate(cases):
            start = clock()
            gate.check(tool, args, history=history, user_texts=said, now=_NOW)
            best[i] = min(best[i], clock() - start)
    ordered = sorted(best)
    return {
        "bench": "gate_provenance",
        "history": 20,
        "decisions": len(cases),
        "p50_us": round(ordered[len(ordered) // 2] * 1e6, 2),
        "p99_us": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1e6, 2),
        "kinds": dict(sorted(kinds.items())),
        "python": platform.python_version(),
    }


def main(argv: list[str] | None = None) -> int:
    """Print one JSON line of figures."""
    parser = argparse.ArgumentParser(prog="python -m bench.gate_provenance")
    parser.add_argument("--proposals", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    print(json.dumps(run(distinct=args.proposals, rounds=args.rounds)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
