"""Tools: inputs, policy, governance declarations and executors.

A tool's arguments are described either by ``inputs[]`` (the skill YAML way) or by
``inputSchema`` (a JSON Schema object, the package way); :meth:`Tool.input_schema`
gives one JSON Schema either way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import Field, PrivateAttr, ValidationError, field_validator, model_validator

from skillwire.conditions import ConditionSyntaxError, compile_expression
from skillwire.skills._base import SkillPart
from skillwire.skills.model_fields import FieldSpec

__all__ = [
    "ONCE_PER_NAMES",
    "ApprovalMode",
    "Executor",
    "HttpRequestExecutor",
    "McpExecutor",
    "OnceOnly",
    "PolicyCondition",
    "PythonExecutor",
    "RateLimit",
    "SelectionHints",
    "SelfApproval",
    "ShellCommandExecutor",
    "ShellFallback",
    "SimulateExecutor",
    "Simulation",
    "Tool",
    "ToolInput",
    "ToolOutput",
    "ToolPolicy",
    "ToolSecurity",
]

ApprovalMode = Literal["always", "conditional", "never"]

SelfApproval = Literal["allowed", "refused"]
"""Whether the job's owner may approve their own call (``refused`` unless said)."""


def _properties(schema: dict[str, Any]) -> dict[str, Any]:
    """``properties`` of a schema when it is an object (rule 4 reports it otherwise)."""
    props = schema.get("properties")
    return props if isinstance(props, dict) else {}


@dataclass(frozen=True, slots=True)
class Simulation:
    """What a simulated tool may return beyond its declared ``result``."""

    invents: bool = False
    """Whether it may make values up: only when every tool its skill may call is
    simulated, so that no made-up value reaches a real tool or decides for one."""
    contract_fields: tuple[str, ...] = ()
    """The output contract fields it stands in for."""


class ToolInput(FieldSpec):
    """One argument of a tool."""


class ToolOutput(SkillPart):
    """What a tool returns (informational, and used by the offline planner)."""

    type: str = "object"
    """JSON type of the result."""
    description: str = ""
    """What the result means."""
    fields: list[Any] = Field(default_factory=list)
    """Names (or ``{name, type}`` objects) of the result's fields."""
    schema_: dict[str, Any] | None = Field(default=None, alias="schema")
    """A JSON Schema of the result."""


class PolicyCondition(SkillPart):
    """A conditional rule of a tool or an approval: when it holds, ``action`` applies."""

    when: str = Field(min_length=1)
    """A condition (CEL, or the spoken dialect) over the tool's arguments and the job."""
    action: Literal["allow", "deny", "escalate", "require_approval"] = "deny"
    """``deny`` blocks; ``require_approval`` asks ``approver``; ``escalate`` asks
    ``policy.escalation.target``; ``allow`` is an exception that only narrows another
    rule of the same tool."""
    message: str = ""
    """Why, in words; shown in the decision and to the planner."""
    approver: str | None = None
    """The role that may approve, for ``require_approval`` (default ``policy.default_approver``)."""
    self_approval: SelfApproval | None = None
    """For ``require_approval``: ``allowed`` lets the job's owner approve their own call
    when they hold the approver role; by default (``refused``, or the tool policy's or the
    approval's own setting) the approval must come from someone else."""


class OnceOnly(SkillPart):
    """A tool may run once per job, or once per value of one argument."""

    per: str | None = None
    """The argument whose value keys the limit (e.g. ``order_id``); none means once per job."""


ONCE_PER_NAMES = frozenset({"args", "context", "inputs", "entities"})
"""What a ``once_per`` expression may read: the call's arguments, the operator's
context, the user's answers and the job's entities (values fixed for the call)."""

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_SHORTHANDS = {"per_second": 1, "per_minute": 60, "per_hour": 3600, "per_day": 86400}
_MAX_WINDOW = 366 * 86400


