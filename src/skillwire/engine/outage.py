"""When a model call fails: an outage pauses the job, any other model error fails it.

A model that cannot be reached after its retries (:class:`ModelUnavailableError`:
timeouts, rate limits, server errors, a refused connection) is nobody's mistake in the
job and may pass: the job pauses with outcome ``MODEL_UNAVAILABLE``, saved with
everything done so far (tools that ran stay run), and the stage whose call failed
(:class:`~skillwire.engine.state.RetryPoint`) runs again when an operator retries it
(:func:`apply_retry`; ``skillwire resume JOB --retry``, ``POST /api/jobs/{id}/retry``).
Its ``waiting`` object is spec 001's, with no requested fields (nothing is asked of the
user), plus ``model``, ``stage`` and ``reason``.

Any other :class:`ModelError` is not an outage, and retrying the same call cannot mend
it: a backend that refuses its configuration or credentials
(:class:`~skillwire.core.errors.ModelConfigError`), a server that refuses the request
(:class:`~skillwire.core.errors.ModelRequestError`: an unknown model, a bad request), a
reply that is not one. The job fails with ``INTERNAL_ERROR`` (a ``model_error`` event
names the error's type, the model and the stage).
"""

from __future__ import annotations

from skillwire.core.errors import ConflictError, ModelError, ModelUnavailableError
from skillwire.core.job import EventKind, JobStatus, OutcomeClass
from skillwire.engine.run import JobRun
from skillwire.engine.state import PauseKind, Phase, RetryPoint

__all__ = ["MODEL_UNAVAILABLE", "apply_retry", "fail_on_model_error", "pause_for_outage"]

MODEL_UNAVAILABLE = "MODEL_UNAVAILABLE"
"""The ``reason_code`` of an outage's event and waiting object (and its outcome class)."""

_REASON_LIMIT = 500
"""Characters of the failure kept in the waiting object and the event."""


def _point(run: JobRun) -> RetryPoint:
    """The stage that was calling a model (the intent stage before the planner's)."""
    if run.retry_point is not None:
        return run.retry_point
    return RetryPoint("intent" if run.state.phase is Phase.INTENT else "planner")


async def pause_for_outage(run: JobRun, exc: ModelUnavailableError) -> None:
    """Pause the job for a retry of the stage whose model could not be reached (saved)."""
    point = _point(run)
    model = run.failed_model()
    reason = " ".join(str(exc).split())[:_REASON_LIMIT]  # redacted when it was made
    run.event(
        EventKind.MODEL_UNAVAILABLE,
        f"{model}: {reason}",
        reason_code=MODEL_UNAVAILABLE,
        model=model,
        stage=point.stage,
        error=reason,
    )
    state = run.state
    state.retry = point
    state.pause_kind = PauseKind.MODEL
    prompt = (
        f"The model {model} could not be reached ({point.stage} stage). Everything done "
        "so far is saved; retry the job once the model is back."
    )
    waiting = run.new_waiting(
        MODEL_UNAVAILABLE, [], prompt, model=model, stage=point.stage, reason=reason
    )
    run.pause(waiting, OutcomeClass.MODEL_UNAVAILABLE)
    await run.persist()


async def fail_on_model_error(run: JobRun, exc: ModelError) -> None:
    """Fail the job on a model error no retry mends (saved)."""
    point = _point(run)
    model = run.failed_model()
    run.event(
        EventKind.MODEL_ERROR,
        f"{type(exc).__name__}: {exc}",
        reason_code=OutcomeClass.INTERNAL_ERROR,
        error_type=type(exc).__name__,
        model=model,
        stage=point.stage,
    )
    run.set_status(JobStatus.FAILED, OutcomeClass.INTERNAL_ERROR)
    run.state.phase = Phase.DONE
    await run.persist()


def apply_retry(run: JobRun, requested_by: str | None) -> None:
    """Take a job out of its outage pause, to run the failed stage again (the caller
    advances it). Raises ConflictError when the job is not paused by an outage."""
    state = run.state
    waiting = run.record.waiting
    if state.pause_kind is not PauseKind.MODEL or state.retry is None or waiting is None:
        raise ConflictError(
            f"job {run.id} is not paused by a model outage ({run.record.outcome_class}): "
            "there is nothing to retry"
        )
    run.event(
        EventKind.RETRY_REQUESTED,
        f"retry the {state.retry.stage} stage",
        stage=state.retry.stage,
        model=waiting.model,
        requested_by=requested_by or "",
        correlation_id=waiting.correlation_id,
    )
    run.record.waiting = None
    state.pause_kind = None
    run.set_status(JobStatus.RUNNING, None)
