"""Conditions compiled once at load and evaluated, failing closed, at run time.

:func:`compile_condition` turns the author's text into a :class:`CelCondition`: the
dialect is rewritten (:mod:`skillwire.conditions.dialect`), the ``cel`` package checks
that the result is CEL (its parse errors point at the author's column), the functions
it calls and the names it reads are checked, and :mod:`skillwire.conditions._parser`
compiles it into the one tree of closures that evaluates it. Every problem found there
is a :class:`~skillwire.core.conditions.ConditionSyntaxError` pointing at the author's
column, including a construct CEL has and the evaluator does not (``1u``, ``b'x'``).

At run time :meth:`CelCondition.evaluate` returns ``True`` or ``False``, reading only
what the answer needs; a missing value, a type mismatch or a result that is not a
boolean raises :class:`~skillwire.core.conditions.ConditionEvaluationError`, never
``False``, so the caller can fail closed. The ``cel`` package never evaluates: it is
the load-time validator here and the reference the tests compare the evaluator with.

``matches()`` runs on the skill pattern engine (:mod:`skillwire.core.patterns`): a
pattern written in the condition is compiled at load, one from the data once per text.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection, Mapping
from typing import Any, Final

import cel

from skillwire.conditions._parser import JOB, compile_tree
from skillwire.conditions._scanner import tokenize
from skillwire.conditions._values import GiveUp, Unsure, shown
from skillwire.conditions.dialect import Rewrite, rewrite
from skillwire.conditions.functions import HELPERS, RUNS_KEY
from skillwire.conditions.provenance import PROVENANCE_KEY
from skillwire.core.errors import ConditionEvaluationError, ConditionSyntaxError

__all__ = [
    "FUNCTIONS",
    "PROVENANCE_FUNCTIONS",
    "RUNTIME_NAMES",
    "CelCondition",
    "compile_condition",
]

PROVENANCE_FUNCTIONS: Final = frozenset({"untrusted", "origin"})
"""Functions that read the job's sources (:mod:`skillwire.conditions.provenance`),
given to a condition under :data:`~skillwire.conditions.provenance.PROVENANCE_KEY`."""

JOB_FUNCTIONS: Final = frozenset(JOB)
"""Functions that read the job (its sources, its history)."""


RUNTIME_NAMES: Final = frozenset(
    {"args", "entities", "context", "history", "counts", "inputs", "facts", "now"}
)
"""Names every condition may read besides the tool's own arguments (``docs/conditions.md``)."""

FUNCTIONS: Final = frozenset(
    {
        *("contains", "startsWith", "endsWith", "matches", "size", "has"),
        *("all", "exists", "exists_one", "map", "filter"),
        *("bytes", "double", "dyn", "int", "string", "type", "uint", "duration", "timestamp"),
        *("getDate", "getDayOfMonth", "getDayOfWeek", "getDayOfYear", "getFullYear"),
        *("getHours", "getMilliseconds", "getMinutes", "getMonth", "getSeconds"),
        *JOB_FUNCTIONS,
        *HELPERS,
    }
)
"""Functions, methods and macros a condition may call (the ones the CEL runtime defines)."""

_TYPE_NAMES = frozenset({"bool", "bytes", "double", "int", "list", "map", "null_type"})
_TYPE_NAMES |= {"string", "type", "uint"}
_PARSE_PREFIX = "Failed to parse expression '"
_ERROR_MARKER = "ERROR: <input>:"


