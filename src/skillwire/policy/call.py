"""One proposed tool call, with everything the gate may read about the job.

The gate takes every input as an argument (arguments, entities, context, history,
inputs, granted approvals), never from a job object or a global, so the same gate
serves jobs, simulations with per-agent state, and any other agent framework.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import math
import operator
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from skillwire.conditions import (
    OPERATOR,
    PROVENANCE_KEY,
    RUNS_KEY,
    USER,
    CelExpression,
    History,
    Normalised,
    Provenance,
    Runs,
    Source,
    ToolOutputs,
    normalised,
    tool_origin,
)
from skillwire.core.errors import ConditionEvaluationError
from skillwire.policy.arguments import same_value

__all__ = ["ApprovalGrant", "GateCall", "ToolRun", "args_key", "same_args"]


@dataclass(frozen=True, slots=True)
class ToolRun:
    """A tool call already executed in this job (or by this agent).

    ``ok`` is False for a run that failed. Workflow order and ``once_only`` count only
    successful runs; ``max_calls``, ``permanent`` and ``counts`` count every run (a failed
    call may still have had its effect). ``args`` and ``result`` are plain JSON; the gate
    checks a run the first time it sees it, so they must not change afterwards.
    """

    tool: str
    args: Mapping[str, Any]
    result: Any = None
    ok: bool = True
    _plain: bool = field(default=False, init=False, repr=False, compare=False)
    """Set by the gate once it has found the run plain JSON (not walked again)."""
    _form: Normalised | None = field(default=None, init=False, repr=False, compare=False)
    """The result as provenance compares it, computed once (:meth:`normalised_result`)."""

    def normalised_result(self) -> Normalised:
        """The result normalised for provenance, once per run (a run is a record: its
        result does not change after the gate has seen it)."""
        form = self._form
        if form is None:
            form = normalised(self.result)
            object.__setattr__(self, "_form", form)
        return form

    _outputs: Any = field(default=None, init=False, repr=False, compare=False)
    """The results of the history ending with this run, indexed for provenance
    (:meth:`GateCall._tool_outputs`): ``(runs, trust sets, ToolOutputs)``."""

    def as_dict(self) -> dict[str, Any]:
        """The form conditions read: ``{tool, args, result, ok}``."""
        args = self.args if type(self.args) is dict else dict(self.args)
        return {"tool": self.tool, "args": args, "result": self.result, "ok": self.ok}


@dataclass(frozen=True, slots=True)
class ApprovalGrant:
    """An approval given by ``role`` for exactly these arguments of ``tool``, consumed
    by one execution.

    ``correlation_id`` names the pause the approval answered: a caller that passes
    ``correlation_ids`` to :meth:`~skillwire.policy.Gate.check` lets a grant allow
    only the call paused under one of them. ``consumed`` is True once the call the
    grant allowed has run (or started): a consumed grant never allows again, so the
    same call proposed again asks again. Like a :class:`ToolRun`, a record: the gate
    checks it once and its ``args`` must not change afterwards."""

    tool: str
    args: Mapping[str, Any]
    role: str
    correlation_id: str = ""
    consumed: bool = False
    _plain: bool = field(default=False, init=False, repr=False, compare=False)
    """Set by the gate once it has found the grant plain JSON (not walked again)."""


def _canonical(value: Any) -> Any:
    """Whole floats as ints (``750.0`` and ``750`` are one value), for :func:`args_key`."""
    if type(value) is float and value.is_integer() and math.isfinite(value):
        return int(value)
    if isinstance(value, Mapping):
        return {str(k): _canonical(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_canonical(v) for v in value]
    return value


def args_key(tool: str, args: Mapping[str, Any]) -> str:
    """A canonical key of a call: an approval binds exactly these arguments.

    Numbers compare by value (``750`` and ``750.0`` are the same argument); a string
    ``"750"`` is a different argument from the number ``750``; an argument that is null
    is an argument not given.
    """
    given = {k: v for k, v in args.items() if v is not None}
    try:
        text = json.dumps(_canonical(given), sort_keys=True, separators=(",", ":"), default=repr)
    except (TypeError, ValueError):
        text = repr(sorted((str(k), repr(v)) for k, v in args.items()))
    return tool + "\x00" + text


def same_args(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether two calls' arguments are the same, as :func:`args_key` compares them."""
    if a.keys() == b.keys() and None not in a.values() and None not in b.values():
        # no null argument to leave out (``in`` finds None by identity): compared as they are
        return all(same_value(v, b[k]) for k, v in a.items())
    given_a = {k: v for k, v in a.items() if v is not None}
    given_b = {k: v for k, v in b.items() if v is not None}
    return given_a.keys() == given_b.keys() and all(
        same_value(v, given_b[k]) for k, v in given_a.items()
    )


