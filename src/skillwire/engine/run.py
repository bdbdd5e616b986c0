"""One job being worked on: its record, state, events, and model-call accounting.

A :class:`JobRun` is created for each unit of work (start, resume, recovery) from the
stored record; every state change adds an event, and :meth:`JobRun.persist` saves the
record, its new events and model calls in one transaction, checked against the
version read, so a resume is applied exactly once.

When the engine saves (crash safety needs no more than this):

- when a job is created;
- before the first effect of a run made from a stored record (a resume, a recovery):
  its first model call or tool run waits for a save, so that of two workers holding the
  same job only one gets past it (:meth:`JobRun.claim`);
- before a tool that is not idempotent runs (the in-flight marker), and right after it;
- at every pause, and at the end.

The save before a tool that is not idempotent and the save of every pause are
``durable`` (the store fsyncs them at its ``default`` level): after a power loss, a tool
that was about to run is found in flight and never run twice, and no pause is lost.

Everything else (intent, gate decisions, idempotent tools, blocked calls, replans) only
adds events and model-call records, saved with the next save. A crash loses at most
that unsaved work: model calls are made again, and only idempotent tools run again.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from skillwire.core.chat import ChatMessage, ChatModel, ChatRequest, ChatResponse
from skillwire.core.errors import BudgetExhausted, ModelError, ModelUnavailableError
from skillwire.core.job import (
    JOB_STATE_VERSION,
    Event,
    EventKind,
    JobRecord,
    JobStatus,
    ModelCallRecord,
    OutcomeClass,
    Waiting,
)
from skillwire.core.store import Claim, JobStore
from skillwire.core.tracing import chat_span, end_chat
from skillwire.engine.compiled import CompiledSkill
from skillwire.engine.prompts import request_chars
from skillwire.engine.state import JobState, RetryPoint
from skillwire.engine.turns import Turn
from skillwire.policy.gate import Gate
from skillwire.skills.model import Skill

__all__ = ["EngineLimits", "JobRun", "now"]


_second: tuple[int, str] = (-1, "")
"""The last whole second :func:`now` formatted, and its text (replaced as one value, so
threads never see a second with another second's text)."""


def new_job_id() -> str:
    """A new job id: a UUID in the version 7 layout (RFC 9562), its first 48 bits the
    time in milliseconds, then 74 random bits.

    Ids made one after another sort in time order, so a store's indexes keyed by job id
    (events, model calls) grow at their end, and jobs running at the same moment share
    index pages: fewer pages to write per save than with random ids."""
    value = (time.time_ns() // 1_000_000) << 80 | int.from_bytes(os.urandom(10), "big")
    value = value & ~(0xF << 76) | 0x7 << 76  # version 7
    value = value & ~(0x3 << 62) | 0x2 << 62  # the RFC 4122 variant
    return _uuid_text(value)


def new_correlation_id() -> str:
    """A new random id (a UUID of version 4, as :func:`uuid.uuid4` makes)."""
    value = int.from_bytes(os.urandom(16), "big")
    value = value & ~(0xF << 76) | 0x4 << 76  # version 4
    value = value & ~(0x3 << 62) | 0x2 << 62  # the RFC 4122 variant
    return _uuid_text(value)


def _uuid_text(value: int) -> str:
    """``str(uuid.UUID(int=value))``, without building the object (a third of the cost)."""
    h = "%032x" % value  # noqa: UP031
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def now() -> str:
    """The current UTC time, ISO 8601 with microseconds (``2026-11-23T06:38:59.123456+00:00``,
    as ``datetime.now(UTC).isoformat(timespec="microseconds")`` writes it).

    A job records a few dozen times; formatting only the microseconds, once the second
    is known, makes that about three times cheaper."""
    global _second  # noqa: PLW0603 - a cache of one value
    second, micros = divmod(time.time_ns() // 1000, 1_000_000)
    cached = _second
    if cached[0] != second:
        cached = _second = (
            second,
            datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%S."),
        )
    return "%s%06d+00:00" % (cached[1], micros)  # noqa: UP031 - cheaper than an f-string


@dataclass(frozen=True)
class EngineLimits:
    """Budgets per job, used when the skill's ``engine`` sets none."""

    max_iterations: int = 12
    max_model_calls: int = 30
    max_parse_retries: int = 2


@dataclass
class JobRun:
    """The working copy of one job."""

    record: JobRecord
    state: JobState
    compiled: CompiledSkill
    """The job's skill, its gate and what the stages derive from it."""
    store: JobStore
    limits: EngineLimits
    new_events: list[Event] = field(default_factory=list)
    new_calls: list[ModelCallRecord] = field(default_factory=list)
    claimed: bool = True
    """False while a run made from a stored record has not saved yet (see :meth:`claim`)."""
    saving: bool = False
    """True while :meth:`persist` waits on the store, and after a save that failed: an
    error then is the store's (the job is as last saved), not the stage's."""
    turn: Turn = field(default_factory=Turn)
    """The run's turn at engine work, given back while it waits on a model
    (:mod:`skillwire.engine.turns`; never waited for by default)."""
    retry_point: RetryPoint | None = None
    """The stage now calling a model, as a retry would run it again (set by each stage
    before its model calls; not persisted: a model outage saves it as
    :attr:`JobState.retry`)."""

    @property
    def id(self) -> str:
        """The job id."""
        return self.record.id

    @property
    def skill(self) -> Skill:
        """The job's skill."""
        return self.compiled.skill

    @property
    def gate(self) -> Gate:
        """The skill's compiled gate."""
        return self.compiled.gate

    def event(
        self, kind: EventKind, message: str = "", *, reason_code: str = "", **data: Any
    ) -> None:
        """Record a state change of ``kind`` (saved with the next :meth:`persist`)."""
        state = self.state
        state.event_seq = seq = state.event_seq + 1
        self.new_events.append(
            Event(
                self.record.id,
                seq,
                now(),
                kind.stage._value_,  # plain text, as the store reads it back
                kind._value_,
                reason_code,
                message,
                data,
            )
        )

    def answer(self, call_id: str, content: str) -> None:
        """Tell the planner ``content`` in answer to its call ``call_id`` (a tool
        message), or as a user message when the reply had no call id."""
        if call_id:
            self.state.add_message(ChatMessage("tool", content, tool_call_id=call_id))
        else:
            self.state.add_message(ChatMessage("user", content))

    async def persist(
        self,
        *,
        durable: bool = False,
        claims: Sequence[Claim] = (),
        released: Sequence[str] = (),
    ) -> None:
        """Save the record, new events and model calls as one versioned write.

        The save is ``durable`` (it survives a power loss where the store's level
        allows: docs/engine.md) when asked, and always for a pause. ``claims`` and
        ``released`` go to the store's save (cross-job limits, :mod:`skillwire.core.store`),
        only when given: a store without claims is never asked to keep one."""
        self.record.state = self.state.to_dict()
        self.record.state_version = JOB_STATE_VERSION
        self.record.updated_at = now()
        self.saving = True  # left True when the save fails: the runtime reads it
        extra: dict[str, Any] = {}
        if claims:
            extra["claims"] = claims
        if released:
            extra["released"] = released
        saved = await self.store.save(
            self.record,
            expected_version=self.record.version,
            events=self.new_events,
            model_calls=self.new_calls,
            durable=durable or self.record.status is JobStatus.PAUSED,
            **extra,
        )
        self.saving = False
        self.record = saved
        self.new_events = []
        self.new_calls = []
        self.claimed = True

    async def claim(self) -> None:
        """Save now if this run has not saved since it read the job.

        Called before every effect (a model call, a tool run). The save is checked
        against the version read, so when two workers resume or recover the same job,
        the second one's claim raises :class:`~skillwire.core.store.VersionConflict`
        before it has called a model or run a tool.
        """
        if not self.claimed:
            await self.persist()

    def set_status(self, status: JobStatus, outcome: OutcomeClass | None) -> None:
        """Change status and outcome (and record it)."""
        self.record.status = status
        self.record.outcome_class = outcome
        self.event(
            EventKind.STATUS,
            f"{status}" + (f" ({outcome})" if outcome else ""),
            reason_code=str(outcome or ""),
            status=str(status),
        )

    def pause(self, waiting: Waiting, outcome: OutcomeClass) -> None:
        """Pause with ``waiting``; a paused job spends nothing until resumed."""
        self.record.waiting = waiting
        self.set_status(JobStatus.PAUSED, outcome)
        self.event(
            EventKind.PAUSED,
            waiting.prompt_message,
            reason_code=waiting.reason_code,
            waiting=waiting.to_dict(),
        )

    def new_waiting(
        self, reason_code: str, fields: list[str], prompt: str, **extra: Any
    ) -> Waiting:
        """A fresh ``waiting`` object with a new correlation id."""
        at = now()
        return Waiting(reason_code, fields, prompt, new_correlation_id(), at, at, **extra)

    def max_iterations(self) -> int:
        """The iteration budget: the skill's, else the runtime's."""
        return self.skill.engine_config().max_iterations or self.limits.max_iterations

    def max_model_calls(self) -> int:
        """The model-call budget: the skill's, else the runtime's."""
        return self.skill.engine_config().max_model_calls or self.limits.max_model_calls

    async def call_model(self, model: ChatModel, request: ChatRequest) -> ChatResponse:
        """Call ``model``, counting the call against the budget and recording it."""
        budget = self.max_model_calls()
        if self.state.model_calls >= budget:
            raise BudgetExhausted(f"model-call budget of {budget} used up")
        await self.claim()
        self.state.model_calls += 1
        self.state.call_seq += 1
        prompt_chars = request_chars(request)
        started = time.perf_counter()
        # The turn is given back while the model works, and taken again for what follows
        # (a model error is handled here too); a run ended by anything else (cancelled,
        # a bug) ends without taking it again.
        had_turn = self.turn.give()
        span = chat_span(request.stage, model.name)  # None unless tracing is on
        try:
            response = await model.complete(request)
        except ModelError as exc:
            end_chat(span, error=exc)
            self._record_call(model, request, prompt_chars, started, None, str(exc))
            if isinstance(exc, ModelUnavailableError):
                # recorded, but not counted: no model answered, and an outage must not
                # use up a budget the job needs once the model is back
                self.state.model_calls -= 1
            if had_turn:
                await self.turn.take()
            raise
        except Exception as exc:  # a bug in a backend: recorded, then the runtime's
            end_chat(span, error=exc)
            self._record_call(model, request, prompt_chars, started, None, type(exc).__name__)
            raise
        if span is not None:
            usage = response.usage
            end_chat(
                span,
                response_model=response.model,
                input_tokens=usage.input_tokens,
                output_tokens=usage.output_tokens,
                finish_reason=response.finish_reason,
            )
        self._record_call(model, request, prompt_chars, started, response, "")
        self.state.retry = None  # a model answered: a retried stage is past its outage
        if had_turn:  # after the record: the latency is the model's, not the wait
            await self.turn.take()
        return response

    def failed_model(self) -> str:
        """The name of the model whose call failed last in this run (``"the model"``
        when none is recorded)."""
        failed = next((c for c in reversed(self.new_calls) if not c.ok), None)
        return failed.model if failed is not None else "the model"

    def _record_call(
        self,
        model: ChatModel,
        request: ChatRequest,
        prompt_chars: int,
        started: float,
        response: ChatResponse | None,
        error: str,
    ) -> None:
        latency = (time.perf_counter() - started) * 1000
        usage = response.usage if response else None
        self.new_calls.append(
            ModelCallRecord(
                self.record.id,
                self.state.call_seq,
                now(),
                request.stage,
                (response.model if response and response.model else model.name),
                prompt_chars,
                usage.input_tokens if usage else None,
                usage.output_tokens if usage else None,
                round(latency, 3),
                ok=not error,
                error=error,
            )
        )
