"""OpenTelemetry spans for jobs, model calls, gate decisions and tool runs.

Off by default: until :func:`enable` is called (``[tracing] enabled = true`` in
skillwire.toml, or ``OTEL_TRACES_EXPORTER``: docs/deploy.md, "Tracing"), every helper
here returns ``None`` after one global read, and nothing of OpenTelemetry is imported.
Enabled, the spans go to the tracer provider given (by default the global one: the SDK's
when the program configured it, the API's no-op one otherwise).

The spans follow the OpenTelemetry GenAI semantic conventions:

* ``invoke_agent {skill}``: one unit of work on a job (a start, a resume, a recovery),
  with ``skillwire.job.id``; the model calls, gate decisions and tool runs of that unit
  are its children. A job's later units (a resume on another worker hours later) are
  children of its first unit's span, whose W3C ``traceparent`` the job keeps, so the
  whole job is one trace; the context that asked for the unit (a queue task's
  ``trace`` argument, an HTTP request's span) is a link.
* ``chat {model}``: one model call (``gen_ai.request.model``, ``gen_ai.usage.*``,
  ``skillwire.stage``: intent, planner, gate, polisher).
* ``gate {tool}``: one decision of the gate on a proposed call
  (``skillwire.gate.decision``, ``skillwire.gate.reason_code``).
* ``execute_tool {tool}``: one tool run (``gen_ai.tool.name``, ``gen_ai.tool.call.id``).

No span holds a prompt, a reply, a tool's arguments or its result: they may hold
secrets. Only names, ids, counts, decisions and reason codes are recorded.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from opentelemetry.trace import Span, Tracer, TracerProvider

__all__ = [
    "TRACEPARENT",
    "carrier",
    "chat_span",
    "disable",
    "enable",
    "enabled",
    "end_chat",
    "end_gate",
    "end_job",
    "end_tool",
    "gate_span",
    "job_span",
    "restored",
    "tool_span",
]

TRACEPARENT = "traceparent"
"""The W3C Trace Context header a carrier holds (``tracestate`` beside it if any)."""

_NAME_CHARS = 64
"""The longest proposed tool name a span takes (the model wrote it)."""

_tracer: Tracer | None = None
"""The tracer while tracing is on; ``None`` (the default) turns every helper off."""


def enable(provider: TracerProvider | None = None) -> None:
    """Trace from now on, to ``provider`` (the global tracer provider by default)."""
    global _tracer  # noqa: PLW0603 - the one switch
    from opentelemetry import trace

    source = provider if provider is not None else trace.get_tracer_provider()
    _tracer = source.get_tracer("skillwire")


def disable() -> None:
    """Stop tracing (spans already started end as usual)."""
    global _tracer  # noqa: PLW0603 - the one switch
    _tracer = None


def enabled() -> bool:
    """Whether spans are made."""
    return _tracer is not None


# -- jobs ---------------------------------------------------------------------------------


_NO_SPAN: contextlib.AbstractContextManager[str | None] = contextlib.nullcontext()
"""What :func:`job_span` is while tracing is off: made once (it holds no state), since
a generator-made context manager costs some 2 us per unit of work."""


def job_span(
    job_id: str, skill_id: str, operation: str, first: str = ""
) -> contextlib.AbstractContextManager[str | None]:
    """The span of one unit of work on a job, current in the body.

    ``first`` is the traceparent of the job's first unit (empty for a start): the span
    is its child, linked to the context current now (the one that asked for the work).
    Yields the span's own traceparent (``None`` when tracing is off), for the job to keep
    when this is its first unit."""
    if _tracer is None:
        return _NO_SPAN
    return _job_span(_tracer, job_id, skill_id, operation, first)


@contextlib.contextmanager
def _job_span(
    tracer: Tracer, job_id: str, skill_id: str, operation: str, first: str
) -> Iterator[str | None]:
    from opentelemetry import trace
    from opentelemetry.trace import Link

    parent = _context_of(first) if first else None
    links = []
    if parent is not None:
        asked = trace.get_current_span().get_span_context()
        if asked.is_valid:
            links.append(Link(asked, {"skillwire.link": "requested_by"}))
    attributes = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": skill_id,
        "gen_ai.conversation.id": job_id,
        "skillwire.job.id": job_id,
        "skillwire.job.operation": operation,
    }
    with tracer.start_as_current_span(
        f"invoke_agent {skill_id}", context=parent, attributes=attributes, links=links
    ):
        yield _traceparent()


def end_job(status: str, outcome: str | None) -> None:
    """Record the job's status and outcome on the current job span."""
    if _tracer is None:
        return
    from opentelemetry import trace

    span = trace.get_current_span()
    span.set_attribute("skillwire.job.status", str(status))
    if outcome:
        span.set_attribute("skillwire.job.outcome", str(outcome))


