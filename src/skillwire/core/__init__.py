"""Types every part of skillwire shares, and the small protocols between parts.

Imports nothing of skillwire and no SDK, web framework or database driver.
"""

from skillwire.core.chat import (
    ChatMessage,
    ChatModel,
    ChatRequest,
    ChatResponse,
    ModelConfigError,
    ModelError,
    ModelRequestError,
    ModelUnavailableError,
    ToolCall,
    ToolSpec,
    Usage,
)
from skillwire.core.conditions import Condition, ConditionEvaluationError, ConditionSyntaxError
from skillwire.core.issues import (
    ConflictError,
    ForbiddenError,
    NotFoundError,
    Severity,
    SkillError,
    SkillIssue,
    SkillwireError,
    UsageError,
)
from skillwire.core.location import FieldPath, SourceLocation, format_path

__all__ = [
    "ChatMessage",
    "ChatModel",
    "ChatRequest",
    "ChatResponse",
    "Condition",
    "ConditionEvaluationError",
    "ConditionSyntaxError",
    "ConflictError",
    "FieldPath",
    "ForbiddenError",
    "ModelConfigError",
    "ModelError",
    "ModelRequestError",
    "ModelUnavailableError",
    "NotFoundError",
    "Severity",
    "SkillError",
    "SkillIssue",
    "SkillwireError",
    "SourceLocation",
    "ToolCall",
    "ToolSpec",
    "Usage",
    "UsageError",
    "format_path",
]
