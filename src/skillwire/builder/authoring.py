"""The whole authoring flow over a draft: start it, import tools, run the interview
(all phases, or only what the assistant's draft lacks), put the generated dry-run
scenarios in its ``tests:``, and write it with its diff."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

from skillwire.builder import edits
from skillwire.builder.draft import Draft
from skillwire.builder.interview import Phase, Session, run_phases
from skillwire.builder.phases_content import (
    intents_phase,
    output_phase,
    persona_phase,
    problem_phase,
    required_inputs_phase,
    scenarios_phase,
)
from skillwire.builder.phases_tools import (
    approvals_phase,
    policies_phase,
    tools_phase,
    workflows_phase,
)
from skillwire.builder.python_tools import ImportedTools
from skillwire.builder.scenarios import GeneratedScenarios, generate_scenarios
from skillwire.builder.yaml_text import plain
from skillwire.skills.loader_single import derive_id

__all__ = ["PHASES", "add_dry_run_tests", "add_tools", "finish", "interview", "open_draft"]

PHASES: tuple[Phase, ...] = (
    problem_phase,
    scenarios_phase,
    intents_phase,
    tools_phase,
    policies_phase,
    approvals_phase,
    workflows_phase,
    required_inputs_phase,
    output_phase,
    persona_phase,
)
"""The interview's phases, in order."""


def open_draft(folder: Path, *, new: bool, description: str = "") -> Draft:
    """The draft of the skill in ``folder``: a new one gets an id (from the folder's
    name), a name and a description; an existing one is read as it is."""
    draft = Draft(folder)
    if new and not draft.exists:
        skill_id = derive_id(draft.path)
        name = skill_id.replace("-", " ").capitalize()
        draft.update(lambda root: edits.set_identity(root, skill_id, name, description))
    return draft


def add_tools(session: Session, imported: ImportedTools) -> None:
    """Add imported tools, each checked as any answer is, and what their source says
    they do (for their proposed policies). A tool whose name the draft has already is
    left as the draft has it (its policy and comments stay), and said."""
    session.tool_hints.update(imported.hints)
    for tool in imported.tools:
        name = tool.get("name")
        if any(isinstance(t, dict) and t.get("name") == name for t in _tools(session.draft)):
            session.say(f"left out: tool {name}: the skill has a tool of that name", "warning")
            continue
        session.apply(partial(edits.add_tool, tool=dict(tool)), f"tool {name}")


def interview(session: Session, phases: Sequence[Phase] = PHASES) -> None:
    """Run the interview's phases over the session's draft."""
    run_phases(session, phases)


def add_dry_run_tests(session: Session) -> GeneratedScenarios | None:
    """Generate the dry-run scenarios of the draft (:func:`generate_scenarios`) and put
    them in its ``tests:`` section, where ``skillwire test`` runs them: a test of the
    same id is replaced (the diff before the write shows it), the skill's other tests
    are kept. None while the draft does not load (there is no skill to generate from)."""
    check = session.draft.check()
    if not check.loads or check.skill is None:
        return None
    generated = generate_scenarios(check.skill)
    for reason in generated.skipped:
        session.say(f"no scenario for {reason}", "warning")
    if generated.tests:
        change = partial(edits.set_tests, tests=generated.tests)
        session.apply(change, f"{len(generated.tests)} generated scenarios in tests:")
    return generated


def finish(session: Session, *, confirm: bool) -> Path | None:
    """Show what is still wrong (nothing is written then), the warnings and the diff;
    write when the author agrees (``confirm`` False writes without asking)."""
    draft = session.draft
    check = draft.check()
    if not check.loads:
        session.say("the draft does not load yet, nothing written:", "error")
        for issue in check.errors:
            fix = f" (fix: {issue.hint})" if issue.hint else ""
            session.say(f"  {issue.message}{fix}", "error")
        return None
    for warning in check.warnings:
        session.say(f"warning: {warning}", "warning")
    diff = draft.diff()
    if not diff:
        session.say(f"{draft.display} is unchanged", "note")
        return draft.path
    session.say(diff, "diff")
    if confirm:
        agreed = session.confirm(f"Write {draft.display}?", default=True)
        if not agreed:
            session.say("nothing written", "note")
            return None
    path = draft.write()
    session.say(f"wrote {path}", "ok")
    return path


def _tools(draft: Draft) -> list[Any]:
    tools = plain(draft.data).get("tools")
    return tools if isinstance(tools, list) else []


def intent_ids(draft: Draft) -> list[str]:
    """The ids of the draft's intents."""
    data = plain(draft.data)
    supported = (data.get("intents") or {}).get("supported") or []
    return [str(i.get("id")) for i in supported if isinstance(i, dict)]