@dataclass(slots=True)
class GateCall:
    """A proposal being checked, and its lazily built condition variables.

    ``history`` holds runs whose ``tool`` is already the skill's full tool name (the
    gate resolves local names and ids before building the call); ``tools`` maps every
    name a condition may use for a tool of the skill (its full name, and a package
    tool's local name) to the full name. ``counts`` holds every tool that ran, under
    each of its names, and a 0 for each tool named in ``counted`` (the tools the
    skill's conditions read from ``counts``: a larger map costs time to convert).
    """

    tool: str
    args: dict[str, Any]
    entities: Mapping[str, Any]
    context: Mapping[str, Any]
    history: Sequence[ToolRun]
    inputs: Mapping[str, Any]
    grants: Sequence[ApprovalGrant]
    intents: frozenset[str] = frozenset()
    """The job's active intents, as the caller gave them."""
    scope: frozenset[str] | None = None
    """The active intents that decide which scoped workflows and required inputs apply;
    None (no intent given, or one the skill does not have): every one applies."""
    stated_tool: str | None = None
    stated_args: Mapping[str, Any] | None = None
    effects: tuple[str, ...] = ()
    tools: Mapping[str, str] = field(default_factory=dict)
    counted: frozenset[str] = frozenset()
    correlations: frozenset[str] | None = None
    """The pauses whose grants may allow this call (None: any grant of the call)."""
    defaults: Mapping[str, Any] = field(default_factory=dict)
    """The schema defaults of the tool's optional arguments (from the skill, never from
    the call): a condition reading an argument the call leaves out sees its default."""
    user_texts: tuple[str, ...] = ()
    """What the user wrote in this job (the request, later messages); their answers
    are :attr:`inputs`."""
    untrusted_tools: frozenset[str] = frozenset()
    """The tools (full names) declared ``trust: untrusted``."""
    trusted_tools: frozenset[str] = frozenset()
    """The skill's other tools: a run of a tool in neither set is untrusted."""
    now: datetime.datetime | None = None
    """The job's clock, as the caller gave it (``now`` in conditions)."""
    facts: Mapping[str, CelExpression] = field(default_factory=dict)
    """The skill's facts this tool's rules read, in declaration order."""
    fact_values: dict[str, Any] | None = None
    """The facts computed for this call (None until a condition reads ``facts``)."""
    _variables: _Variables | None = field(default=None, repr=False)
    _provenance: Provenance | None = field(default=None, repr=False)
    outcomes: dict[str, bool | ConditionEvaluationError] = field(default_factory=dict, repr=False)
    """Each condition's answer (or evaluation error) for this call, by CEL expression:
    rules that share a condition (``amount > 500`` as an approval, a sentence and a
    policy entry) evaluate it once."""

    @property
    def variables(self) -> Mapping[str, Any]:
        """What conditions read: each argument, ``args``, ``entities``, ``context``,
        ``history`` and ``counts``. History and counts are built only when read."""
        if self._variables is None:
            self._variables = _Variables(self)
        return self._variables

    @property
    def provenance(self) -> Provenance:
        """Where values came from: the user's texts and answers, the operator's context,
        and every tool result (untrusted for a tool so declared, or not of the skill)."""
        if self._provenance is None:
            sources = [Source(USER, text) for text in self.user_texts]
            if self.inputs:
                sources.append(Source(USER, dict(self.inputs)))
            if self.context:
                sources.append(Source(OPERATOR, dict(self.context)))
            self._provenance = Provenance(sources, self._tool_outputs())
        return self._provenance

    def _source(self, run: ToolRun) -> Source:
        untrusted = run.tool in self.untrusted_tools or run.tool not in self.trusted_tools
        form = run.normalised_result() if run._plain else None
        return Source(tool_origin(run.tool), run.result, untrusted, form)

    def _tool_outputs(self) -> ToolOutputs:
        """The history's results indexed, shared by the checks of one job: kept on the
        last run (with the runs before it and the gate's trust sets it was built
        for) and extended by one run from the one before."""
        history = self.history
        if not history:
            return ToolOutputs()
        runs = tuple(history)
        key = (self.untrusted_tools, self.trusted_tools)
        last = runs[-1]
        if last._outputs is not None and _same_prefix(last._outputs, runs, key):
            kept: ToolOutputs = last._outputs[2]
            return kept
        before = runs[-2]._outputs if len(runs) > 1 else None
        if before is not None and _same_prefix(before, runs[:-1], key):
            prefix: ToolOutputs = before[2]
            outputs = prefix.extended(self._source(last))
        else:
            outputs = ToolOutputs(self._source(run) for run in runs)
        if all(run._plain for run in runs):  # records: they do not change
            object.__setattr__(last, "_outputs", (runs, key, outputs))
        return outputs

    def grant_for(self, role: str, tool: str) -> ApprovalGrant | None:
        """The first grant by ``role`` that allows this call of ``tool`` (the same
        canonical arguments, not consumed, and answering one of :attr:`correlations`
        when the caller named them), or None."""
        wanted = self.correlations
        for grant in self.grants:
            if (
                grant.role == role
                and grant.tool == tool
                and not grant.consumed
                and (wanted is None or grant.correlation_id in wanted)
                and same_args(grant.args, self.args)
            ):
                return grant
        return None

    def succeeded(self, tool: str) -> list[ToolRun]:
        """Successful earlier runs of ``tool``."""
        return [run for run in self.history if run.ok and run.tool == tool]

    def succeeded_with(self, tool: str, key: Sequence[tuple[str, Any]]) -> bool:
        """Whether ``tool`` ran successfully with these argument values (JSON equality)."""
        for run in self.history:
            if run.ok and run.tool == tool:
                args = run.args
                for name, value in key:
                    if not same_value(args.get(name), value):
                        break
                else:
                    return True
        return False

    def runs(self, tool: str) -> list[ToolRun]:
        """Every earlier run of ``tool``, successful or not."""
        return [run for run in self.history if run.tool == tool]