def window_seconds(value: object) -> int:
    """The seconds of a ``rate_limit.per`` window: a whole number of seconds, or a
    number followed by ``s``, ``m``, ``h`` or ``d`` (``90s``, ``15m``, ``1h``, ``1d``),
    between one second and 366 days. Raises ValueError otherwise."""
    if type(value) is int:
        seconds = value
    elif isinstance(value, str) and value[:-1].isdigit() and value[:-1].isascii():
        unit = _UNITS.get(value[-1])
        if unit is None:
            raise ValueError(f"unknown unit in {value!r}: use s, m, h or d (e.g. 1h)")
        seconds = int(value[:-1]) * unit
    else:
        raise ValueError(
            f"a window is seconds or a number with s, m, h or d (e.g. 1h), not {value!r}"
        )
    if not 1 <= seconds <= _MAX_WINDOW:
        raise ValueError(f"a window must be between 1s and 366d, not {value!r}")
    return seconds


class RateLimit(SkillPart):
    """At most ``max`` runs of the tool per ``per`` window, counted across every job of
    the skill, per user (``scope: user``, the job's owner) or for all users together
    (``scope: skill``). Authoring tools' ``{per_minute: 5}`` (also ``per_second``,
    ``per_hour``, ``per_day``) is ``{max: 5, per: 1m}``. Enforced by the gate and the
    job store (docs/gate.md, "Limits across jobs")."""

    max: int | None = Field(default=None, ge=1, strict=True)
    """How many runs the window allows."""
    per: int | str | None = None
    """The window: seconds, or a number with ``s``, ``m``, ``h`` or ``d`` (``1h``)."""
    scope: Literal["user", "skill"] = "user"
    """``user``: each job owner has their own count; ``skill``: one count for everyone."""
    per_second: int | None = Field(default=None, ge=1, strict=True)
    """Shorthand: at most this many runs per second."""
    per_minute: int | None = Field(default=None, ge=1, strict=True)
    """Shorthand: at most this many runs per minute."""
    per_hour: int | None = Field(default=None, ge=1, strict=True)
    """Shorthand: at most this many runs per hour."""
    per_day: int | None = Field(default=None, ge=1, strict=True)
    """Shorthand: at most this many runs per day."""

    @field_validator("per")
    @classmethod
    def _window(cls, value: int | str | None) -> int | str | None:
        if value is not None:
            window_seconds(value)
        return value

    @model_validator(mode="after")
    def _one_spelling(self) -> RateLimit:
        shorthands = [name for name in _SHORTHANDS if getattr(self, name) is not None]
        if shorthands and (self.max is not None or self.per is not None):
            raise ValueError(f"give either max and per, or {shorthands[0]}, not both")
        if len(shorthands) > 1:
            raise ValueError(f"give one of {', '.join(shorthands)}, not several")
        if not shorthands and (self.max is None or self.per is None):
            raise ValueError("a rate limit needs max and per (e.g. {max: 3, per: 1h})")
        return self

    def limit(self) -> int:
        """Runs allowed per window."""
        for name in _SHORTHANDS:
            count = getattr(self, name)
            if count is not None:
                return int(count)
        return int(self.max or 0)

    def window(self) -> int:
        """The window in seconds."""
        for name, seconds in _SHORTHANDS.items():
            if getattr(self, name) is not None:
                return seconds
        return window_seconds(self.per)


