"""Running a skill's tests: ``skillwire test`` without the printing.

    report = run_suite([Path("examples")])            # offline, 60 s per command
    print(junit_xml(report))
    raise SystemExit(1 if report.failed else 0)

For each skill under the paths (:func:`skillwire.skills.load_paths`), every case of
:func:`skillwire.skills.suite` runs: a command scenario's commands as argv lists
(never a shell) in the skill's folder, each with a timeout; a dry run on a fresh
runtime (a temporary SQLite store of its own, the skill's executors, the offline model unless
the test is scripted or ``model`` names another); a manual case is listed, not run. A
skill that fails to load is a failed case of its own. Nothing here prints.

This is an assembling module (it builds stores, models and executors): packages do not
import it. Code inside the layers runs one dry run with
:func:`skillwire.engine.run_dry_run` on a runtime it was given.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal
from xml.etree import ElementTree

from skillwire.assembly import ModelChoice, choose_models, make_executors
from skillwire.config import SkillwireConfig, load_config, trust_policy
from skillwire.core.errors import ScriptError, SkillwireError, UsageError
from skillwire.engine import Runtime, run_dry_run
from skillwire.skills import load_paths
from skillwire.skills.model import Skill
from skillwire.skills.model_package import TestCommand
from skillwire.skills.report import LoadReport
from skillwire.skills.suite import CommandCase, DryRunCase, ManualCase, TestCase, cases_of
from skillwire.store import SQLiteJobStore

__all__ = [
    "DEFAULT_TIMEOUT",
    "CaseOutcome",
    "SuiteReport",
    "junit_xml",
    "run_command",
    "run_suite",
    "summary",
]

DEFAULT_TIMEOUT = 60.0
"""Seconds one command of a command scenario may run before it is stopped."""

_OUTPUT_KEPT = 2000
"""Characters of a failed command's output kept in the report."""

Verdict = Literal["pass", "fail", "manual"]


@dataclass
class CaseOutcome:
    """The result of one case."""

    skill: str
    """The skill's id (or its source, when it did not load)."""
    case: str
    """The case's id."""
    kind: Literal["command", "dry-run", "manual", "load"]
    """What the case is."""
    verdict: Verdict
    """``pass``, ``fail`` or ``manual`` (not run: a person runs it)."""
    title: str = ""
    details: list[str] = field(default_factory=list)
    """Why it failed; for a manual case, its steps and expectations; for a passing one,
    what was not checked."""
    seconds: float = 0.0
    location: str = ""
    """Where the case is written (file:line)."""


@dataclass
class SuiteReport:
    """Every case's outcome, and the load report of the skills found."""

    outcomes: list[CaseOutcome] = field(default_factory=list)
    load: LoadReport = field(default_factory=LoadReport)

    @property
    def failed(self) -> bool:
        """A case failed (a manual case never fails)."""
        return any(o.verdict == "fail" for o in self.outcomes)

    def count(self, verdict: Verdict) -> int:
        """How many cases have this verdict."""
        return sum(1 for o in self.outcomes if o.verdict == verdict)


def run_suite(
    paths: Iterable[Path | str],
    *,
    model: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    config: SkillwireConfig | None = None,
) -> SuiteReport:
    """Run every test of every skill under ``paths`` (see the module's text).

    ``model`` is the model of dry runs that are not scripted (``--model``: a configured
    name or ``scripted:FILE``; default the offline model). Raises :class:`UsageError`
    for a model that is not configured; a failing test never raises."""
    if timeout <= 0:
        raise UsageError("the timeout must be more than 0 seconds")
    config = config or load_config()
    loaded = load_paths(paths, trust=trust_policy(config))
    report = SuiteReport(load=loaded.report)
    for rep in loaded.report.skills:
        if not rep.loaded:
            first = rep.errors[0] if rep.errors else None
            report.outcomes.append(
                CaseOutcome(
                    rep.skill_id or rep.source,
                    "load",
                    "load",
                    "fail" if rep.errors else "pass",
                    "the skill loads",
                    [str(i) for i in rep.errors] or ["not loaded"],
                    location=str(first.location) if first else rep.source,
                )
            )
    with tempfile.TemporaryDirectory(prefix="skillwire-test-") as folder:
        for skill in loaded.skills.values():
            for case in cases_of(skill):
                # a store of its own: no case sees another's jobs (a once_per order
                # refunded by one case is not refused in the next)
                db = Path(folder) / f"jobs-{len(report.outcomes)}.db"
                report.outcomes.append(_run_case(skill, case, db, model, timeout, config))
    return report


def _run_case(
    skill: Skill,
    case: TestCase,
    db: Path,
    model: str | None,
    timeout: float,
    config: SkillwireConfig,
) -> CaseOutcome:
    started = time.perf_counter()
    where = str(case.location)
    if isinstance(case, ManualCase):
        details = [f"step: {s}" for s in case.steps] + [f"expected: {e}" for e in case.expected]
        return CaseOutcome(skill.id, case.id, "manual", "manual", case.title, details, 0.0, where)
    if isinstance(case, CommandCase):
        failures: list[str] = []
        for command in case.commands:
            failures += run_command(command, skill.root or Path.cwd(), timeout)
        notes = failures or [f"expected (not checked): {e}" for e in case.expected]
        verdict: Verdict = "fail" if failures else "pass"
        seconds = time.perf_counter() - started
        return CaseOutcome(skill.id, case.id, "command", verdict, case.title, notes, seconds, where)
    failures = asyncio.run(_dry_run(skill, case, db, model, config))
    notes = failures or [f"not checked: {u}" for u in case.unchecked]
    verdict = "fail" if failures else "pass"
    seconds = time.perf_counter() - started
    return CaseOutcome(skill.id, case.id, "dry-run", verdict, case.title, notes, seconds, where)