class _Variables(Mapping[str, Any]):
    """Condition variables, computed on first access of each runtime name."""

    __slots__ = ("_cache", "_call")

    _RUNTIME = ("args", "entities", "context", "history", "counts", "inputs", "facts")
    _HIDDEN = (PROVENANCE_KEY, RUNS_KEY)

    def __init__(self, call: GateCall) -> None:
        self._call = call
        self._cache: dict[str, Any] = {}

    def __getitem__(self, name: str) -> Any:
        if name in self._cache:
            return self._cache[name]
        call = self._call
        if name == "args":
            value: Any = {k: v for k, v in call.defaults.items() if call.args.get(k) is None}
            value.update((k, v) for k, v in call.args.items() if v is not None)
        elif name == "entities":
            value = dict(call.entities)
        elif name == "context":
            value = dict(call.context)
        elif name == "history":
            value = History(call.history)  # each run's map made when a condition reaches it
        elif name == PROVENANCE_KEY:
            value = call.provenance
        elif name == RUNS_KEY:
            value = Runs(call.history, call.tools)
        elif name == "inputs":
            value = dict(call.inputs)
        elif name == "now":
            if call.now is None:
                raise KeyError(name)
            value = call.now
        elif name == "facts":
            value = {}
            self._cache[name] = value  # a fact reads the ones before it from this dict
            for fact, expression in call.facts.items():  # in order; one without a value
                with contextlib.suppress(ConditionEvaluationError):  # fails closed if read
                    value[fact] = expression.evaluate(self)
            call.fact_values = value
        elif name == "counts":
            runs: dict[str, int] = {}
            for run in call.history:
                runs[run.tool] = runs.get(run.tool, 0) + 1
            counts = dict(runs)
            for alias, full in call.tools.items():
                if full in runs or alias in call.counted:
                    counts[alias] = runs.get(full, 0)
            value = counts
        else:
            value = call.args.get(name)
            if value is None:
                # null is "not given": the schema's default, else a condition reading
                # it fails closed
                value = call.defaults[name]
        self._cache[name] = value
        return value

    def __contains__(self, name: object) -> bool:
        if name in self._RUNTIME or name in self._HIDDEN:
            return True
        if name == "now":
            return self._call.now is not None
        call = self._call
        return isinstance(name, str) and (call.args.get(name) is not None or name in call.defaults)

    def __iter__(self) -> Iterator[str]:
        call = self._call
        yield from self._RUNTIME
        if call.now is not None:
            yield "now"
        yield from (k for k, v in call.args.items() if k not in self._RUNTIME and v is not None)
        yield from (k for k in call.defaults if k not in self._RUNTIME and call.args.get(k) is None)

    def __len__(self) -> int:
        return sum(1 for _ in self)


def _same_prefix(cached: Any, runs: tuple[ToolRun, ...], key: tuple[Any, Any]) -> bool:
    """Whether an index kept on a run was built for exactly these runs (the same
    objects) and the same trust sets (the same objects: one gate)."""
    kept, kept_key = cached[0], cached[1]
    return (
        len(kept) == len(runs)
        and kept_key[0] is key[0]
        and kept_key[1] is key[1]
        and all(map(operator.is_, kept, runs))  # the same run objects, compared in C
    )
