"""The interview's machinery: questions, the prompter that asks them, and the session
that runs phases over a :class:`~skillwire.builder.draft.Draft`.

A phase asks its questions through :meth:`Session.ask`; ``<`` (or ``back``) as an answer
goes back to the phase before, whose changes are undone; ``?`` shows the draft's live
summary. An answer is applied with :meth:`Session.apply`: the loader checks the draft at
once, and an answer that brings an error is undone, its errors shown with their fixes,
and the question asked again. The prompter is a seam: the terminal one reads any text
stream (tests feed it lines), :class:`DefaultsPrompter` answers every question with its
default (``--yes``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Protocol

from ruamel.yaml.comments import CommentedMap

from skillwire.builder.draft import Draft
from skillwire.builder.summary import summarize
from skillwire.builder.tool_effects import ToolHints
from skillwire.core.issues import SkillIssue

__all__ = [
    "BACK_ANSWERS",
    "DefaultsPrompter",
    "Phase",
    "PhaseResult",
    "Prompter",
    "Question",
    "Session",
    "run_phases",
]

BACK_ANSWERS = frozenset({"<", "back"})
"""Answers that go back to the phase before."""
MAX_TRIES = 5
"""Answers refused in a row before a question is left (a stream of defaults that the
loader refuses never loops)."""
SUMMARY_ANSWERS = frozenset({"?", "summary"})
"""Answers that show the draft so far."""


@dataclass(frozen=True, slots=True)
class Question:
    """One question: its text, the choices when the answer is one of a few, a default."""

    text: str
    choices: tuple[str, ...] = ()
    """The allowed answers (the number of a choice is accepted too)."""
    default: str = ""
    """Given when the author just presses Enter."""
    note: str = ""
    """One line of help shown under the question."""


class Prompter(Protocol):
    """Who answers: a person at a terminal, a test's lines, or the defaults."""

    def ask(self, question: Question) -> str:
        """The raw answer (an empty string takes the default)."""
        ...

    def say(self, text: str, style: str = "") -> None:
        """Show a line (``style``: ``error``, ``ok``, ``note``, ``diff`` or none)."""
        ...


