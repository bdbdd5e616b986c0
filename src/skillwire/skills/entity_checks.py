"""The load report's word on intent entities whose keys are enforced only in part.

An entity's ``currency`` (a ``money`` entity) is enforced by the offline extractor,
which does not take an amount written in another currency; a value a language model
gives is a number and carries no currency, so the engine cannot check it. Declared
means enforced, or said not to be: this says so, as a warning with its line.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from skillwire.core.issues import Severity, SkillIssue
from skillwire.core.location import FieldPath, SourceLocation
from skillwire.skills.model import DomainFile

__all__ = ["entity_findings"]


def entity_findings(
    skill: DomainFile, locate: Callable[[FieldPath], SourceLocation]
) -> Iterator[SkillIssue]:
    """A warning for each ``currency`` the engine enforces only offline."""
    for ii, intent in enumerate(skill.intents.supported):
        for ei, entity in enumerate(intent.entities):
            if entity.currency is None:
                continue
            path: FieldPath = ("intents", "supported", ii, "entities", ei, "currency")
            yield SkillIssue(
                Severity.WARNING,
                f"entity {entity.name}: currency is checked by the offline extractor only "
                "(an amount written in another currency is not taken); a value a model "
                "gives is a number and carries no currency, so it is not checked",
                locate(path),
                path,
                code="currency-offline-only",
                hint="the intent prompt names the currency to the model",
            )