def run_command(command: TestCommand, folder: Path, timeout: float) -> list[str]:
    """Run one command (argv, no shell, standard input closed) in ``folder``; what is
    wrong with how it ended, or nothing. A non-zero exit is fine if it allows failure."""
    argv = [command.program, *command.args]
    shown = " ".join(argv)
    try:
        done = subprocess.run(  # an argv list, never a shell
            argv,
            cwd=folder,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return [f"{shown}: did not finish within {timeout:g} s (stopped)"]
    except FileNotFoundError:
        return [f"{shown}: no program {command.program!r} on PATH"]
    except OSError as exc:
        return [f"{shown}: could not start: {exc.strerror or exc}"]
    if done.returncode == 0 or command.allowFailure:
        return []
    output = (done.stderr or done.stdout).decode("utf-8", "replace").strip()
    tail = output[-_OUTPUT_KEPT:]
    return [f"{shown}: exit code {done.returncode}" + (f": {tail}" if tail else "")]


async def _dry_run(
    skill: Skill, case: DryRunCase, db: Path, model: str | None, config: SkillwireConfig
) -> list[str]:
    test = case.test
    try:
        choice = _model_for(skill, case, model, config)
    except (SkillwireError, ScriptError) as exc:
        return [f"the model could not be made: {exc}"]
    store = SQLiteJobStore(db)
    runtime = Runtime(
        store, choice.model, gate_model=choice.gate_model, executors=make_executors(config)
    )
    try:
        result = await run_dry_run(runtime, skill, test)
        failures = list(result.failures)
        if test.model == "scripted" and not failures:
            try:
                assert_complete = getattr(choice.model, "assert_complete")  # noqa: B009
                assert_complete()
            except ScriptError as exc:
                failures.append(f"the script has replies the job never asked for: {exc}")
        return failures
    finally:
        try:
            await runtime.aclose()
        finally:
            await store.close()


def _model_for(
    skill: Skill, case: DryRunCase, model: str | None, config: SkillwireConfig
) -> ModelChoice:
    """The test's script, else ``model``, else the offline model."""
    from skillwire.testing import ScriptedModel

    test = case.test
    if test.model != "scripted":
        return choose_models(model or "offline", config=config)
    if isinstance(test.script, list):
        scripted = ScriptedModel(test.script, name=f"{skill.id}:{test.id}")
    else:
        scripted = ScriptedModel.from_file(_inside(skill, str(test.script)))
    return ModelChoice(scripted, scripted, [])


def _inside(skill: Skill, name: str) -> Path:
    """The script file ``name`` of the skill's folder; never a file outside it."""
    root = (skill.root or Path.cwd()).resolve()
    path = (root / name).resolve()
    if os.path.commonpath([root, path]) != str(root):
        raise UsageError(f"the script {name!r} is outside the skill's folder {root}")
    if not path.is_file():
        raise UsageError(f"no script file {name!r} in {root}")
    return path


def junit_xml(report: SuiteReport) -> str:
    """The report as JUnit XML: a ``testsuite`` per skill, a ``testcase`` per case; a
    failure is a ``failure``, a manual case ``skipped``."""
    suites = ElementTree.Element("testsuites", name="skillwire test")
    by_skill: dict[str, list[CaseOutcome]] = {}
    for outcome in report.outcomes:
        by_skill.setdefault(outcome.skill, []).append(outcome)
    for skill, outcomes in by_skill.items():
        suite = ElementTree.SubElement(
            suites,
            "testsuite",
            name=_xml_text(skill),
            tests=str(len(outcomes)),
            failures=str(sum(1 for o in outcomes if o.verdict == "fail")),
            skipped=str(sum(1 for o in outcomes if o.verdict == "manual")),
            time=f"{sum(o.seconds for o in outcomes):.3f}",
        )
        for o in outcomes:
            case = ElementTree.SubElement(
                suite,
                "testcase",
                classname=_xml_text(f"{skill}.{o.kind}"),
                name=_xml_text(o.case),
                time=f"{o.seconds:.3f}",
                file=_xml_text(o.location),
            )
            text = _xml_text("\n".join(o.details))
            if o.verdict == "fail":
                first = o.details[0] if o.details else "failed"
                failure = ElementTree.SubElement(case, "failure", message=_xml_text(first[:500]))
                failure.text = text
            elif o.verdict == "manual":
                ElementTree.SubElement(case, "skipped", message="manual: run by a person")
                ElementTree.SubElement(case, "system-out").text = text
    ElementTree.indent(suites)
    body = ElementTree.tostring(suites, encoding="unicode")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + body + "\n"


def _xml_text(text: str) -> str:
    """``text`` without the characters XML 1.0 cannot hold (a command's output may have
    any byte): each becomes U+FFFD."""
    return "".join(c if _xml_char(c) else "\ufffd" for c in text)


def _xml_char(c: str) -> bool:
    code = ord(c)
    return (
        code in (0x9, 0xA, 0xD)
        or 0x20 <= code <= 0xD7FF
        or 0xE000 <= code <= 0xFFFD
        or 0x10000 <= code <= 0x10FFFF
    )


def summary(report: SuiteReport) -> str:
    """``N passed, N failed, N manual``."""
    return (
        f"{report.count('pass')} passed, {report.count('fail')} failed, "
        f"{report.count('manual')} manual"
    )
