"""What a condition reads of each variable, so that CEL is given only that.

The CEL extension converts every Python value it is given, at about 1 to 3 microseconds
per string, number or map, on every evaluation. A condition over a job's ``history``
(a list of tool runs with their arguments and results) would convert all of it to read
one field of one run. The grammar (:mod:`skillwire.conditions._grammar`) therefore
records, for each variable, how the expression uses it, and :meth:`Access.narrow` cuts
the value down before evaluation:

* a map read only through field selections (``context.tier``, ``h.result.total``) keeps
  only the fields named; a map used any other way (compared, measured, indexed, passed
  to a function) is kept whole;
* a list read only as the receiver of ``exists``, ``all`` or ``exists_one`` keeps its
  elements, each narrowed the same way; ``size()`` of it keeps every element;
* when such a list is read by exactly one of those macros and not measured, elements the
  macro cannot count are dropped: for ``exists`` and ``exists_one``, an element for which
  a top-level conjunct ``x.f == 'text'`` is false; for ``all``, one for which a
  top-level disjunct ``x.f != 'text'`` is true. CEL's ``&&`` and ``||`` are commutative
  over errors (``false && error`` is ``false``), so such an element contributes exactly
  nothing, error or not, and the answer is the same. An element is dropped only when
  the field is present and is a string different from ``'text'``;
* when only ``exists`` and ``all`` read such a list (no ``exists_one``, no ``size()``)
  and its elements are narrowed, a narrowed element identical to an earlier one is
  dropped: its body gives the same answer (or error) as the earlier one, which has
  already counted.

Narrowing never changes an answer: a field the expression selects is kept whenever it is
present (so a missing field is still missing, and ``has()`` still sees it), and a value
of a type other than the one the expression reads through (a list where a map was
expected) is passed unchanged, so CEL reports the same error. A property test checks
answers and errors against CEL on the whole values.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Access", "AccessBuilder", "Match"]

Match = tuple[tuple[str, ...], str]
"""A field path in an element and the text it is compared with."""


@dataclass(frozen=True, slots=True)
class Access:
    """How an expression reads one value. Build with :class:`AccessBuilder`."""

    whole: bool = True
    """The value is used as a whole: it is passed unchanged."""
    fields: Mapping[str, Access] = field(default_factory=dict)
    """Fields selected from it (a map), each with how it is read."""
    each: Access | None = None
    """How each element is read, when the value is only a macro's receiver (a list)."""
    sized: bool = False
    """``size()`` of it is taken: every element counts."""
    keep: tuple[Match, ...] | None = None
    """Elements that can count must not have one of these fields set to other text."""
    unique: bool = False
    """Narrowed elements identical to an earlier one can be dropped."""

    def narrow(self, value: Any) -> Any:
        """``value`` cut down to what the expression reads (``value`` itself if whole)."""
        if self.whole:
            return value
        kind = type(value)
        each = self.each
        if each is None:
            if kind is dict and not self.sized:
                return {
                    name: sub.narrow(value[name])
                    for name, sub in self.fields.items()
                    if name in value
                }
            return value
        if self.fields or (kind is not list and kind is not tuple):
            return value
        keep = self.keep
        if keep is None:
            items = [each.narrow(item) for item in value]
        else:
            items = [each.narrow(item) for item in value if _may_count(item, keep)]
        return _first_of_each(items) if self.unique and len(items) > 1 else items


def _first_of_each(items: list[Any]) -> list[Any]:
    """``items`` without those identical to an earlier one (same ``repr``: same types,
    same values, same key order)."""
    seen: set[str] = set()
    kept = []
    for item in items:
        text = repr(item)
        if text not in seen:
            seen.add(text)
            kept.append(item)
    return kept


def _may_count(item: Any, keep: tuple[Match, ...]) -> bool:
    """False when one of ``keep``'s fields is present in ``item`` as different text."""
    for path, text in keep:
        found = item
        for name in path:
            if type(found) is not dict or name not in found:
                found = None
                break
            found = found[name]
        if type(found) is str and found != text:
            return False
    return True


_WHOLE = Access()


@dataclass(slots=True)
class AccessBuilder:
    """A mutable :class:`Access`, filled in while the grammar parses."""

    uses: int = 0
    """Uses of the value as a whole."""
    sizes: int = 0
    """``size()`` calls on it."""
    fields: dict[str, AccessBuilder] = field(default_factory=dict)
    each: AccessBuilder | None = None
    macros: int = 0
    """How many ``exists`` / ``all`` / ``exists_one`` macros range over it."""
    counted: bool = False
    """An ``exists_one`` ranges over it (it counts duplicates)."""
    keep: tuple[Match, ...] = ()

    def field(self, name: str) -> AccessBuilder:
        """The builder of field ``name`` (selected from this value)."""
        found = self.fields.get(name)
        if found is None:
            found = self.fields[name] = AccessBuilder()
        return found

    def element(self) -> AccessBuilder:
        """The builder of this value's elements (it is a macro's receiver)."""
        if self.each is None:
            self.each = AccessBuilder()
        return self.each

    def ranged(self, macro: str, keep: tuple[Match, ...]) -> None:
        """One more ``exists`` / ``all`` / ``exists_one`` ranges over this value;
        ``keep`` is what its elements must not contradict to count."""
        self.macros += 1
        self.counted = self.counted or macro == "exists_one"
        self.keep = keep

    def build(self) -> Access:
        """The finished, immutable :class:`Access`."""
        if self.uses or (self.fields and (self.each is not None or self.sizes)):
            return _WHOLE
        if self.each is not None:
            keep = self.keep if self.macros == 1 and not self.sizes and self.keep else None
            each = self.each.build()
            unique = not self.sizes and not self.counted and not each.whole
            if each.whole and keep is None:
                return _WHOLE
            return Access(False, each=each, sized=bool(self.sizes), keep=keep, unique=unique)
        if self.fields:
            fields = {name: sub.build() for name, sub in self.fields.items()}
            return Access(False, fields=fields)
        return _WHOLE  # only measured, or never read: nothing to cut
