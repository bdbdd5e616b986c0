"""Every exception skillwire raises on purpose, in one tree under :class:`SkillwireError`.

Failures, each a mistake of someone in particular or a thing that went wrong::

    SkillwireError                 base of everything below
    ├── SkillError                 a skill file is wrong (its SkillIssue values, file and line)
    ├── ExperimentError            a simulation experiment is wrong (its SkillIssue values,
    │                              file and line)
    ├── ConditionSyntaxError       a condition does not parse (also a ValueError)
    ├── ConditionEvaluationError   a condition cannot be evaluated; the caller fails closed
    │                              (also a RuntimeError)
    ├── PatternError               a skill pattern the linear-time engine cannot take
    │                              (look-around, backreferences; also a ValueError)
    ├── UsageError                 a caller passed something wrong (bad argument, bad request)
    │   ├── NotFoundError          no such job (or skill)
    │   ├── ForbiddenError         the caller's role may not do this (e.g. approve)
    │   ├── ConflictError          the job is not in a state that allows this, or changed
    │   ├── GateInputError         a value given to the gate about the job is not plain JSON
    │   │                          (also a TypeError and a ValueError)
    │   └── RequestTooLargeError   a request body passed the server's limit (413); the
    │                              server raises it as BodyTooLargeError, which is also
    │                              Starlette's HTTPException
    ├── NotAuthenticated           no API key, or one not configured (the server: 401)
    ├── ServiceUnavailable         a skill's model is not usable now (the server: 503)
    ├── ModelError                 a model call failed (its text is redacted of secrets)
    │   ├── ModelConfigError       not usable as configured (no key, no SDK extra, bad URL)
    │   ├── ModelRequestError      the server refused the request (bad request, unknown model)
    │   └── ModelUnavailableError  timeouts, 429 and 5xx that outlived the retries
    ├── SchemaTooNewError          the job database was written by a newer skillwire
    ├── StoreUnavailableError      the job database cannot be reached or used as configured
    │                              (a PostgreSQL URL refused, the postgres extra missing)
    ├── StateVersionError          a job's stored state has a version this skillwire cannot
    │   │                          read (the engine, on load)
    │   └── JobStateTooNewError    the store found a state newer than this skillwire reads
    ├── CallableRefusedError       a python tool names a callable outside its skill's
    │                              folder and the operator's modules
    ├── ToolTimeoutError           a tool call outlasted its time limit (a failed outcome)
    ├── ShellTemplateError         a shell tool's argsTemplate cannot be filled from the
    │                              call's arguments (the gate blocks the call)
    ├── CredentialError            a credential a package needs is unset or invalid
    ├── ToolRefusedError           an executor will not make a call (a host the operator
    │                              does not allow, a response too large); a failed outcome
    └── ScriptError                a scripted model was used other than its script says
        │                          (also an AssertionError, so a test reports it as a failure)
        ├── ScriptFormatError      the script is malformed
        ├── StageMismatchError     a call asked for another stage than the next reply's
        ├── ScriptExhaustedError   a call came after every reply was used
        └── IncompleteScriptError  replies were left unused

Control-flow signals, apart: raised and caught inside skillwire to change course, never
a failure a caller is meant to see::

    SkillwireError
    └── ControlFlowSignal
        ├── VersionConflict        the job changed since it was read: re-read, or drop a
        │                          duplicate resume
        ├── ClaimConflictError     a save's cross-job claim is taken (another job holds
        │                          the once_per value, or the rate limit is reached):
        │                          nothing was saved, the call is refused, not run
        ├── BudgetExhausted        a job ran out of iterations or model calls: it ends
        │                          ENGINE_BUDGET_EXHAUSTED
        ├── ParseFailure           a planner reply is not a usable proposal: ask again
        └── (private to one package, defined where they are raised and caught)
            GiveUp, _Decline                                skillwire.conditions fast path
            MatchesError                                    skillwire.conditions matches()
            HelperError                                     skillwire.conditions helpers
            RejectedNodeError, _DuplicateKeyError,          skillwire.skills readers, turned
            _NonFiniteConstantError                         into SkillIssue values

Classes that used to subclass a builtin keep it, so ``except ValueError`` (or
``RuntimeError``, ``AssertionError``) around them still catches them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from skillwire.core.redaction import redact

if TYPE_CHECKING:
    from skillwire.core.chat import Stage
    from skillwire.core.issues import SkillIssue

__all__ = [
    "BudgetExhausted",
    "CallableRefusedError",
    "ClaimConflictError",
    "ConditionEvaluationError",
    "ConditionSyntaxError",
    "ConflictError",
    "ControlFlowSignal",
    "CredentialError",
    "ExperimentError",
    "ForbiddenError",
    "GateInputError",
    "IncompleteScriptError",
    "JobStateTooNewError",
    "ModelConfigError",
    "ModelError",
    "ModelRequestError",
    "ModelUnavailableError",
    "NotAuthenticated",
    "NotFoundError",
    "ParseFailure",
    "PatternError",
    "RequestTooLargeError",
    "SchemaTooNewError",
    "ScriptError",
    "ScriptExhaustedError",
    "ScriptFormatError",
    "ServiceUnavailable",
    "ShellTemplateError",
    "SkillError",
    "SkillwireError",
    "StageMismatchError",
    "StateVersionError",
    "StoreUnavailableError",
    "ToolRefusedError",
    "ToolTimeoutError",
    "UsageError",
    "VersionConflict",
]


class SkillwireError(Exception):
    """Base of every error skillwire raises on purpose."""


# -- a skill author's mistakes ---------------------------------------------------------


@dataclass
class ExperimentError(SkillwireError):
    """A simulation experiment cannot be used as written (``skillwire sim``, spec 002).
    ``issues`` holds every error found, each with its file and line."""

    issues: list[SkillIssue] = field(default_factory=list)

    def __init__(self, issues: Iterable[SkillIssue]) -> None:
        self.issues = list(issues)
        super().__init__("\n".join(str(i) for i in self.issues))


@dataclass
class SkillError(SkillwireError):
    """A skill cannot be used as written. ``issues`` holds every error found, not just one."""

    issues: list[SkillIssue] = field(default_factory=list)

    def __init__(self, issues: Iterable[SkillIssue]) -> None:
        self.issues = list(issues)
        super().__init__("\n".join(str(i) for i in self.issues))


class ConditionSyntaxError(SkillwireError, ValueError):
    """A condition does not parse, or names a variable the skill does not define.

    ``column`` counts from 1 within the condition text (0 when unknown); ``hint``
    suggests what to write instead.
    """

    def __init__(self, message: str, *, column: int = 0, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.column = column
        self.hint = hint


class ConditionEvaluationError(SkillwireError, RuntimeError):
    """A condition could not be evaluated (missing value, type mismatch, not a boolean)."""


# -- a caller's mistakes ---------------------------------------------------------------


class UsageError(SkillwireError):
    """A caller's mistake: a bad argument, an unknown job, a malformed request."""