class ToolPolicy(SkillPart):
    """Mechanical rules the pre-tool gate applies to one tool."""

    allowed: ApprovalMode = "always"
    """``never`` denies the tool; ``conditional`` lets ``conditions[]`` decide."""
    requires_approval: ApprovalMode | bool = "never"
    """``always`` (or true) asks for approval every time; ``conditional`` asks when
    ``condition`` holds (with no condition, always asks)."""
    condition: str | None = None
    """The condition of ``requires_approval: conditional``, e.g. ``amount > 500``."""
    conditions: list[PolicyCondition] = Field(default_factory=list)
    """Conditional rules: deny, require approval, escalate, or allow as an exception."""
    approver: str | None = None
    """The role that approves this tool's calls."""
    self_approval: SelfApproval | None = None
    """``allowed`` lets the job's owner approve their own call of this tool when they
    hold the approver role; by default (``refused``) the approval must come from someone
    else. A condition's own ``self_approval`` wins over this one."""
    once_only: bool | OnceOnly = False
    """The tool may run once per job (true) or once per value of ``once_only.per``."""
    once_per: str | None = Field(default=None, min_length=1)
    """An expression (``args.order_id``): the tool runs at most once per value of it
    across every job of the skill (a value is compared as
    :func:`skillwire.policy.crossjob.key_text` keys it: NFKC, case folded, ...). A run
    that failed does not count; a call that was in flight when a process crashed does.
    Reads ``args``, ``context``, ``inputs``, ``entities`` (one that reads no ``args``
    but ``entities`` or ``inputs`` is a load warning: it keys what the user said)."""
    rate_limit: RateLimit | None = None
    """At most ``max`` runs per ``per`` window across the skill's jobs, per user or for
    everyone (``{max: 3, per: 1h, scope: user}``; ``{per_minute: 5}``)."""
    max_calls: int | None = Field(default=None, ge=0)
    """At most this many executions of the tool in one job."""

    @field_validator("once_per")
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                compile_expression(value, known_names=ONCE_PER_NAMES)
            except ConditionSyntaxError as exc:
                hint = f" ({exc.hint})" if exc.hint else ""
                raise ValueError(f"once_per does not compile: {exc.message}{hint}") from None
        return value


class ToolSecurity(SkillPart):
    """Security labels (informational; reported as present, not enforced)."""

    classification: str | None = None
    """Data classification, e.g. ``pii``."""
    risk: str | None = None
    """Risk level, e.g. ``high``."""
    data_owner_field: str | None = None
    """The argument naming the data owner."""


class SelectionHints(SkillPart):
    """Hints that help a planner pick this tool (package format)."""

    tags: list[str] = Field(default_factory=list)
    """Keywords."""
    aliases: list[str] = Field(default_factory=list)
    """Other names for the tool."""
    examples: list[str] = Field(default_factory=list)
    """Requests this tool serves."""
    domain: str | None = None
    """A coarse category."""
    priority: int | None = None
    """Higher is preferred."""


