"""The one implicit intent of a spec-003 package, which declares none.

A package (``ayati-skill/v1``) has no ``intents``: every message would be out of domain.
It gets one intent, named by the package's id, whose description is the package's
``description`` (else its ``title``) and whose examples are what its tools'
``selectionHints`` say they serve: ``examples``, ``aliases``, ``tags`` and ``domain``,
in tool order, each once. The load report says so (an info line), or warns when the
package gives nothing to match a message against.
"""

from __future__ import annotations

from collections.abc import Iterable

from skillwire.core.issues import Severity, SkillIssue
from skillwire.core.location import SourceLocation
from skillwire.skills.model_fields import Intent
from skillwire.skills.model_tools import Tool

__all__ = ["implicit_intent", "implicit_intent_finding"]


def implicit_intent(skill_id: str, description: str, tools: Iterable[Tool]) -> Intent:
    """The package's implicit intent (its id is the package's id)."""
    examples: list[str] = []
    for tool in tools:
        hints = tool.selectionHints
        if hints is None:
            continue
        for raw in (*hints.examples, *hints.aliases, *hints.tags, hints.domain or ""):
            text = raw.strip()
            if text and text not in examples:
                examples.append(text)
    return Intent(id=skill_id, description=description.strip(), examples=examples)


def implicit_intent_finding(intent: Intent, where: SourceLocation) -> SkillIssue:
    """The report's line about ``intent``: info, or a warning when it has no text."""
    if not intent.description and not intent.examples:
        return SkillIssue(
            Severity.WARNING,
            "the package declares no intents and gives no description or selectionHints: "
            "its one implicit intent matches no message, so every job is out of domain",
            where,
            ("intents",),
            code="implicit-intent",
            hint="give skill.json a description, or the tools selectionHints examples",
        )
    return SkillIssue(
        Severity.INFO,
        f"the package declares no intents: one implicit intent '{intent.id}' is built from "
        f"its description and {len(intent.examples)} selectionHints entries of its tools "
        "(a message like none of them is out of domain)",
        where,
        ("intents",),
        code="implicit-intent",
    )