class NotFoundError(UsageError):
    """No such job or skill."""


class ForbiddenError(UsageError):
    """The caller's role may not do this (an approval by the wrong role)."""


class ConflictError(UsageError):
    """The job is not in a state that allows this, or it changed meanwhile."""


class GateInputError(UsageError, TypeError, ValueError):
    """A value given to the gate about the job is not plain JSON, or not of the gate's
    types: a bug of the caller, raised instead of deciding on a value that could lie.

    Both a ``TypeError`` (a subclass, a tuple, an object) and a ``ValueError`` (NaN, a
    lone surrogate), so that either ``except`` catches it. ``path`` says where the value
    is (``history[1].result.total``); ``problem`` what is wrong with it.
    """

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem


class RequestTooLargeError(UsageError):
    """A request body passed the server's limit (the server: 413)."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"the request body is larger than this server accepts ({limit} bytes)")
        self.limit = limit


class PatternError(SkillwireError, ValueError):
    """A pattern the engine cannot take: not a regular expression, or one that needs a
    backtracking engine (look-around, backreferences).

    ``reason`` says what is wrong, ``offset`` where (0-based, in the pattern's text)
    when that is known, ``hint`` what to write instead.
    """

    def __init__(self, source: str, reason: str, offset: int | None = None, hint: str = "") -> None:
        super().__init__(f"pattern {source!r} cannot be used: {reason}")
        self.source = source
        self.reason = reason
        self.offset = offset
        self.hint = hint

    def __reduce__(self) -> tuple[Any, ...]:
        return PatternError, (self.source, self.reason, self.offset, self.hint)


class NotAuthenticated(SkillwireError):  # noqa: N818 - mapped to 401 (API) or the login page
    """No key, a key that is not configured, or no open session."""


class ServiceUnavailable(SkillwireError):  # noqa: N818 - mapped to HTTP 503
    """The server cannot run a skill's jobs now: its model is not usable
    (``model_unavailable``), or a package's required credential is not set
    (``credentials_missing``)."""

    def __init__(self, message: str, code: str = "model_unavailable") -> None:
        super().__init__(message)
        self.code = code


# -- models ----------------------------------------------------------------------------


class ModelError(SkillwireError):
    """A model call failed.

    The message is redacted as the error is made (:func:`~skillwire.core.redaction.redact`):
    a URL's password, a key the server echoed, and each of ``secrets`` (the configured
    key) become ``[redacted]``, so no event, record or page made from it holds a secret.
    """

    def __init__(self, message: str = "", *, secrets: Iterable[str | None] = ()) -> None:
        super().__init__(redact(message, secrets))

    def __str__(self) -> str:
        # Again for a subclass whose own __init__ passes its text past the one above.
        return redact(super().__str__())


class ModelConfigError(ModelError):
    """The backend cannot be used as configured: no key, a missing extra, a bad URL."""


class ModelRequestError(ModelError):
    """The server refused the request (4xx other than 429): bad request, unknown model."""


class ModelUnavailableError(ModelError):
    """Timeouts, rate limits or server errors that outlived the retries."""


# -- stored data -----------------------------------------------------------------------


class SchemaTooNewError(SkillwireError):
    """The database was written by a newer skillwire than this one."""

    def __init__(self, where: str, found: int, known: int) -> None:
        super().__init__(
            f"{where}: database schema version {found} is newer than this skillwire "
            f"knows (version {known}); upgrade skillwire to open it"
        )
        self.found = found
        self.known = known


class StoreUnavailableError(SkillwireError):
    """The job database cannot be reached or used as configured: a PostgreSQL server
    that refuses the connection, a URL that does not parse, the ``postgres`` extra not
    installed. The message names the database without its password."""


class StateVersionError(SkillwireError):
    """A stored job state of a version this skillwire cannot read (a newer one, or none)."""


class JobStateTooNewError(StateVersionError):
    """A stored job's ``state_version`` is newer than this code's ``JOB_STATE_VERSION``."""

    def __init__(self, job_id: str, found: int) -> None:
        # Imported here so that core.job may one day raise errors of this module.
        from skillwire.core.job import JOB_STATE_VERSION

        super().__init__(
            f"job {job_id}: state version {found} is newer than this skillwire knows "
            f"(version {JOB_STATE_VERSION}); upgrade skillwire to read it"
        )
        self.job_id = job_id
        self.found = found


class CallableRefusedError(SkillwireError):
    """A ``python`` executor names a callable outside the places it may come from."""


class ToolTimeoutError(SkillwireError):
    """A tool call outlasted its time limit; ``started`` says whether it had begun."""

    def __init__(self, seconds: float, *, started: bool) -> None:
        self.seconds = seconds
        self.started = started
        super().__init__(f"timed out after {seconds:g} s" + ("" if started else " in the queue"))


class ShellTemplateError(SkillwireError, ValueError):
    """A ``shell_command`` tool's ``argsTemplate`` cannot be filled from a call's
    arguments (a missing field, a value that is not text, one read as an option)."""


class CredentialError(SkillwireError):
    """A credential a package's tool needs is unset, or its value fails the package's
    ``validation``. The message names the credential, never its value."""


class ToolRefusedError(SkillwireError, ValueError):
    """An executor will not make a call: a host the operator does not allow, a redirect
    elsewhere, a response larger than allowed. Turned into a failed outcome."""


# -- the scripted test model -----------------------------------------------------------


class ScriptError(SkillwireError, AssertionError):
    """A scripted model was used other than its script says.

    ``index`` is the reply concerned (0-based, as in ``replies[2]``), ``file`` the script's
    path when it came from a file, ``line`` the reply's line (1-based, 0 when unknown).
    """

    def __init__(
        self,
        detail: str,
        *,
        index: int | None = None,
        file: str | None = None,
        line: int = 0,
        expected: Stage | None = None,
        called: Stage | None = None,
    ) -> None:
        self.detail = detail
        self.index = index
        self.file = file
        self.line = line
        self.expected = expected
        """The stage the script has next (None when there is no reply left)."""
        self.called = called
        """The stage the call asked for."""
        super().__init__(_located(detail, index=index, file=file, line=line))


class ScriptFormatError(ScriptError):
    """The script is malformed: not a list of replies, or a reply that is not valid."""


class StageMismatchError(ScriptError):
    """A call asked for one stage while the next reply answers another."""


class ScriptExhaustedError(ScriptError):
    """A call came after every reply had been used."""


class IncompleteScriptError(ScriptError):
    """Replies were left unused; ``unused`` lists them as ``(index, stage)``."""

    def __init__(self, detail: str, *, file: str | None, unused: list[tuple[int, Stage]]) -> None:
        super().__init__(detail, file=file)
        self.unused = unused


def _located(detail: str, *, index: int | None, file: str | None, line: int) -> str:
    """``detail`` prefixed by where it applies: ``file:line``, then ``replies[i]``."""
    where = f"{file}:{line}" if file and line else (file or (f"line {line}" if line else ""))
    reply = f"replies[{index}]" if index is not None else ""
    prefix = ": ".join(p for p in (where, reply) if p)
    return f"{prefix}: {detail}" if prefix else detail


# -- control-flow signals --------------------------------------------------------------


class ControlFlowSignal(SkillwireError):  # noqa: N818 - a signal, not a failure
    """Not a failure: raised and caught inside skillwire to change course."""


class VersionConflict(ControlFlowSignal):
    """The job changed since it was read (another worker, or a duplicate resume)."""

    def __init__(self, job_id: str, expected: int, actual: int | None) -> None:
        super().__init__(f"job {job_id}: expected version {expected}, found {actual}")
        self.job_id = job_id
        self.expected = expected
        self.actual = actual


class ClaimConflictError(ControlFlowSignal):
    """A save's cross-job claim could not be taken: another job holds a ``once_per``
    value, or a rate limit's window is full. Raised by the store before it writes
    anything, so the job is as it was read; the engine refuses the call instead of
    running it."""

    def __init__(self, job_id: str, key: str, limit: int, held: int, holders: list[str]) -> None:
        who = f" (held by job {', '.join(holders)})" if holders else ""
        super().__init__(f"job {job_id}: claim {key!r} refused: {held} of {limit} taken{who}")
        self.job_id = job_id
        self.key = key
        self.limit = limit
        self.held = held
        self.holders = holders


class BudgetExhausted(ControlFlowSignal):
    """A job ran out of iterations or model calls."""


class ParseFailure(ControlFlowSignal):
    """A reply that is not a usable proposal; ``errors`` say why."""

    def __init__(self, errors: list[str]) -> None:
        super().__init__("; ".join(errors))
        self.errors = errors
