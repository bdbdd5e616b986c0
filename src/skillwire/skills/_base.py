"""The base every skill-model class shares.

Unknown keys are kept (``extra="allow"``) so that the load report can warn about
each one with a "did you mean"; field docstrings become the JSON Schema
descriptions an author sees in an editor.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["SkillPart"]


class SkillPart(BaseModel):
    """A part of a skill definition."""

    model_config = ConfigDict(
        extra="allow",
        populate_by_name=True,
        use_attribute_docstrings=True,
        validate_default=False,
    )
