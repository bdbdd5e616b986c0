"""Test doubles for :class:`~skillwire.core.chat.ChatModel`, for skill authors and for us.

:class:`ScriptedModel` answers from a script of replies (YAML, JSON or inline), checking
that each call is for the stage the script expects; :class:`FunctionModel` answers with a
function the test writes; :class:`MemoryJobStore` keeps jobs in memory, under the same
rules as the SQLite and PostgreSQL stores. See ``docs/testing.md``.
"""

from skillwire.core.errors import (
    IncompleteScriptError,
    ScriptError,
    ScriptExhaustedError,
    ScriptFormatError,
    StageMismatchError,
)
from skillwire.testing.function import ChatFunction, FunctionModel
from skillwire.testing.memory_store import MemoryJobStore
from skillwire.testing.scripted import ScriptedModel, ScriptedReply, ScriptFormat

__all__ = [
    "ChatFunction",
    "FunctionModel",
    "IncompleteScriptError",
    "MemoryJobStore",
    "ScriptError",
    "ScriptExhaustedError",
    "ScriptFormat",
    "ScriptFormatError",
    "ScriptedModel",
    "ScriptedReply",
    "StageMismatchError",
]