class CelCondition:
    """A compiled condition; satisfies :class:`~skillwire.core.conditions.Condition`.

    Build one with :func:`compile_condition`. Instances are immutable and may be shared
    between threads and jobs.
    """

    __slots__ = ("_constant", "_frames", "_names", "_required", "_rewrite", "_run", "_unread")

    def __init__(
        self,
        rewritten: Rewrite,
        required: tuple[str, ...],
        optional: tuple[str, ...],
        *,
        value: bool = False,
    ) -> None:
        self._rewrite = rewritten
        tree = compile_tree(rewritten, required, optional)
        self._run = tree.root.run
        self._frames = tree.frames
        for name in sorted(rewritten.calls):
            if name in JOB:
                required = (*required, JOB[name][0])
        self._required = tuple(dict.fromkeys(required))
        self._names = frozenset(self._required)
        self._unread = tuple(name for name in self._required if name not in tree.root.reads)
        """Names an evaluation may skip (behind `&&`, `||`, `?`) that still need a value."""
        self._constant: bool | None = None
        if not required and not optional and not value:
            self._constant = self._fold()

    @property
    def source(self) -> str:
        """The text as the skill author wrote it."""
        return self._rewrite.source

    @property
    def expression(self) -> str:
        """The CEL expression that runs (what ``skillwire check --explain`` shows)."""
        return self._rewrite.expression

    @property
    def names(self) -> frozenset[str]:
        """The top-level variable names the expression reads (with
        :data:`~skillwire.conditions.provenance.PROVENANCE_KEY` when it calls
        ``untrusted`` or ``origin``)."""
        return self._names

    def fields_read(self, name: str) -> frozenset[str] | None:
        """The fields the expression selects from the variable ``name`` (``facts.total``
        gives ``total``); None when it reads it some other way (whole, indexed, passed
        to a function); empty when it does not read it."""
        access = self._rewrite.access.get(name)
        if access is None:
            return frozenset() if name not in self._names else None
        if access.whole:
            return None
        return frozenset(access.fields)

    @property
    def calls(self) -> frozenset[str]:
        """The functions and methods the author's text calls."""
        return frozenset(self._rewrite.calls)

    def evaluate(self, variables: Mapping[str, Any]) -> bool:
        """Evaluate against ``variables``, reading only what the answer needs.

        Raises :class:`~skillwire.core.conditions.ConditionEvaluationError` when a name
        the expression reads has no value, the values have types the expression cannot
        combine (``"750" > 500``), a value is not JSON-like (nor a datetime or a
        timedelta), or the result is not a boolean.
        """
        if self._constant is not None:
            return self._constant
        result = self._execute(variables)
        if result is True or result is False:
            return result
        raise ConditionEvaluationError(
            f"cannot evaluate `{self.source}`: it gives {_kind(result)} "
            f"{_shorten(repr(result))}, not true or false"
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.source!r})"

    def _execute(self, variables: Mapping[str, Any]) -> Any:
        """The expression's value on ``variables``; raises for an error."""
        try:
            for name in self._unread:
                if name not in variables:
                    raise KeyError(name)
            result = self._run(_Frame(variables) if self._frames else variables)
        except KeyError as exc:
            raise ConditionEvaluationError(self._missing(exc.args[0] if exc.args else "")) from None
        except GiveUp as exc:
            raise ConditionEvaluationError(self._failure(str(exc), variables)) from None
        except RecursionError:
            raise ConditionEvaluationError(
                self._failure("a value is nested too deep", variables)
            ) from None
        if type(result) is Unsure:
            raise ConditionEvaluationError(self._failure(result.reason, variables))
        return result

    def _failure(self, reason: str, variables: Mapping[str, Any]) -> str:
        """The message of an evaluation error, with the types of the names it read."""
        given = ", ".join(
            f"{name}: {type(variables[name]).__name__}"
            for name in self._required
            if not name.startswith("$") and name in variables
        )
        suffix = f" (given {given})" if given else ""
        return f"cannot evaluate `{self.source}`: {reason}{suffix}"

    def _missing(self, name: str) -> str:
        if name in (PROVENANCE_KEY, RUNS_KEY):
            needs = ", ".join(
                f"{call}()"
                for call in sorted(self._rewrite.calls)
                if call in JOB and JOB[call][0] == name
            )
            return (
                f"cannot evaluate `{self.source}`: {needs} need the job's "
                f"{'sources' if name == PROVENANCE_KEY else 'history'}, and none was given"
            )
        return f"cannot evaluate `{self.source}`: `{name}` has no value"

    def _fold(self) -> bool:
        """Evaluate a condition that reads no names once, at load (``always``, ``1 == 1.0``)."""
        try:
            return self.evaluate({})
        except ConditionEvaluationError as exc:
            detail = str(exc).removeprefix(f"cannot evaluate `{self.source}`: ")
            raise ConditionSyntaxError(
                f"this condition reads no names and cannot be evaluated: {detail}",
                column=1,
                hint="a condition must give true or false, e.g. `amount > 500` or `always`",
            ) from None


class _Frame(dict[Any, Any]):
    """The environment of one evaluation that binds names (macros): the slots they
    bind, and each variable read once from the caller's mapping."""

    __slots__ = ("_variables",)

    def __init__(self, variables: Mapping[str, Any]) -> None:
        super().__init__()
        self._variables = variables

    def __missing__(self, key: Any) -> Any:
        value = self._variables[key]
        self[key] = value
        return value


def compile_condition(source: str, *, known_names: Collection[str] | None = None) -> CelCondition:
    """Compile a condition (CEL or the spoken dialect) once, at load.

    ``known_names`` lists the top-level names the skill defines (its tool arguments and
    :data:`RUNTIME_NAMES`); when given, reading any other name is an error with a
    "did you mean" hint. Raises :class:`~skillwire.core.conditions.ConditionSyntaxError`
    whose ``column`` is the 1-based character position in ``source`` (for a condition
    spanning several lines, counted over the whole text).
    """
    return CelCondition(*compiled_parts(source, known_names))


def compiled_parts(
    source: str, known_names: Collection[str] | None
) -> tuple[Rewrite, tuple[str, ...], tuple[str, ...]]:
    """The parts of a compiled expression: the rewrite, the names it must read and
    those it may (:func:`compile_condition` and the facts share them)."""
    rewritten = rewrite(source)
    program = _compile(rewritten)
    _check_calls(rewritten, program)
    _check_source_calls(rewritten)
    known = None if known_names is None else frozenset(known_names)
    required: dict[str, int] = {}
    optional: list[str] = []
    for name, offset in rewritten.names.items():
        if name in _TYPE_NAMES and (known is None or name not in known):
            optional.append(name)  # a CEL type such as `list`, unless the skill defines it
        else:
            required[name] = offset
    for name in program.variables():  # CEL's own analysis as a safety net
        if name not in rewritten.names and name not in rewritten.bound | _TYPE_NAMES:
            required.setdefault(name, 0)
    if known is not None:
        for name, offset in required.items():
            if name not in known:
                raise ConditionSyntaxError(
                    f"`{name}` is not a name this skill defines",
                    column=offset + 1,
                    hint=_name_hint(name, known),
                )
    return rewritten, tuple(required), tuple(optional)


