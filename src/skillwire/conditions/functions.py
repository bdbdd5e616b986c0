"""The helper functions conditions and facts may call, besides CEL's own.

Pure functions of their arguments (the same Python function answers in the fast path
and in CEL, so both give the same value; a function that cannot answer raises
:class:`HelperError` and the condition fails closed):

* ``sum(list)``, ``min(list)``, ``max(list)``: of a list of numbers (``min`` and ``max``
  of an empty list cannot answer; ``sum`` of one is 0); ``count(list)``: its length;
* ``normalize(text)``: the text folded (Unicode NFKC and case folding, as provenance
  compares texts) with runs of white space made one space and the ends trimmed;
* ``days_between(a, b)``: the days from ``a`` to ``b`` (a decimal number, negative when
  ``b`` is earlier), each a timestamp or an ISO 8601 text (a date alone is midnight
  UTC; a time without an offset is UTC).

``latest(tool)`` and ``latest(tool, match)`` read the job's history
(:class:`Runs`, under :data:`RUNS_KEY`): the most recent run of ``tool`` (its full or
local name) whose arguments, or whose result, hold every key of the map ``match`` with
an equal value; null when there is none. The run is ``{tool, args, result, ok}``.
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Final, Protocol, overload

from skillwire.conditions.provenance import fold
from skillwire.core.errors import ControlFlowSignal

__all__ = [
    "HELPERS",
    "RUNS_KEY",
    "HelperError",
    "History",
    "Run",
    "Runs",
    "count",
    "days_between",
    "normalize",
]

RUNS_KEY: Final = "$runs"
"""The key under which a condition's variables hold the job's :class:`Runs`."""


class HelperError(ControlFlowSignal, ValueError):
    """A helper cannot answer for these values; the condition fails closed."""


class Run(Protocol):
    """A tool run as the gate keeps it (:class:`skillwire.policy.ToolRun`)."""

    @property
    def tool(self) -> str: ...

    @property
    def args(self) -> Mapping[str, Any]: ...

    @property
    def result(self) -> Any: ...

    @property
    def ok(self) -> bool: ...


def _numbers(values: Any, name: str) -> list[int | float]:
    if type(values) not in _LISTS:
        raise HelperError(f"{name}() takes a list, not {type(values).__name__}")
    for value in values:
        if type(value) not in (int, float) or (type(value) is float and not math.isfinite(value)):
            raise HelperError(f"{name}() takes numbers, not {type(value).__name__}")
    return list(values)


def total(values: Any) -> int | float:
    """``sum(list)``."""
    return sum(_numbers(values, "sum"))


def least(values: Any) -> int | float:
    """``min(list)``."""
    numbers = _numbers(values, "min")
    if not numbers:
        raise HelperError("min() of an empty list")
    return min(numbers)


def most(values: Any) -> int | float:
    """``max(list)``."""
    numbers = _numbers(values, "max")
    if not numbers:
        raise HelperError("max() of an empty list")
    return max(numbers)


def count(values: Any) -> int:
    """``count(list)``: the number of elements."""
    if type(values) not in _LISTS:
        raise HelperError(f"count() takes a list, not {type(values).__name__}")
    return len(values)


def normalize(text: Any) -> str:
    """``normalize(text)``."""
    if type(text) is not str:
        raise HelperError(f"normalize() takes text, not {type(text).__name__}")
    return " ".join(fold(text).split())


def _moment(value: Any) -> datetime.datetime:
    if isinstance(value, datetime.datetime):
        moment = value
    elif type(value) is str:
        try:
            moment = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise HelperError(f"days_between(): {value!r} is not an ISO 8601 date") from None
    else:
        raise HelperError(f"days_between() takes timestamps, not {type(value).__name__}")
    return moment if moment.tzinfo else moment.replace(tzinfo=datetime.UTC)


def days_between(start: Any, end: Any) -> float:
    """``days_between(a, b)``."""
    return (_moment(end) - _moment(start)).total_seconds() / 86400


HELPERS: Final[Mapping[str, Callable[..., Any]]] = {
    "sum": total,
    "min": least,
    "max": most,
    "count": count,
    "normalize": normalize,
    "days_between": days_between,
}
"""The pure helpers by the name a condition calls them."""


class History(Sequence[dict[str, Any]]):
    """A job's history as conditions read it, a list of ``{tool, args, result, ok}``:
    each run's map is made when an evaluation reaches it (``history.exists(...)`` that
    decides at the last run reads one), never the whole history up front."""

    __slots__ = ("_maps", "_runs")

    def __init__(self, runs: Sequence[Run]) -> None:
        self._runs = runs
        self._maps: dict[int, dict[str, Any]] = {}

    def __len__(self) -> int:
        return len(self._runs)

    @overload
    def __getitem__(self, index: int) -> dict[str, Any]: ...

    @overload
    def __getitem__(self, index: slice) -> list[dict[str, Any]]: ...

    def __getitem__(self, index: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if type(index) is not int:
            if isinstance(index, slice):
                return [self[i] for i in range(*index.indices(len(self._runs)))]
            raise TypeError(f"history indices are integers, not {type(index).__name__}")
        if index < 0:
            index += len(self._runs)
        found = self._maps.get(index)
        return found if found is not None else self._made(index, self._runs[index])

    def __iter__(self) -> Iterator[dict[str, Any]]:
        maps = self._maps
        for index, run in enumerate(self._runs):
            found = maps.get(index)
            yield found if found is not None else self._made(index, run)

    def _made(self, index: int, run: Run) -> dict[str, Any]:
        args = run.args if type(run.args) is dict else dict(run.args)
        found = {"tool": run.tool, "args": args, "result": run.result, "ok": run.ok}
        self._maps[index] = found
        return found

    def __repr__(self) -> str:
        return f"History({list(self)!r})"


_LISTS = (list, tuple, History)


class Runs:
    """The job's history for ``latest()``: runs oldest first, and the names a tool may be
    called by (a package tool's local name) mapped to its full name."""

    __slots__ = ("_names", "_runs")

    def __init__(self, runs: Sequence[Run], names: Mapping[str, str] | None = None) -> None:
        self._runs = runs
        self._names = names or {}

    def latest(self, tool: Any, match: Any = None) -> dict[str, Any] | None:
        """``latest(tool, match)``; see the module."""
        if type(tool) is not str:
            raise HelperError(f"latest() takes a tool name, not {type(tool).__name__}")
        if match is not None and not isinstance(match, Mapping):
            raise HelperError(f"latest() matches a map, not {type(match).__name__}")
        full = self._names.get(tool, tool)
        wanted = tuple(match.items()) if match else ()
        single = wanted[0] if len(wanted) == 1 else None
        key, value = single if single is not None else ("", None)
        kind, number = type(value), type(value) in _NUMBERS
        for run in reversed(self._runs):
            if run.tool != full:
                continue
            if single is not None:  # the common case, without a call per run
                args, result = run.args, run.result
                if type(args) is dict and type(result) is dict:
                    found = args.get(key, _ABSENT)
                    if type(found) is kind:
                        if found == value:
                            break
                    elif number and type(found) in _NUMBERS and found == value:
                        break
                    found = result.get(key, _ABSENT)
                    if type(found) is kind:
                        if found == value:
                            break
                    elif number and type(found) in _NUMBERS and found == value:
                        break
                    continue
                if not (_holds(args, wanted) or _holds(result, wanted)):
                    continue
            elif wanted and not (_holds(run.args, wanted) or _holds(run.result, wanted)):
                continue
            return _run_map(run)
        else:
            return None
        return _run_map(run)  # found by the common case


def _run_map(run: Run) -> dict[str, Any]:
    args = run.args if type(run.args) is dict else dict(run.args)
    return {"tool": run.tool, "args": args, "result": run.result, "ok": run.ok}


_ABSENT = object()
_NUMBERS = (int, float)


def _holds(found: Any, wanted: tuple[tuple[str, Any], ...]) -> bool:
    """Whether the map ``found`` holds every key of ``wanted`` with an equal value (a
    number equals a number of the same value; other values are equal when of one type)."""
    if type(found) is not dict and not isinstance(found, Mapping):
        return False
    return all(_same(found.get(key, _ABSENT), value) for key, value in wanted)


def _same(found: Any, value: Any) -> bool:
    """A number equals a number of the same value; other values are equal when of one
    type and equal (``True`` is not ``1``)."""
    if type(found) is type(value):
        return bool(found == value)
    return type(found) in _NUMBERS and type(value) in _NUMBERS and found == value
