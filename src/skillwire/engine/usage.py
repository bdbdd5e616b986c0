"""What a job's model calls cost, stage by stage: prompt characters and tokens.

``skillwire show`` and the job page show it (issue 21). Characters are what the engine
sent (:func:`~skillwire.engine.prompts.request_chars`); tokens are the backends' own
counts, where they give them (the offline model and the test doubles give none).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from skillwire.core.job import ModelCallRecord

__all__ = ["StageUsage", "usage_by_stage"]

_ORDER = ("intent", "planner", "gate", "polisher")


@dataclass(frozen=True, slots=True)
class StageUsage:
    """The model calls of one stage (``stage`` ``"job"``: all of them)."""

    stage: str
    calls: int
    prompt_chars: int
    input_tokens: int
    output_tokens: int
    reported: int
    """The calls whose backend gave its token counts (the sums are of those)."""

    def tokens_text(self) -> str:
        """``in/out``; ``-`` when no call reported; ``in/out (n of m calls)`` when some
        did not."""
        if not self.reported:
            return "-"
        text = f"{self.input_tokens}/{self.output_tokens}"
        if self.reported == self.calls:
            return text
        return f"{text} ({self.reported} of {self.calls} calls)"


def usage_by_stage(calls: Sequence[ModelCallRecord]) -> list[StageUsage]:
    """One :class:`StageUsage` per stage that called a model, in pipeline order, then
    the job's total (``stage="job"``); empty when there was no call."""
    if not calls:
        return []
    stages = sorted({c.stage for c in calls}, key=lambda s: (*_ORDER, s).index(s))
    rows = [_total(stage, [c for c in calls if c.stage == stage]) for stage in stages]
    return [*rows, _total("job", list(calls))]


def _total(stage: str, calls: list[ModelCallRecord]) -> StageUsage:
    reported = [c for c in calls if c.input_tokens is not None or c.output_tokens is not None]
    return StageUsage(
        stage,
        len(calls),
        sum(c.prompt_chars for c in calls),
        sum(c.input_tokens or 0 for c in reported),
        sum(c.output_tokens or 0 for c in reported),
        len(reported),
    )
