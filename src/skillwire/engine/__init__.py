"""The job engine: pipeline, pauses and resumes, budgets and accounting."""

from skillwire.engine.run import EngineLimits
from skillwire.engine.runtime import JobView, Runtime, SkillResolver

__all__ = ["EngineLimits", "JobView", "Runtime", "SkillResolver"]