# -- model calls ---------------------------------------------------------------------------


def chat_span(stage: str, model: str) -> Span | None:
    """A started span for one model call of ``stage`` (end it with :func:`end_chat`).

    ``model`` is the model's name as configured (``provider:model``): the part before
    the colon is ``gen_ai.provider.name``."""
    tracer = _tracer
    if tracer is None:
        return None
    from opentelemetry.trace import SpanKind

    provider, _, name = model.partition(":")
    if not name:
        provider, name = "", model
    attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": name,
        "skillwire.stage": stage,
    }
    if provider:
        attributes["gen_ai.provider.name"] = provider
    return tracer.start_span(f"chat {name}", kind=SpanKind.CLIENT, attributes=attributes)


def end_chat(
    span: Span | None,
    *,
    response_model: str = "",
    input_tokens: int | None = None,
    output_tokens: int | None = None,
    finish_reason: str = "",
    error: BaseException | None = None,
) -> None:
    """End a model call's span with what the response says (never its text)."""
    if span is None:
        return
    if response_model:
        span.set_attribute("gen_ai.response.model", response_model)
    if input_tokens is not None:
        span.set_attribute("gen_ai.usage.input_tokens", input_tokens)
    if output_tokens is not None:
        span.set_attribute("gen_ai.usage.output_tokens", output_tokens)
    if finish_reason:
        span.set_attribute("gen_ai.response.finish_reasons", [finish_reason])
    if error is not None:
        _failed(span, type(error).__name__)
    span.end()


# -- gate decisions ------------------------------------------------------------------------


def gate_span(tool: str) -> Span | None:
    """A started span for one gate decision on a call of ``tool``."""
    tracer = _tracer
    if tracer is None:
        return None
    tool = tool[:_NAME_CHARS]  # the name the model proposed: any text
    return tracer.start_span(f"gate {tool}", attributes={"gen_ai.tool.name": tool})


def end_gate(span: Span | None, decision: str, reason_code: str, reasons: int) -> None:
    """End a gate span with the decision, its first reason code and how many reasons."""
    if span is None:
        return
    span.set_attribute("skillwire.gate.decision", decision)
    span.set_attribute("skillwire.gate.reason_code", reason_code)
    span.set_attribute("skillwire.gate.reasons", reasons)
    span.end()


# -- tool runs -----------------------------------------------------------------------------


def tool_span(tool: str, call_id: str, *, idempotent: bool) -> Span | None:
    """A started span for one run of ``tool`` (its arguments are not recorded)."""
    tracer = _tracer
    if tracer is None:
        return None
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": tool,
        "gen_ai.tool.type": "function",
        "skillwire.tool.idempotent": idempotent,
    }
    if call_id:
        attributes["gen_ai.tool.call.id"] = call_id
    return tracer.start_span(f"execute_tool {tool}", attributes=attributes)


def end_tool(span: Span | None, *, ok: bool) -> None:
    """End a tool span (a failed run is an error of type ``tool_error``; the error's
    text, which may quote arguments, is not recorded)."""
    if span is None:
        return
    if not ok:
        _failed(span, "tool_error")
    span.end()


# -- propagation ---------------------------------------------------------------------------


def carrier() -> dict[str, str]:
    """The current trace context as W3C Trace Context fields (``traceparent``, maybe
    ``tracestate``), to travel with a queued task; empty when tracing is off or no span
    is current."""
    if _tracer is None:
        return {}
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    fields: dict[str, str] = {}
    TraceContextTextMapPropagator().inject(fields)
    return fields


@contextlib.contextmanager
def restored(fields: Mapping[str, Any] | None) -> Iterator[None]:
    """Make the context a task carried (:func:`carrier`) current in the body; nothing
    when tracing is off or it carried none (a malformed one is ignored)."""
    if _tracer is None or not fields:
        yield
        return
    from opentelemetry import context
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    plain = {str(k): v for k, v in fields.items() if isinstance(v, str)}
    token = context.attach(TraceContextTextMapPropagator().extract(plain))
    try:
        yield
    finally:
        context.detach(token)


def _traceparent() -> str:
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    fields: dict[str, str] = {}
    TraceContextTextMapPropagator().inject(fields)
    return fields.get(TRACEPARENT, "")


def _context_of(traceparent: str) -> Any:
    """The context whose parent is the span ``traceparent`` names (``None`` if it is
    not a valid one)."""
    from opentelemetry import trace
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    context = TraceContextTextMapPropagator().extract({TRACEPARENT: traceparent})
    return context if trace.get_current_span(context).get_span_context().is_valid else None


def _failed(span: Span, error_type: str) -> None:
    from opentelemetry.trace import Status, StatusCode

    span.set_attribute("error.type", error_type)
    span.set_status(Status(StatusCode.ERROR))
