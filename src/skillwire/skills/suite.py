"""The tests a loaded skill carries, as one flat list of cases to run or to read.

Three sources, in this order:

- ``tests.json`` of a package: a ``type: command`` scenario is a :class:`CommandCase`
  (its ``commands[]``, run as argv lists, never through a shell); a ``manual`` one is a
  :class:`ManualCase` (listed with its steps and expectations, never run).
- ``scenarios[]`` of a single-file skill, as authoring tools write them (``{id, title,
  description, steps[], expected_outcome}``): a scenario with a step that gives the
  user's words (``User: ...`` or ``Customer: ...``) is a :class:`DryRunCase` whose end
  is checked only where ``expected_outcome`` names an outcome class as a word
  (``APPROVAL_REQUIRED``); other prose is shown as not checked. Without such a step the
  scenario is a :class:`ManualCase`.
- the skill's own ``tests:`` section (:class:`~skillwire.skills.model_tests.DryRunTest`):
  each is a :class:`DryRunCase`.

This module only reads; running is the caller's (``skillwire.skilltests`` for the
command line, ``skillwire.engine.run_dry_run`` for one dry run on a given runtime).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from skillwire.core.location import SourceLocation
from skillwire.skills.model import Skill
from skillwire.skills.model_package import TestCommand
from skillwire.skills.model_tests import DryRunExpect, DryRunTest

__all__ = [
    "OUTCOME_WORDS",
    "CommandCase",
    "DryRunCase",
    "ManualCase",
    "TestCase",
    "cases_of",
]

OUTCOME_WORDS = frozenset(
    {
        "SUCCESS",
        "USER_ACTION_REQUIRED",
        "APPROVAL_REQUIRED",
        "OPERATOR_ACTION_REQUIRED",
        "OUT_OF_DOMAIN",
        "ENGINE_BUDGET_EXHAUSTED",
        "FINALIZATION_FAILED",
        "INTERNAL_ERROR",
        "BLOCKED",
        "DENIED",
        "TOOL_FAILED",
        "MODEL_UNAVAILABLE",
    }
)
"""Outcome classes a scenario's ``expected_outcome`` may name (as whole words)."""

_USER_PREFIXES = ("user:", "customer:", "user says:", "customer says:")


@dataclass(frozen=True)
class CommandCase:
    """A ``tests.json`` scenario of ``type: command``: every command must exit 0 unless
    it allows failure; ``expected`` is prose, shown to the reader."""

    __test__ = False  # not a pytest class

    id: str
    title: str
    commands: tuple[TestCommand, ...]
    expected: tuple[str, ...]
    preconditions: tuple[str, ...]
    location: SourceLocation


@dataclass(frozen=True)
class ManualCase:
    """A test a person runs: listed with its steps and expectations, never run."""

    __test__ = False  # not a pytest class

    id: str
    title: str
    steps: tuple[str, ...]
    expected: tuple[str, ...]
    location: SourceLocation


@dataclass(frozen=True)
class DryRunCase:
    """A dry run of the skill; ``unchecked`` says what of it is prose, not checked."""

    __test__ = False  # not a pytest class

    id: str
    title: str
    test: DryRunTest
    location: SourceLocation
    unchecked: tuple[str, ...] = field(default=())


TestCase = CommandCase | ManualCase | DryRunCase
"""One case of a skill's tests."""


def cases_of(skill: Skill) -> list[TestCase]:
    """Every test ``skill`` carries: ``tests.json`` scenarios, ``scenarios[]``, ``tests:``."""
    cases: list[TestCase] = []
    if skill.tests_file is not None:
        for i, sc in enumerate(skill.tests_file.scenarios):
            where = skill.locate(("tests_file", "scenarios", i))
            ident = sc.id or f"scenario-{i + 1}"
            if sc.type == "command" and sc.commands:
                cases.append(
                    CommandCase(
                        ident,
                        sc.title or sc.goal,
                        tuple(sc.commands),
                        tuple(sc.expected),
                        tuple(sc.preconditions),
                        where,
                    )
                )
            else:
                cases.append(
                    ManualCase(
                        ident, sc.title or sc.goal, tuple(sc.steps), tuple(sc.expected), where
                    )
                )
    for i, raw in enumerate(skill.scenarios):
        cases.append(_scenario_case(raw, i, skill.locate(("scenarios", i))))
    for i, test in enumerate(skill.tests):
        cases.append(DryRunCase(test.id, test.title, test, skill.locate(("tests", i))))
    return cases


def _scenario_case(raw: Any, index: int, where: SourceLocation) -> TestCase:
    """A real file's scenario: a dry run when a step gives the user's words."""
    data = raw if isinstance(raw, dict) else {}
    ident = str(data.get("id") or f"scenario-{index + 1}")
    title = str(data.get("title") or data.get("description") or "")
    steps = [str(s) for s in data.get("steps") or [] if isinstance(s, str | int | float)]
    expected = str(data.get("expected_outcome") or "").strip()
    message = next((m for m in map(_user_words, steps) if m), None)
    if message is None:
        return ManualCase(ident, title, tuple(steps), (expected,) if expected else (), where)
    outcome = next((w for w in _words(expected) if w in OUTCOME_WORDS), None)
    test = DryRunTest(
        id=ident if _is_id(ident) else f"scenario-{index + 1}",
        title=title,
        message=message,
        expect=DryRunExpect(outcome=outcome),
    )
    unchecked = () if outcome or not expected else (expected,)
    extra = [s for s in steps if _user_words(s) is None]
    return DryRunCase(ident, title, test, where, unchecked + tuple(extra))


def _user_words(step: str) -> str | None:
    """The user's words of a step ``User: ...`` (quotes stripped), else None."""
    text = step.strip()
    low = text.lower()
    for prefix in _USER_PREFIXES:
        if low.startswith(prefix):
            words = text[len(prefix) :].strip().strip("\"'\u201c\u201d").strip()
            return words or None
    return None


def _words(text: str) -> list[str]:
    """The words of ``text``: runs of letters, digits and ``_`` (no regular expression)."""
    out: list[str] = []
    current: list[str] = []
    for ch in text:
        if ch.isalnum() or ch == "_":
            current.append(ch)
        elif current:
            out.append("".join(current))
            current = []
    if current:
        out.append("".join(current))
    return out


def _is_id(text: str) -> bool:
    return bool(text) and text[0].isalnum() and all(c.isalnum() or c in "_.-" for c in text)
