"""``sim report``: per step, the shares of agents in each tracked state (the boolean
keys skills may change: insured, elevated, relocated), rejections by rule, retries and
fallbacks; written as ``report.csv`` and, with matplotlib installed, ``report.png``.

A share counts every agent of the run: an agent that did not decide in a step (it
relocated) keeps its last state.
"""

from __future__ import annotations

import csv
import io
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skillwire.sim.runs import iter_audit, read_run

__all__ = ["StepRow", "build_report", "write_chart", "write_csv"]


@dataclass
class StepRow:
    """One step of the report."""

    step: int
    deciding: int = 0
    attempts: int = 0
    approved: int = 0
    retries: int = 0
    fallbacks: int = 0
    warnings: int = 0
    shares: dict[str, float] = field(default_factory=dict)
    rejections: Counter[str] = field(default_factory=Counter)


def build_report(run_dir: Path) -> tuple[list[str], list[StepRow]]:
    """The tracked keys and one row per step."""
    run = read_run(run_dir)
    initial: dict[str, dict[str, Any]] = run.get("initial_state") or {}
    tracked = [
        k
        for k in run.get("tracked_state") or []
        if any(isinstance(s.get(k), bool) for s in initial.values())
    ]
    current = {aid: dict(state) for aid, state in initial.items()}
    total = max(1, len(current))
    rows: dict[int, StepRow] = {
        step: StepRow(step) for step in range(1, int(run.get("steps", 0)) + 1)
    }
    deciding: dict[int, set[str]] = {}
    for r in iter_audit(run_dir):
        step = r.get("step")
        if not isinstance(step, int):
            continue
        row = rows.setdefault(step, StepRow(step))
        agent = str(r.get("agent"))
        deciding.setdefault(step, set()).add(agent)
        outcome = r.get("outcome")
        if outcome == "fallback":
            row.fallbacks += 1
        else:
            row.attempts += 1
            if isinstance(r.get("attempt"), int) and r["attempt"] > 1:
                row.retries += 1
            if outcome == "approved":
                row.approved += 1
        for result in r.get("results") or []:
            if isinstance(result, dict) and result.get("ok") is False:
                if result.get("level") == "WARNING":
                    row.warnings += 1
                elif outcome != "fallback":
                    row.rejections[f"{result.get('validator')}.{result.get('rule')}"] += 1
        after = r.get("state_after")
        if isinstance(after, dict) and agent in current:
            current[agent].update({k: after.get(k) for k in tracked if k in after})
        if r.get("executed_skill") is not None or outcome in ("approved", "fallback"):
            row.shares = {
                k: sum(1 for s in current.values() if s.get(k) is True) / total for k in tracked
            }
    last: dict[str, float] = {
        k: sum(1 for s in initial.values() if s.get(k) is True) / total for k in tracked
    }
    for step in sorted(rows):
        row = rows[step]
        row.deciding = len(deciding.get(step, ()))
        if not row.shares:
            row.shares = dict(last)
        last = row.shares
    return tracked, [rows[s] for s in sorted(rows)]


def write_csv(tracked: list[str], rows: list[StepRow], path: Path) -> None:
    """``report.csv``: one line per step; a column per tracked share and per rule that
    rejected anything."""
    rules = sorted({rule for row in rows for rule in row.rejections})
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(
        [
            "step",
            "deciding",
            *(f"share_{k}" for k in tracked),
            "attempts",
            "approved",
            "retries",
            "fallbacks",
            "warnings",
            *(f"rejected:{r}" for r in rules),
        ]
    )
    for row in rows:
        writer.writerow(
            [
                row.step,
                row.deciding,
                *(f"{row.shares.get(k, 0.0):.4f}" for k in tracked),
                row.attempts,
                row.approved,
                row.retries,
                row.fallbacks,
                row.warnings,
                *(row.rejections.get(r, 0) for r in rules),
            ]
        )
    path.write_text(buffer.getvalue(), encoding="utf-8")


def write_chart(tracked: list[str], rows: list[StepRow], path: Path, title: str) -> str | None:
    """``report.png`` (shares over the steps); the reason when it cannot be drawn."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.ticker import MaxNLocator
    except ImportError:
        return "matplotlib is not installed (pip install 'skillwire[charts]')"
    figure, axes = plt.subplots(figsize=(7, 4), dpi=100)
    steps = [row.step for row in rows]
    for key in tracked:
        axes.plot(steps, [row.shares.get(key, 0.0) for row in rows], marker="o", label=key)
    axes.set_xlabel("step")
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))  # steps are whole years
    axes.set_ylabel("share of agents")
    axes.set_ylim(0, 1)
    axes.set_title(title)
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, metadata={"Software": None})
    plt.close(figure)
    return None
