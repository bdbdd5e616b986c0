"""The job engine: pipeline, pauses and resumes, budgets and accounting."""

from skillwire.engine.run import EngineLimits
from skillwire.engine.runtime import MAX_ENGINE_ERRORS, JobView, Runtime, SkillResolver

__all__ = ["MAX_ENGINE_ERRORS", "EngineLimits", "JobView", "Runtime", "SkillResolver"]
