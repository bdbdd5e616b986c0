"""Typed fields shared by entities and tool inputs, and the intent section.

An entity or a tool input may declare a JSON-Schema-like ``type``, an ``enum``, a
``pattern`` and a description; :meth:`FieldSpec.json_schema` turns it into the JSON
Schema that arguments are validated against.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from skillwire.skills._base import SkillPart
from skillwire.skills.entity_types import ENTITY_TYPES, entity_schema, value_problem

__all__ = [
    "Entity",
    "EntityType",
    "FieldSpec",
    "FieldType",
    "Intent",
    "IntentThresholds",
    "Intents",
    "OutOfDomain",
]

FieldType = Literal["string", "number", "integer", "boolean", "array", "object"]


class FieldSpec(SkillPart):
    """A named, typed value: a tool input or an intent entity."""

    name: str = Field(min_length=1)
    """The field's name; tool arguments and entities are keyed by it."""
    type: FieldType = "string"
    """JSON type of the value. ``number`` accepts integers and decimals."""
    required: bool = False
    """Whether the value must be present before the tool runs (the platform asks for it)."""
    description: str = ""
    """What the value means; shown to the planner and in input prompts."""
    enum: list[Any] | None = None
    """The only values allowed."""
    pattern: str | None = None
    """A regular expression a string value must match (JSON Schema ``pattern``)."""
    default: Any = None
    """A value used when none is given."""
    examples: list[Any] = Field(default_factory=list)
    """Example values; the offline backend learns entity shapes from them."""
    minimum: float | None = None
    """Smallest number allowed."""
    maximum: float | None = None
    """Largest number allowed."""
    minLength: int | None = Field(default=None, ge=0)  # noqa: N815
    """Fewest characters a string value may have (``1``: ``""`` is refused; without
    it, ``""`` is a value like any other)."""
    maxLength: int | None = Field(default=None, ge=0)  # noqa: N815
    """Most characters a string value may have."""
    items: dict[str, Any] | None = None
    """JSON Schema of the items, for ``type: array``."""

    def json_schema(self) -> dict[str, Any]:
        """The JSON Schema (Draft 2020-12) this field's value must satisfy."""
        schema: dict[str, Any] = {"type": self.type}
        if self.description:
            schema["description"] = self.description
        if self.enum is not None:
            schema["enum"] = list(self.enum)
        if self.pattern is not None:
            schema["pattern"] = self.pattern
        if self.minimum is not None:
            schema["minimum"] = self.minimum
        if self.maximum is not None:
            schema["maximum"] = self.maximum
        if self.minLength is not None:
            schema["minLength"] = self.minLength
        if self.maxLength is not None:
            schema["maxLength"] = self.maxLength
        if self.items is not None:
            schema["items"] = self.items
        if self.default is not None:
            schema["default"] = self.default
        return schema


EntityType = Literal[
    "string",
    "number",
    "integer",
    "boolean",
    "array",
    "object",
    "list",
    "date",
    "date_range",
    "money",
]


class Entity(FieldSpec):
    """A value the intent detector extracts from the user's message."""

    type: EntityType = "string"  # type: ignore[assignment]
    """Type of the value: a JSON type, or ``list`` (several values, each of ``items``),
    ``date`` (ISO text, ``2026-03-14``), ``date_range`` (``{start, end}``) or ``money``
    (a number, ``$1,250.50`` is ``1250.5``); see :mod:`skillwire.skills.entity_types`."""
    currency: str | list[str] | None = None
    """For ``money``: the ISO 4217 code (``USD``), or codes, an amount may be written
    in; the offline extractor does not take an amount in another currency."""
    maxItems: int | None = Field(default=None, ge=1)  # noqa: N815
    """For ``list``: the most items the value may have (default 20)."""
    extract_from: str | list[str] | None = None
    """Where to look for the value (e.g. ``message``); informational."""

    @model_validator(mode="after")
    def _keys_of_its_type(self) -> Entity:
        if self.currency is not None and self.type != "money":
            raise ValueError(f"currency is for a money entity, not for type {self.type}")
        if self.maxItems is not None and self.type != "list":
            raise ValueError(f"maxItems is for a list entity, not for type {self.type}")
        codes = [self.currency] if isinstance(self.currency, str) else self.currency or []
        for code in codes:
            if len(code) != 3 or not code.isascii() or not code.isupper():
                raise ValueError(f"currency {code!r} is not an ISO 4217 code such as USD")
        return self

    def json_schema(self) -> dict[str, Any]:
        """The JSON Schema (Draft 2020-12) this entity's value must satisfy."""
        if self.type not in ENTITY_TYPES:
            return super().json_schema()
        return entity_schema(self.type, self.model_dump(exclude_none=True))

    def problem(self, value: Any) -> str | None:
        """What is wrong with ``value`` beyond its JSON Schema (a date not in the
        calendar, a range out of order, money with fractions of a cent), or None."""
        return value_problem(self.type, value)


class Intent(SkillPart):
    """Something a user may want from this skill."""

    id: str = Field(min_length=1)
    """Stable identifier, e.g. ``intent_refund``."""
    description: str = ""
    """What the user wants, in one sentence; used for intent detection."""
    examples: list[str] = Field(default_factory=list)
    """Messages that express this intent; used for intent detection."""
    entities: list[Entity] = Field(default_factory=list)
    """Values to extract from the message when this intent is detected."""
    maps_to_workflow: str | None = None
    """The workflow (by ``name`` or ``id``) that serves this intent: it applies to this
    intent's jobs (and, unless other intents map to it or it names ``intents``, to no
    other intent's)."""
    tools: list[str] | None = None
    """If set, only these tools may run for this intent (skillwire addition)."""


class OutOfDomain(SkillPart):
    """What to do with a message that matches no supported intent."""

    action: Literal["redirect", "reject", "escalate"] = "redirect"
    """``redirect`` answers with ``message``; ``reject`` refuses; ``escalate`` hands off."""
    message: str = ""
    """The reply given to an out-of-domain message."""
    suggest_domains: list[str] = Field(default_factory=list)
    """Other skills the user may want; appended to the reply."""


class IntentThresholds(SkillPart):
    """Confidence thresholds for intent detection, between 0 and 1."""

    accept: float | None = Field(default=None, ge=0, le=1)
    """At or above this confidence the intent is accepted."""
    clarify: float | None = Field(default=None, ge=0, le=1)
    """Between ``reject`` and ``accept`` the user is asked to clarify."""
    reject: float | None = Field(default=None, ge=0, le=1)
    """Below this confidence the message is out of domain."""


class Intents(SkillPart):
    """The intents a skill supports and what to do with everything else."""

    supported: list[Intent] = Field(default_factory=list)
    """The intents this skill serves."""
    out_of_domain: OutOfDomain | None = None
    """Behaviour for messages that match no intent."""
    out_of_skill: OutOfDomain | None = None
    """Alias of ``out_of_domain`` written by some authoring tools."""
    thresholds: IntentThresholds | None = None
    """Confidence thresholds for the detector."""

    def resolved_out_of_domain(self) -> OutOfDomain:
        """``out_of_domain``, else ``out_of_skill``, else the default redirect."""
        return self.out_of_domain or self.out_of_skill or OutOfDomain()
