"""The interview's "add another?" loops (Session.repeat): an answer a phase cannot read
is said and asked again, going back leaves the phase, a no ends it."""

from __future__ import annotations

from pathlib import Path

from ruamel.yaml import YAML

from skillwire.builder import PhaseResult, Question, Session, edits, open_draft
from skillwire.builder.phases_content import required_inputs_phase
from skillwire.builder.phases_tools import tools_phase, workflows_phase


class Lines:
    """Answers from a list; what is said is kept."""

    def __init__(self, answers: list[str]) -> None:
        self.answers = answers
        self.said: list[tuple[str, str]] = []

    def ask(self, question: Question) -> str:
        return self.answers.pop(0)

    def say(self, text: str, style: str = "") -> None:
        self.said.append((text, style))


def session(folder: Path, answers: list[str]) -> tuple[Session, Lines]:
    draft = open_draft(folder, new=True, description="Orders.")
    assert not draft.update(lambda r: edits.set_problem(r, "Orders"))
    assert not draft.update(lambda r: edits.add_intent(r, "intent_order", "Orders", ["Order"]))
    lines = Lines(answers)
    return Session(draft, lines), lines


def errors(lines: Lines) -> list[str]:
    return [text for text, style in lines.said if style == "error"]


def test_tools_refused_arguments_are_said_and_asked_again(tmp_path: Path) -> None:
    answers = ["yes", "look", "Looks", "1bad:string", "yes", "look", "Looks", "id:strng"]
    answers += ["yes", "look", "Looks", "id:string", "simulate", "no"]
    s, lines = session(tmp_path / "d", answers)
    assert tools_phase(s) is PhaseResult.DONE
    assert errors(lines) == [
        "'1bad' is not an argument name (letters, digits and _)",
        "type of id is one of string, number, integer, boolean, not 'strng'",
    ]
    data = YAML(typ="safe").load(s.draft.text())
    assert [t["name"] for t in data["tools"]] == ["look"]
    assert lines.answers == []


def test_a_workflow_of_one_step_and_a_bad_field_path_are_asked_again(tmp_path: Path) -> None:
    s, lines = session(tmp_path / "d", ["yes", "look", "<", "yes", "1x", "yes", "<"])
    assert workflows_phase(s) is PhaseResult.BACK  # "<" at the question, asked again
    assert required_inputs_phase(s) is PhaseResult.BACK  # "<" inside one item
    assert errors(lines) == [
        "a workflow orders at least two tools",
        "'1x' is not a field path (letters, digits, _ and dots)",
    ]
    assert lines.answers == []


def test_no_ends_the_loop_and_back_at_the_question_goes_back(tmp_path: Path) -> None:
    s, lines = session(tmp_path / "d", ["no", "<"])
    assert workflows_phase(s) is PhaseResult.DONE
    assert required_inputs_phase(s) is PhaseResult.BACK
    assert errors(lines) == []
