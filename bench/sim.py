"""Simulation benchmark: the flood example with the offline proposer.

Run ``python -m bench.sim``. The example (100 agents x 10 steps, strict governance) is
run into a temporary directory and replayed from its audit; both are timed (the target
is under 2 s each on this machine) and the replay must be byte-identical. Then the same
world with 10,000 agents (the 100 profiles repeated under new ids) runs 10 steps in a
child process, which reports its time and peak resident memory. One JSON line::

    {"bench": "sim", "agents": 100, "steps": 10, "run_s": 0.61, "replay_s": 0.55,
     "steps_per_s": 16.4, "decisions_per_s": 1650, "identical": true,
     "large": {"agents": 10000, "steps": 10, "run_s": 58.1, "peak_rss_mb": 240.3, ...}}

The exit status is 1 when a target is missed or the replay differs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from skillwire.sim import load_experiment
from skillwire.sim.proposers import OfflineProposer
from skillwire.sim.runner import RunSettings
from skillwire.sim.runs import replay_run, run_experiment

__all__ = ["main", "run_once"]

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "flood_abm"
TARGET_S = 2.0


def run_once(folder: Path, out: Path, steps: int = 10) -> dict[str, Any]:
    """Load and run the experiment in ``folder`` (offline, strict); timings exclude loading."""
    experiment = load_experiment(folder)
    proposer = OfflineProposer(
        experiment.seed, experiment.temperature, experiment.response_fields, experiment.delimiters
    )
    started = time.perf_counter()
    result = asyncio.run(
        run_experiment(
            experiment,
            proposer,
            RunSettings("strict", experiment.seed, steps),
            out,
            model_spec="offline",
        )
    )
    elapsed = time.perf_counter() - started
    return {
        "agents": result.agents,
        "steps": result.steps,
        "records": result.records,
        "run_s": round(elapsed, 3),
    }


def _large_folder(base: Path, agents: int) -> Path:
    folder = base / "large"
    shutil.copytree(EXAMPLE, folder, ignore=shutil.ignore_patterns("__pycache__"))
    csv = folder / "agent_initial_profiles.csv"
    header, *rows = csv.read_text(encoding="utf-8").splitlines()
    out = [header]
    for i in range(agents):
        row = rows[i % len(rows)]
        out.append(f"Agent_{i + 1}," + row.split(",", 1)[1])
    csv.write_text("\n".join(out) + "\n", encoding="utf-8")
    return folder


def _child(folder: Path, out: Path) -> None:
    figures = run_once(folder, out)
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    figures["peak_rss_mb"] = round(peak_kb / 1024, 1)
    figures["audit_mb"] = round((out / "audit.jsonl").stat().st_size / 2**20, 1)
    figures["decisions_per_s"] = round(figures["records"] / figures["run_s"])
    print(json.dumps(figures))


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; 0 when the targets hold."""
    parser = argparse.ArgumentParser(prog="python -m bench.sim")
    parser.add_argument("--large-agents", type=int, default=10_000, help="0 skips the large run")
    parser.add_argument("--child", nargs=2, metavar=("FOLDER", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child(Path(args.child[0]), Path(args.child[1]))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        small = run_once(EXAMPLE, base / "run")
        started = time.perf_counter()
        outcome = asyncio.run(replay_run(base / "run"))
        replay_s = time.perf_counter() - started
        report: dict[str, Any] = {
            "bench": "sim",
            **small,
            "replay_s": round(replay_s, 3),
            "steps_per_s": round(small["steps"] / small["run_s"], 1),
            "decisions_per_s": round(small["records"] / small["run_s"]),
            "identical": outcome.identical,
        }
        if args.large_agents:
            folder = _large_folder(base, args.large_agents)
            child = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "bench.sim",
                    "--child",
                    str(folder),
                    str(base / "large_run"),
                ],
                capture_output=True,
                text=True,
                check=False,
            )
            if child.returncode != 0:
                print(child.stderr, file=sys.stderr)
                return 1
            report["large"] = json.loads(child.stdout.strip().splitlines()[-1])
        report["python"] = platform.python_version()
    print(json.dumps(report))
    ok = (
        report["run_s"] < TARGET_S and report["replay_s"] < TARGET_S and report["identical"] is True
    )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