class DefaultsPrompter:
    """Answers every question with its default and says nothing (``--yes``), except
    that what it would show is kept in :attr:`lines`."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def ask(self, question: Question) -> str:
        """Always the default."""
        return ""

    def say(self, text: str, style: str = "") -> None:
        """Keep the line."""
        self.lines.append(text)


class PhaseResult(Enum):
    """How a phase ended."""

    DONE = "done"
    BACK = "back"


Phase = Callable[["Session"], PhaseResult]
"""A phase of the interview: asks its questions, changes the draft."""


@dataclass
class Session:
    """One interview over a draft."""

    draft: Draft
    prompter: Prompter
    description: str = ""
    """What the author said the agent is for (``--describe``), the source of defaults."""
    only_missing: bool = False
    """True after the assistant drafted: phases whose part is there are skipped."""
    notes: list[str] = field(default_factory=list)
    """What was said along the way (kept for reports and tests)."""
    tool_hints: dict[str, ToolHints] = field(default_factory=dict)
    """What the source of an imported tool says it does (an MCP server's annotations),
    by tool name: weighed when its policy is proposed."""

    def say(self, text: str, style: str = "") -> None:
        """Show a line to the author."""
        self.notes.append(text)
        self.prompter.say(text, style)

    def ask(self, question: Question) -> str | None:
        """The answer (the default for an empty one, a choice by its number too), or
        None when the author goes back. ``?`` shows the summary and asks again; an
        answer outside the choices is refused and asked again."""
        while True:
            raw = self.prompter.ask(question).strip()
            if raw.lower() in BACK_ANSWERS:
                return None
            if raw.lower() in SUMMARY_ANSWERS:
                self.say(summarize(self.draft), "note")
                continue
            answer = raw or question.default
            if not question.choices:
                return answer
            chosen = _choice(answer, question.choices)
            if chosen is not None:
                return chosen
            self.say(f"choose one of: {', '.join(question.choices)}", "error")
            if not raw:  # no default to fall back on: never loop on an empty stream
                return question.choices[0]

    def ask_list(self, question: Question, defaults: Sequence[str] = ()) -> list[str] | None:
        """Several answers, one per line, until an empty one; ``defaults`` when the
        first answer is empty. None when the author goes back."""
        items: list[str] = []
        while True:
            prompt = Question(
                f"{question.text} ({len(items) + 1}; empty line to finish)",
                note=question.note if not items else "",
                default=", ".join(defaults) if not items and defaults else "",
            )
            raw = self.prompter.ask(prompt).strip()
            if raw.lower() in BACK_ANSWERS:
                return None
            if raw.lower() in SUMMARY_ANSWERS:
                self.say(summarize(self.draft), "note")
                continue
            if not raw:
                return items if items else list(defaults)
            items.append(raw)

    def confirm(self, text: str, default: bool) -> bool | None:
        """Yes or no; None when the author goes back."""
        answer = self.ask(Question(text, ("yes", "no"), "yes" if default else "no"))
        return None if answer is None else answer == "yes"

    def repeat(
        self,
        text: str,
        default: bool | Callable[[], bool],
        one: Callable[[], PhaseResult | None],
    ) -> PhaseResult:
        """Ask ``text`` (yes or no; ``default``, or what it says of the draft as it is
        then) and run ``one`` after each yes, until a no (DONE). BACK when the author
        goes back at the question, or ``one`` returns BACK; ``one`` returns None to be
        asked again, or raises :class:`ValueError` saying what is wrong with an answer
        (it is shown, and the question asked again)."""
        while True:
            more = self.confirm(text, default() if callable(default) else default)
            if more is None:
                return PhaseResult.BACK
            if not more:
                return PhaseResult.DONE
            try:
                if one() is PhaseResult.BACK:
                    return PhaseResult.BACK
            except ValueError as exc:
                self.say(str(exc), "error")

    def settle(
        self,
        question: Question,
        change_for: Callable[[str], Callable[[CommentedMap], None]],
        what: str,
        keep: object = None,
    ) -> bool | None:
        """Ask until an answer is taken: True when one was, False when ``MAX_TRIES``
        answers were refused (the part is left out, and the author told so), None when
        the author goes back; an answer equal to ``keep`` (the value the draft has)
        changes nothing. ``change_for`` turns an answer into a change, or raises
        :class:`ValueError` with what is wrong with the answer."""
        for _ in range(MAX_TRIES):
            answer = self.ask(question)
            if answer is None:
                return None
            if keep is not None and answer == keep:
                return True  # unchanged: the file keeps its spelling and comments
            try:
                change = change_for(answer)
            except ValueError as exc:
                self.say(str(exc), "error")
                continue
            if self.apply(change, what.replace("{}", answer)):
                return True
        self.say(f"left out after {MAX_TRIES} refused answers: {question.text}", "error")
        return False

    def apply(self, change: Callable[[CommentedMap], None], what: str) -> bool:
        """Apply an answer; True when the draft took it. Otherwise its errors are shown,
        each with its fix, and the draft is as it was."""
        known = {str(w) for w in self.draft.last.warnings}
        errors = self.draft.update(change)
        if not errors:
            self.say(f"ok: {what}", "ok")
            for warning in self.draft.last.warnings:
                if str(warning) not in known:
                    self.say(_issue_line(warning), "warning")
            return True
        self.say(f"not taken: {what}", "error")
        for issue in errors:
            self.say(_issue_line(issue), "error")
        return False


def _issue_line(issue: SkillIssue) -> str:
    fix = f"\n    fix: {issue.hint}" if issue.hint else ""
    return f"  {issue.message}{fix}"


def _choice(answer: str, choices: Sequence[str]) -> str | None:
    if answer.isdigit() and 1 <= int(answer) <= len(choices):
        return choices[int(answer) - 1]
    lowered = answer.lower()
    for choice in choices:
        if choice.lower() == lowered:
            return choice
    return None


def run_phases(session: Session, phases: Sequence[Phase]) -> None:
    """Run ``phases`` in order; going back undoes the phase before and runs it again.
    After each phase the live summary is shown."""
    snapshots: list[str] = []
    index = 0
    while index < len(phases):
        if len(snapshots) <= index:
            snapshots.append(session.draft.snapshot())
        else:
            snapshots[index] = session.draft.snapshot()
        before = snapshots[index]
        result = phases[index](session)
        if result is PhaseResult.BACK:
            session.draft.restore(snapshots[index])
            if index > 0:
                index -= 1
                session.draft.restore(snapshots[index])
                del snapshots[index + 1 :]
            session.say("back", "note")
            continue
        if session.draft.snapshot() != before:
            session.say(summarize(session.draft), "note")
        index += 1
