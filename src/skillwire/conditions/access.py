"""What a condition reads of each variable: the fields it selects, or the whole value.

The grammar (:mod:`skillwire.conditions._grammar`) records, for each free name, how the
expression uses it. A value read only through field selections (``facts.total``,
``context.tier``) is read by those fields; one used any other way (compared, measured,
indexed, ranged over, passed to a function) is read whole. The checks of a skill's facts
use it (:meth:`~skillwire.conditions.CelCondition.fields_read`): a condition reading
``facts.total`` reads that fact, one reading ``facts`` whole cannot say which.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["Access", "AccessBuilder"]


@dataclass(frozen=True, slots=True)
class Access:
    """How an expression reads one value. Build with :class:`AccessBuilder`."""

    whole: bool = True
    """The value is used as a whole, not only through its fields."""
    fields: Mapping[str, Access] = field(default_factory=dict)
    """Fields selected from it, each with how it is read."""


_WHOLE = Access()


@dataclass(slots=True)
class AccessBuilder:
    """A mutable :class:`Access`, filled in while the grammar parses."""

    uses: int = 0
    """Uses of the value other than selecting a field of it."""
    fields: dict[str, AccessBuilder] = field(default_factory=dict)

    def field(self, name: str) -> AccessBuilder:
        """The builder of field ``name`` (selected from this value)."""
        found = self.fields.get(name)
        if found is None:
            found = self.fields[name] = AccessBuilder()
        return found

    def build(self) -> Access:
        """The finished, immutable :class:`Access`."""
        if self.uses or not self.fields:
            return _WHOLE
        return Access(False, {name: sub.build() for name, sub in self.fields.items()})
