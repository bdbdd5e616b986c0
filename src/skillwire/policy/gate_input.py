"""What the gate accepts: plain JSON values, and where a value that is not one sits.

A value is plain JSON when it is made of the exact JSON types (see
:mod:`skillwire.core.plainjson`, whose check this module uses): no subclass (an ``int``
whose ``__eq__`` says yes to everything would match any grant or key), no NaN or
infinity (``amount > inf`` is never true), no tuple, set or object, keys that are text,
text that is UTF-8 (no lone surrogate), integers within 64 bits, containers nested at
most :data:`MAX_DEPTH` deep.

What the caller keeps about the job (history, grants, context, entities, inputs, intent)
that is not plain JSON is a caller's bug: :class:`GateInputError` is raised, naming the
path (``history[1].result.total``). The proposal (tool, arguments, stated tool and
arguments, effects) comes from a model: a value in it that is not plain JSON blocks the
call instead (see :meth:`skillwire.policy.Gate.check`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, TypeGuard, TypeVar

from skillwire.core.errors import GateInputError
from skillwire.core.plainjson import plain_dumps
from skillwire.policy.call import ApprovalGrant, ToolRun

__all__ = [
    "MAX_DEPTH",
    "GateInputError",
    "as_mapping",
    "checked_correlations",
    "checked_grants",
    "checked_history",
    "checked_intents",
    "checked_mapping",
    "checked_texts",
    "not_plain",
    "plain_state",
    "shown",
]

MAX_DEPTH = 254
"""Containers nested deeper than this are refused (orjson's limit, which plain JSON
values share with the store)."""

_Marked = TypeVar("_Marked", ToolRun, ApprovalGrant)
"""A value the gate marks once it has found it plain JSON."""

_EMPTY: Mapping[str, Any] = {}
_LISTS = (list, tuple)
_COLLECTIONS = frozenset((list, tuple, set, frozenset))
"""Exact types of a collection of intents (any other is looked at more closely)."""
_NO_TEXTS: frozenset[str] = frozenset()
_EMPTY_TEXT = frozenset(("",))
"""The empty text, which is never an intent or a correlation id."""


def not_plain(value: Any, path: str) -> tuple[str, str] | None:
    """None when ``value`` is plain JSON; else where the first problem is (a path below
    ``path``) and what it is."""
    return None if plain_dumps(value) is not None else _where(value, path)


def _where(value: Any, path: str) -> tuple[str, str]:
    """Walk down to the first part that is not plain (called only for such a value):
    one path from the top, each step asking the plain-JSON check about the children."""
    for depth in range(MAX_DEPTH + 1):
        kind = type(value)
        if kind is dict:
            for key in value:
                if type(key) is not str:
                    return path, f"the key {shown(key)} is not text ({type(key).__name__})"
                if plain_dumps(key) is None:
                    return path, f"the key {_shown(key)} holds a lone surrogate (not UTF-8)"
            children = [(f"{path}{_field(k)}", v) for k, v in value.items()]
        elif kind is list:
            children = [(f"{path}[{i}]", v) for i, v in enumerate(value)]
        else:
            return path, _problem(value)
        if depth == MAX_DEPTH:
            break
        found = next(((p, v) for p, v in children if plain_dumps(v) is None), None)
        if found is None:  # each child is plain, so only the nesting is too deep
            break
        path, value = found
    return path, f"containers are nested deeper than {MAX_DEPTH} levels"


def _problem(value: Any) -> str:
    kind = type(value)
    if kind is float:
        return f"{value!r} is not a finite number"
    if kind is int:
        return f"an integer of {value.bit_length()} bits does not fit in 64 bits"
    if kind is str:
        return f"the text {_shown(value)} holds a lone surrogate (not UTF-8)"
    for base in (bool, int, float, str, dict, list):
        if isinstance(value, base):
            return f"{kind.__name__} is a subclass of {base.__name__}, not plain JSON"
    return f"{kind.__name__} is not a JSON type"


def _shown(text: str) -> str:
    return json.dumps(text[:40] + ("..." if len(text) > 40 else ""))


def shown(value: object) -> str:
    """``value`` as a message shows it: its ``repr``, cut to 40 characters. Never fails
    (Python refuses to print an integer past 4,300 digits; a caller's object may refuse
    too): then its type."""
    if type(value) is int and value.bit_length() > 128:
        return f"<an integer of {value.bit_length()} bits>"
    try:
        text = repr(value)
    except Exception:
        return f"<a {type(value).__name__}>"
    return text if len(text) <= 40 else text[:37] + "..."


def _field(key: str) -> str:
    return f".{key}" if key.isidentifier() else f"[{json.dumps(key)}]"


def as_mapping(value: Mapping[str, Any] | None, path: str) -> Mapping[str, Any]:
    """``value`` as a dict (None is empty; another kind of mapping is copied, and the gate
    reads the copy), or :class:`GateInputError`. Its values are not looked at."""
    if value is None:
        return _EMPTY
    if type(value) is not dict:
        if not isinstance(value, Mapping):
            raise GateInputError(path, f"expected a JSON object, got {type(value).__name__}")
        value = dict(value)
    return value


def checked_mapping(value: Mapping[str, Any] | None, path: str) -> Mapping[str, Any]:
    """:func:`as_mapping`, its values plain JSON, or :class:`GateInputError`."""
    value = as_mapping(value, path)
    if value and plain_dumps(value) is None:
        raise GateInputError(*_where(value, path))
    return value


def plain_state(
    context: Mapping[str, Any],
    entities: Mapping[str, Any],
    inputs: Mapping[str, Any],
    args: Mapping[str, Any],
) -> bool:
    """Whether the proposal's ``args`` are plain JSON, once the job's ``context``,
    ``entities`` and ``inputs`` are (else :class:`GateInputError`). One walk over all
    four in the common case where each is."""
    if plain_dumps([context, entities, inputs, args]) is not None:
        return True
    for path, part in (("context", context), ("entities", entities), ("inputs", inputs)):
        if part and plain_dumps(part) is None:
            raise GateInputError(*_where(part, path))
    return not args or plain_dumps(args) is not None  # (the list adds a level of nesting)


def checked_history(history: Sequence[ToolRun]) -> Sequence[ToolRun]:
    """``history``, every run a :class:`ToolRun` of plain JSON, or :class:`GateInputError`.

    A run found plain is marked and not walked again when it comes back (the engine and
    most callers pass the same runs on every call): a run's ``args`` and ``result`` are
    a record of what happened and must not be changed afterwards. A run whose ``args``
    is another kind of mapping than a dict is read as a copy.
    """
    if type(history) not in _LISTS:
        _sequence(history, "history")
    for run in history:
        if type(run) is not ToolRun or not run._plain:
            break
    else:
        return history  # every run seen before: the common case, kept cheap
    return _each_checked(history, ToolRun, _checked_run)


def _checked_run(run: object, i: int) -> ToolRun:
    """``run`` checked and marked (a copy when its ``args`` is not a dict), or
    :class:`GateInputError`."""
    if (
        type(run) is ToolRun
        and type(run.tool) is str
        and type(run.ok) is bool
        and type(run.args) is dict
        and plain_dumps([run.args, run.result]) is not None
    ):
        object.__setattr__(run, "_plain", True)  # one walk over both: the common case
        return run
    where = f"history[{i}]"
    if type(run) is not ToolRun:
        raise GateInputError(where, f"expected a ToolRun, got {type(run).__name__}")
    if type(run.tool) is not str:
        raise GateInputError(f"{where}.tool", f"expected text, got {type(run.tool).__name__}")
    if type(run.ok) is not bool:
        raise GateInputError(f"{where}.ok", f"expected a bool, got {type(run.ok).__name__}")
    args = checked_mapping(run.args, f"{where}.args")
    if plain_dumps([run.result]) is None:
        raise GateInputError(*_where(run.result, f"{where}.result"))
    if args is not run.args:
        run = ToolRun(run.tool, args, run.result, run.ok)
    object.__setattr__(run, "_plain", True)
    return run


def checked_grants(grants: Sequence[ApprovalGrant]) -> Sequence[ApprovalGrant]:
    """``grants``, each an :class:`ApprovalGrant` of plain JSON, or
    :class:`GateInputError`; marked as :func:`checked_history` marks runs."""
    if not grants:
        return grants
    if type(grants) not in _LISTS:
        _sequence(grants, "approvals")
    return _each_checked(grants, ApprovalGrant, _checked_grant)


def _each_checked(
    items: Sequence[_Marked], kind: type[_Marked], check: Callable[[object, int], _Marked]
) -> Sequence[_Marked]:
    """``items``, each of ``kind`` and marked plain (``check`` checks and marks the ones
    not marked yet); a copy only when ``check`` had to replace one."""
    copied: list[_Marked] | None = None
    for i, given in enumerate(items):
        item = given if type(given) is kind and given._plain else check(given, i)
        if item is not given and copied is None:
            copied = list(items[:i])
        if copied is not None:
            copied.append(item)
    return items if copied is None else copied


def _checked_grant(grant: object, i: int) -> ApprovalGrant:
    where = f"approvals[{i}]"
    if type(grant) is not ApprovalGrant:
        raise GateInputError(where, f"expected an ApprovalGrant, got {type(grant).__name__}")
    for name in ("tool", "role"):
        text = getattr(grant, name)
        if type(text) is not str:
            raise GateInputError(f"{where}.{name}", f"expected text, got {type(text).__name__}")
    if not _utf8(grant.correlation_id):
        raise GateInputError(f"{where}.correlation_id", "expected UTF-8 text")
    if type(grant.consumed) is not bool:
        raise GateInputError(
            f"{where}.consumed", f"expected a bool, got {type(grant.consumed).__name__}"
        )
    args = checked_mapping(grant.args, f"{where}.args")
    if args is not grant.args:
        grant = ApprovalGrant(grant.tool, args, grant.role, grant.correlation_id, grant.consumed)
    object.__setattr__(grant, "_plain", True)
    return grant


def checked_correlations(ids: Sequence[str] | None) -> frozenset[str] | None:
    """The correlation ids a caller passes to the gate, as a set (one text is one id,
    not its letters), or :class:`GateInputError`. The empty id is never one."""
    if ids is None:
        return None
    if type(ids) is str:
        return frozenset({ids} - {""})
    if type(ids) not in _LISTS:
        _sequence(ids, "correlation_ids")
    if not ids:
        return _NO_TEXTS  # a fresh proposal's: the common case
    for i, given in enumerate(ids):
        if type(given) is not str:
            raise GateInputError(
                f"correlation_ids[{i}]", f"expected text, got {type(given).__name__}"
            )
    return frozenset(ids) - _EMPTY_TEXT


def _sequence(value: object, path: str) -> None:
    if not isinstance(value, Sequence) or isinstance(value, str | bytes):
        raise GateInputError(path, f"expected a list, got {type(value).__name__}")


def checked_intents(intent: object, intents: object) -> frozenset[str]:
    """The job's active intents: ``intents`` (one text is one intent, not its letters)
    and ``intent`` when given, each UTF-8 text, or :class:`GateInputError`. The empty
    text is never an intent."""
    if intent is None and (type(intents) is tuple or type(intents) is list):
        for given in intents:
            if type(given) is not str or not given.isascii():
                break  # looked at one by one below
        else:  # a list of ASCII texts (UTF-8 holds them all): the common case
            found: frozenset[str] = frozenset(intents)
            return found - _EMPTY_TEXT if "" in found else found
    active: set[str] = set()
    if intent is not None:
        if not _utf8(intent):
            raise GateInputError("intent", f"expected UTF-8 text, got {shown(intent)}")
        active.add(intent)
    if type(intents) is str:
        intents = (intents,)
    if intents:
        if not _collection(intents):
            raise GateInputError("intents", f"expected a list, got {type(intents).__name__}")
        for i, given in enumerate(intents):
            if not _utf8(given):
                raise GateInputError(f"intents[{i}]", f"expected UTF-8 text, got {shown(given)}")
            active.add(given)
    return frozenset(active - {""})


def _collection(value: object) -> TypeGuard[Collection[object]]:
    """Whether ``value`` is a collection and not a mapping (a list, a tuple or a set is
    known by its exact type, without asking the ABCs)."""
    return type(value) in _COLLECTIONS or (
        not isinstance(value, Mapping) and isinstance(value, Collection)
    )


def _utf8(value: object) -> TypeGuard[str]:
    """Whether ``value`` is exactly a ``str`` that UTF-8 can hold (no lone surrogate);
    ASCII text is, and CPython knows it without a walk."""
    return type(value) is str and (value.isascii() or plain_dumps(value) is not None)


def checked_texts(texts: object) -> tuple[str, ...]:
    """The user's texts a caller passes to the gate, as a tuple (one text is one text,
    not its letters), each UTF-8 text, or :class:`GateInputError`."""
    if type(texts) is str:
        texts = (texts,)
    if type(texts) is tuple or type(texts) is list:
        for text in texts:
            if type(text) is not str or not text.isascii():
                break  # looked at one by one below
        else:  # ASCII texts (UTF-8 holds them all): the common case
            return tuple(texts)
    if (type(texts) is tuple or type(texts) is list) and all(type(t) is str for t in texts):
        found: tuple[str, ...] = tuple(texts)
    else:
        if isinstance(texts, Mapping) or not isinstance(texts, Sequence):
            raise GateInputError("user_texts", f"expected a list, got {type(texts).__name__}")
        for i, given in enumerate(texts):
            if type(given) is not str:
                raise GateInputError(f"user_texts[{i}]", f"expected text, got {shown(given)}")
        found = tuple(texts)
    for i, text in enumerate(found):
        if not text.isascii() and plain_dumps(text) is None:
            raise GateInputError(f"user_texts[{i}]", "the text holds a lone surrogate (not UTF-8)")
    return found