class PythonExecutor(SkillPart):
    """Runs a Python callable named by import path, sync or async."""

    type: Literal["python"]
    """Always ``python``."""
    callable: str = Field(pattern=r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")
    """``module:function``: a module file in the skill's folder (``refund_tools`` is
    ``refund_tools.py``, symlinks must stay inside the folder), or a module under a prefix
    the operator lists in ``[tools] python_modules``. The function (or a class or object
    reached from it) must be defined in that module, not imported into it."""
    blocking: bool = True
    """``false``: the callable returns quickly and never waits on I/O, so a sync callable
    is called on the event loop instead of a worker thread (one thread hop less per call;
    a callable that does block then stalls every job of the process, and no time limit
    can interrupt it). Async callables always run on the loop."""
    timeoutMs: int | None = Field(default=None, gt=0, le=3_600_000, strict=True)  # noqa: N815
    """Time limit of one call in milliseconds (at most an hour); default the runtime's
    ``[tools] timeout`` (30 s). A call that passes it fails: an async callable is
    cancelled; a sync one cannot be stopped, so it runs on in its thread and its result
    is dropped."""


class SimulateExecutor(SkillPart):
    """Returns the declared result and state changes without side effects (spec 002)."""

    type: Literal["simulate"]
    """Always ``simulate``."""
    result: dict[str, Any] = Field(default_factory=dict)
    """The result returned; ``{{arg}}`` placeholders are filled from the arguments."""
    state_changes: dict[str, Any] = Field(default_factory=dict)
    """The state changes reported, keyed by state name."""


class ShellFallback(SkillPart):
    """Another command to try when the main one is not installed."""

    command: str = Field(min_length=1)
    """The program to run."""
    fixedArgs: list[str] = Field(default_factory=list)  # noqa: N815 - package format
    """Arguments always placed first."""


class ShellCommandExecutor(SkillPart):
    """Runs a program with an argv list (never through a shell), package format."""

    type: Literal["shell_command"]
    """Always ``shell_command``."""
    command: str = Field(min_length=1)
    """The program to run."""
    commandFallbacks: list[ShellFallback] = Field(default_factory=list)  # noqa: N815
    """Programs to try when ``command`` is missing."""
    argsTemplate: list[str] = Field(default_factory=list)  # noqa: N815
    """Arguments: ``{{field}}`` substitutes, ``{{...field}}`` spreads an array,
    ``{{#if field}}...{{/if}}`` keeps text when the field is present."""
    timeoutMs: int = Field(default=30_000, gt=0)  # noqa: N815
    """Time limit in milliseconds."""
    maxOutputChars: int = Field(default=100_000, gt=0)  # noqa: N815
    """Output beyond this many characters is cut."""
    allowedActions: list[str] | None = None  # noqa: N815
    """The allowed values of the ``action`` input."""
    network: bool = False
    """The program needs the network (skillwire addition): in the sandbox it gets
    one; without this it has none."""


class HttpRequestExecutor(SkillPart):
    """Sends an HTTP request (package format)."""

    type: Literal["http_request"]
    """Always ``http_request``."""
    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE"] = "POST"
    """HTTP method."""
    url: str = Field(min_length=1)
    """The URL; ``{{field}}`` placeholders are filled from the arguments."""
    headers: dict[str, str] = Field(default_factory=dict)
    """Request headers; ``{{credential}}`` placeholders are filled from credentials."""
    timeoutMs: int = Field(default=30_000, gt=0)  # noqa: N815
    """Time limit in milliseconds."""
    body: Any = None
    """The JSON body (skillwire addition); ``{{field}}`` placeholders are filled from the
    arguments (a string that is only ``{{field}}`` takes the value with its type)."""
    maxResponseBytes: int = Field(default=1_000_000, gt=0)  # noqa: N815
    """A larger response fails the call (skillwire addition)."""
    responseType: Literal["auto", "json", "text"] = "auto"  # noqa: N815
    """How the body is returned (skillwire addition): ``auto`` parses JSON when the
    response says it is JSON."""


class McpExecutor(SkillPart):
    """Calls a tool of an MCP server."""

    type: Literal["mcp"]
    """Always ``mcp``."""
    server: str = Field(min_length=1)
    """The server, as configured by the operator."""
    tool: str | None = None
    """The server's tool name, when it differs from this tool's."""


Executor = Annotated[
    PythonExecutor | SimulateExecutor | ShellCommandExecutor | HttpRequestExecutor | McpExecutor,
    Field(discriminator="type"),
]


class Tool(SkillPart):
    """A tool the agent may call, with its arguments, policy and executor."""

    name: str = Field(min_length=1)
    """The tool's name; package tools are namespaced ``<skillId>.<toolName>``."""
    id: str | None = None
    """An identifier distinct from ``name`` (authoring tools); approvals may use either."""
    description: str = ""
    """What the tool does; shown to the planner."""
    inputs: list[ToolInput] | None = None
    """The tool's arguments (skill YAML form)."""
    inputSchema: dict[str, Any] | None = None  # noqa: N815 - spec 003 field name
    """The tool's arguments as a JSON Schema object with root ``type: object``."""
    output: ToolOutput | None = None
    """What the tool returns."""
    policy: ToolPolicy = Field(default_factory=ToolPolicy)
    """Rules the pre-tool gate applies."""
    effects: list[str] = Field(default_factory=list)
    """State changes the tool makes; each must be in the skill's ``allowed_state_changes``."""
    permanent: bool = False
    """The tool's effects cannot be undone: it runs at most once per job (and key)."""
    trust: Literal["trusted", "untrusted"] = "trusted"
    """``untrusted`` when the tool's results can carry text written by others (mail,
    web pages, chat messages): values found only there are ``untrusted()`` in conditions,
    and the base policy asks approval for writes that use them (docs/conditions.md)."""
    idempotent: bool = False
    """Running it twice with the same arguments is harmless; a crash re-runs it."""
    preconditions: list[str] = Field(default_factory=list)
    """Conditions that must hold before the tool may run (spec 002 feasibility)."""
    executor: Executor | None = None
    """How the tool runs. Without one, the tool runs in ``simulate`` mode."""
    requiresCredentials: list[str] = Field(default_factory=list)  # noqa: N815
    """Credential ids the tool needs (package format)."""
    selectionHints: SelectionHints | None = None  # noqa: N815
    """Hints for tool selection (package format)."""
    security: ToolSecurity | None = None
    """Security labels (not enforced)."""
    mock: Any = None
    """Mock data written by authoring tools (not used)."""
    mock_status: Any = None
    """Mock status written by authoring tools (not used)."""
    source: Any = None
    """Where the tool came from, as authoring tools record it (not used)."""

    _simulation: Simulation = PrivateAttr(default=Simulation())

    def simulation(self) -> Simulation:
        """How this tool runs simulated, as its skill decided when it was built
        (:mod:`skillwire.skills.simulation`); a tool outside a skill makes nothing up."""
        return self._simulation

    def set_simulation(self, plan: Simulation) -> None:
        """Record how this tool runs simulated (the skill does it)."""
        self._simulation = plan

    def input_fields(self) -> list[ToolInput]:
        """The arguments as fields, from ``inputs`` or from ``inputSchema``'s properties."""
        if self.inputs is not None:
            return list(self.inputs)
        schema = self.inputSchema or {}
        listed = schema.get("required")
        required = {r for r in listed if isinstance(r, str)} if isinstance(listed, list) else set()
        fields: list[ToolInput] = []
        for name, prop in _properties(schema).items():
            if not isinstance(prop, dict):
                continue
            kind, description = prop.get("type", "string"), prop.get("description", "")
            enum, pattern = prop.get("enum"), prop.get("pattern")
            full = {
                "name": name,
                "type": kind if isinstance(kind, str) else "string",
                "required": name in required,
                "description": description if isinstance(description, str) else "",
                "enum": enum if isinstance(enum, list) else None,
                "pattern": pattern if isinstance(pattern, str) else None,
            }
            # The schema itself is checked where it is loaded (an error with its line); a
            # field is only a view of it, so a part of the wrong shape is left out here
            # instead of raising from a skill that is being reported on.
            for attempt in (full, {"name": name, "required": name in required}):
                try:
                    fields.append(ToolInput.model_validate(attempt))
                    break
                except ValidationError:
                    continue
        return fields

    @property
    def writes(self) -> bool:
        """Whether the tool changes something: it declares ``effects`` or is
        ``permanent`` (what the base policy's ``untrusted_writes`` guards)."""
        return bool(self.effects) or self.permanent

    @property
    def untrusted(self) -> bool:
        """Whether the tool's results can carry text written by others."""
        return self.trust == "untrusted"

    def input_names(self) -> list[str]:
        """The argument names, in declaration order."""
        if self.inputs is not None:
            return [i.name for i in self.inputs]
        return list(_properties(self.inputSchema or {}))

    def input_schema(self) -> dict[str, Any]:
        """One JSON Schema (root ``type: object``) for the arguments, from either form."""
        if self.inputSchema is not None:
            return self.inputSchema
        inputs = self.inputs or []
        schema: dict[str, Any] = {
            "type": "object",
            "properties": {i.name: i.json_schema() for i in inputs},
        }
        required = [i.name for i in inputs if i.required]
        if required:
            schema["required"] = required
        return schema