def _compile(rewritten: Rewrite) -> Any:
    try:
        return cel.compile(rewritten.expression)
    except Exception as exc:
        raise _syntax_error(rewritten, str(exc)) from None
    except BaseException as exc:
        if not _is_native_panic(exc):
            raise
        raise _syntax_error(rewritten, str(exc)) from None


def _syntax_error(rewritten: Rewrite, text: str) -> ConditionSyntaxError:
    """Turn CEL's parse error into one that points at the author's text."""
    prefix = f"{_PARSE_PREFIX}{rewritten.expression}': "
    start = text.find(_ERROR_MARKER, len(prefix) if text.startswith(prefix) else 0)
    if start < 0:
        return ConditionSyntaxError(
            f"CEL cannot read this condition: {text.split(chr(10), 1)[0]}",
            hint="see docs/conditions.md for the syntax",
        )
    line, column, detail = [*text[start + len(_ERROR_MARKER) :].split(":", 2), "", ""][:3]
    detail = detail.split("\n", 1)[0].strip().removeprefix("Syntax error: ")
    detail = detail.split(" expecting ", 1)[0]
    at = 0
    if line.isdigit() and column.isdigit():
        lines = rewritten.expression.split("\n")
        offset = sum(len(part) + 1 for part in lines[: int(line) - 1]) + int(column) - 1
        at = rewritten.original_offset(offset) + 1
    hint = "see docs/conditions.md for the syntax"
    if "int literal" in detail:
        hint = "whole numbers must fit in 64 bits; write a larger number as a double: 1e20"
    elif "reserved" in detail:
        hint = "read the argument through `args`, e.g. `args.if`"
    return ConditionSyntaxError(f"CEL cannot read this condition: {detail}", column=at, hint=hint)


def _check_calls(rewritten: Rewrite, program: Any) -> None:
    for name, offset in rewritten.calls.items():
        if name not in FUNCTIONS:
            raise _unknown_function(name, offset + 1)
    for name in program.functions():
        if name[:1].isalpha() and name not in FUNCTIONS:
            raise _unknown_function(name, 0)


def _check_source_calls(rewritten: Rewrite) -> None:
    """``untrusted`` and ``origin`` are functions of exactly one value."""
    if PROVENANCE_FUNCTIONS.isdisjoint(rewritten.calls):
        return
    tokens = tokenize(rewritten.expression)
    for at, token in enumerate(tokens):
        if token.kind != "name" or token.text not in PROVENANCE_FUNCTIONS:
            continue
        column = rewritten.original_offset(token.start) + 1
        if at and tokens[at - 1].text == ".":
            raise ConditionSyntaxError(
                f"`{token.text}` is a function, not a method",
                column=column,
                hint=f"write `{token.text}(args.x)`",
            )
        if tokens[at + 1].text != "(":
            continue
        depth, commas, empty = 0, 0, tokens[at + 2].text == ")"
        for later in tokens[at + 1 :]:
            if later.kind == "op" and later.text in "([{":
                depth += 1
            elif later.kind == "op" and later.text in ")]}":
                depth -= 1
                if depth == 0:
                    break
            elif later.kind == "op" and later.text == "," and depth == 1:
                commas += 1
        if commas or empty:
            raise ConditionSyntaxError(
                f"`{token.text}` takes one value",
                column=column,
                hint=f"write `{token.text}(args.x)`",
            )


def _unknown_function(name: str, column: int) -> ConditionSyntaxError:
    close = difflib.get_close_matches(name, sorted(FUNCTIONS), n=1, cutoff=0.6)
    hint = f"did you mean `{close[0]}`?" if close else "docs/conditions.md lists the functions"
    return ConditionSyntaxError(f"unknown function `{name}`", column=column, hint=hint)


def _name_hint(name: str, known: frozenset[str]) -> str:
    if name.lower() in ("true", "false", "null"):
        return f"write `{name.lower()}` in lower case"
    if name == "None":
        return "write `null`"
    close = difflib.get_close_matches(name, sorted(known), n=3, cutoff=0.6)
    if close:
        return "did you mean " + " or ".join(f"`{candidate}`" for candidate in close) + "?"
    names = sorted(known)
    listed = ", ".join(names[:12]) + (", ..." if len(names) > 12 else "")
    return f"a condition here can read: {listed}" if names else "this skill defines no names"


def _is_native_panic(exc: BaseException) -> bool:
    """A panic inside the CEL extension surfaces as ``pyo3_runtime.PanicException``."""
    return type(exc).__name__ == "PanicException"


def _kind(value: Any) -> str:
    kind = shown(value)
    return {"dict": "map", "tuple": "list"}.get(kind, kind)


def _shorten(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
