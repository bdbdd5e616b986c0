"""The whole authoring flow over a draft: start it, import tools, run the interview
(all phases, or only what the assistant's draft lacks), and write it with its diff."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
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
from skillwire.builder.yaml_text import plain
from skillwire.skills.loader_single import derive_id

__all__ = ["PHASES", "add_tools", "finish", "interview", "open_draft"]

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


def add_tools(session: Session, tools: Iterable[Mapping[str, Any]]) -> None:
    """Add imported tools, each checked as any answer is."""
    for tool in tools:
        session.apply(partial(edits.add_tool, tool=dict(tool)), f"tool {tool.get('name')}")


def interview(session: Session, phases: Sequence[Phase] = PHASES) -> None:
    """Run the interview's phases over the session's draft."""
    run_phases(session, phases)


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


def intent_ids(draft: Draft) -> list[str]:
    """The ids of the draft's intents."""
    data = plain(draft.data)
    supported = (data.get("intents") or {}).get("supported") or []
    return [str(i.get("id")) for i in supported if isinstance(i, dict)]
