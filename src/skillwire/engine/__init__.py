"""The job engine: pipeline, pauses and resumes, budgets and accounting."""

from skillwire.engine.dry_run import DryRunResult, run_dry_run
from skillwire.engine.run import EngineLimits
from skillwire.engine.runtime import MAX_ENGINE_ERRORS, JobView, Runtime, SkillResolver

__all__ = [
    "MAX_ENGINE_ERRORS",
    "DryRunResult",
    "EngineLimits",
    "JobView",
    "Runtime",
    "SkillResolver",
    "run_dry_run",
]
