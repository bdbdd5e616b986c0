"""The README's first command (``make demo``): the refund skill, offline, end to end.

It runs the real ``skillwire`` commands against a fresh SQLite file, with no API key
and no network (the embedded offline model):

1. a refund of 750 without the order number pauses and prints the ``waiting`` object;
2. the demo supplies the order number; the job pauses for a supervisor's approval;
3. the demo approves as supervisor; the refund tool runs, the finalization gate passes,
   and the polished reply and the job's timeline are printed;
4. a second refund of the same order, in a new job, is refused: the refund tool runs
   once per order across all jobs (``once_per: args.order_id``, kept in the job store);
5. a refund of 120 for another order goes through without approval.

Each command is printed before it runs, so you can type it yourself.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SKILL = HERE / "refund_support" / "domain.yaml"
BIN = Path(sys.executable).parent / "skillwire"


def step(title: str) -> None:
    print(f"\n\033[1m== {title}\033[0m", flush=True)


def skillwire(*args: str, db: Path, parse: bool = True, exit_code: int = 0) -> dict[str, Any]:
    """Run one command, show it, and return its JSON output (it must exit with
    ``exit_code``: 1 for a job the rules blocked)."""
    command = [str(BIN), *args, "--db", str(db)]
    shown = ["skillwire", *args]
    print("$ " + " ".join(shlex.quote(a) for a in shown), flush=True)
    env = {**os.environ, "SKILLWIRE_CONFIG": os.devnull}
    done = subprocess.run(
        [*command, "--json"] if parse else command,
        env=env,
        text=True,
        capture_output=True,
        check=False,
    )
    if done.returncode != exit_code:
        sys.exit(f"demo failed: {done.stderr or done.stdout}")
    if not parse:
        print(done.stdout, end="")
        return {}
    job: dict[str, Any] = json.loads(done.stdout)
    print(f"  -> status {job['status']}, outcome {job['outcome_class']}")
    return job


def expect(job: dict[str, Any], status: str, outcome: str | None) -> None:
    if (job["status"], job["outcome_class"]) != (status, outcome):
        sys.exit(
            f"demo failed: expected {status}/{outcome}, got {job['status']}/{job['outcome_class']}"
        )


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "jobs.db"
        skill = (
            str(SKILL.relative_to(Path.cwd())) if SKILL.is_relative_to(Path.cwd()) else str(SKILL)
        )
        step("1. A refund without the order number: the platform asks for it")
        job = skillwire("run", skill, "-m", "I want a refund of $750", db=db)
        expect(job, "paused", "USER_ACTION_REQUIRED")
        print(
            json.dumps(
                {
                    "status": job["status"],
                    "outcome_class": job["outcome_class"],
                    "waiting": {k: v for k, v in job["waiting"].items() if k != "field_schemas"},
                },
                indent=2,
            )
        )

        step("2. The customer gives the order number: the 750 refund needs a supervisor")
        job = skillwire("resume", job["id"], "--input", "order_id=ORD-12345", db=db)
        expect(job, "paused", "APPROVAL_REQUIRED")
        waiting = job["waiting"]
        print(
            f"  waiting for {waiting['approver']}: {waiting['tool']} "
            f"{json.dumps(waiting['arguments'])}\n  reason: {waiting['reason']}"
        )

        step("3. The supervisor approves: the tool runs, the gate passes, the reply is polished")
        job = skillwire("resume", job["id"], "--approve", "--as", "supervisor", db=db)
        expect(job, "completed", "SUCCESS")
        print(f"  reply: {job['reply']}\n  fields: {json.dumps(job['fields'])}")
        skillwire("show", job["id"], db=db, parse=False)

        step("4. A second refund of ORD-12345, in a new job: refused, the order was refunded")
        job = skillwire(
            "run", skill, "-m", "Please refund $120 for order ORD-12345", db=db, exit_code=1
        )
        expect(job, "completed", "BLOCKED")
        refused = [
            r
            for e in job["events"]
            if e["kind"] == "gate_decision"
            for r in e["data"]["reasons"]
            if r["code"] == "ONCE_PER"
        ]
        if not refused:
            sys.exit("demo failed: the second refund was not refused with ONCE_PER")
        print(f"  ONCE_PER: {refused[0]['message']}")

        step("5. A refund of 120 for another order goes through without approval")
        job = skillwire("run", skill, "-m", "Please refund $120 for order ORD-55555", db=db)
        expect(job, "completed", "SUCCESS")
        approvals = [e for e in job["events"] if e["kind"] == "paused"]
        print(
            f"  reply: {job['reply']}\n  pauses: {len(approvals)}, model calls: "
            f"{len(job['model_calls'])}"
        )
    print("\ndemo ok")


if __name__ == "__main__":
    main()
