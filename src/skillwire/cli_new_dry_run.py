"""The dry run that ends ``skillwire new`` and ``skillwire edit``: the skill's generated
scenarios (:func:`skillwire.builder.generate_scenarios`) are written beside it in
``dry_runs.yaml`` and run offline, each on its script, through the real engine.

:func:`run_scenarios` is the one place that runs them; when ``skillwire test`` and a
skill's ``tests:`` section exist, it is the call to switch to that runner.
"""

from __future__ import annotations

import asyncio
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from skillwire.builder import Session
    from skillwire.skills import Skill

__all__ = ["ScenarioResult", "dry_run_skill", "run_scenarios"]

DRY_RUNS_FILE = "dry_runs.yaml"


@dataclass(frozen=True, slots=True)
class ScenarioResult:
    """How one scenario ended, against what it expected."""

    id: str
    passed: bool
    detail: str


def run_scenarios(skill: Skill, tests: list[dict[str, Any]]) -> list[ScenarioResult]:
    """Run each scenario on its script, on a job database of its own that is thrown
    away; a scenario passes when the job's status and outcome are the expected ones and
    every scripted reply was used."""
    from skillwire.assembly import make_executors
    from skillwire.engine import Runtime
    from skillwire.store import SQLiteJobStore
    from skillwire.testing import ScriptedModel

    async def one(test: dict[str, Any], folder: Path) -> ScenarioResult:
        model = ScriptedModel(test["script"], name=test["id"])
        store = SQLiteJobStore(folder / f"{len(list(folder.iterdir()))}.db")
        runtime = Runtime(store, model, executors=make_executors())
        try:
            job = await runtime.start(skill, test["message"])
        finally:
            await runtime.aclose()
            await store.close()
        expect = test["expect"]
        status, outcome = str(job.record.status), str(job.record.outcome_class or "")
        problems = []
        if status != expect["status"]:
            problems.append(f"status {status}, expected {expect['status']}")
        if outcome != expect["outcome"]:
            problems.append(f"outcome {outcome}, expected {expect['outcome']}")
        if model.remaining:
            problems.append(f"{len(model.remaining)} scripted replies were not used")
        detail = "; ".join(problems) or f"{status} {outcome}"
        return ScenarioResult(test["id"], not problems, detail)

    async def every() -> list[ScenarioResult]:
        with tempfile.TemporaryDirectory(prefix="skillwire-dry-run-") as temp:
            return [await one(test, Path(temp)) for test in tests]

    return asyncio.run(every())


def dry_run_skill(path: Path, session: Session) -> bool:
    """Generate the scenarios of the skill at ``path``, write them beside it, run them,
    and say how each ended. True when every one passed."""
    from skillwire.builder import generate_scenarios
    from skillwire.builder.yaml_text import dump_yaml, to_yaml_data, write_text_atomic
    from skillwire.skills import load_skill

    skill = load_skill(path)
    generated = generate_scenarios(skill)
    target = path.parent / DRY_RUNS_FILE
    write_text_atomic(target, dump_yaml(to_yaml_data(generated.document(skill.id))))
    session.say(f"dry run: {len(generated.tests)} scenarios, written to {target}", "note")
    for reason in generated.skipped:
        session.say(f"  no scenario for {reason}", "warning")
    results = run_scenarios(skill, generated.tests)
    for result in results:
        mark = "pass" if result.passed else "FAIL"
        session.say(f"  {mark} {result.id}: {result.detail}", "ok" if result.passed else "error")
    failed = sum(1 for r in results if not r.passed)
    session.say(
        f"dry run: {len(results) - failed} passed, {failed} failed",
        "ok" if not failed else "error",
    )
    return failed == 0
