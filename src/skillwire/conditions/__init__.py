"""The condition language: CEL compiled at load, with a documented dialect of spoken words.

``compile_condition("file_path ends with '.lock' or amount > 500")`` returns a
:class:`CelCondition` (a :class:`~skillwire.core.conditions.Condition`) whose
``expression`` is the CEL that runs. ``docs/conditions.md`` is the author's guide.
:class:`Provenance` answers ``untrusted()`` and ``origin()`` from a job's sources.

Errors (defined in :mod:`skillwire.core.conditions`)::

    ValueError
    └── ConditionSyntaxError       load time: does not parse, unknown name or function
    RuntimeError
    └── ConditionEvaluationError   run time: missing value, type mismatch, not a boolean
"""

from skillwire.conditions.cel import (
    FUNCTIONS,
    PROVENANCE_FUNCTIONS,
    RUNTIME_NAMES,
    CelCondition,
    compile_condition,
)
from skillwire.conditions.dialect import Rewrite, Token, rewrite, tokenize
from skillwire.conditions.expression import CelExpression, compile_expression
from skillwire.conditions.functions import HELPERS, RUNS_KEY, History, Runs
from skillwire.conditions.provenance import (
    OPERATOR,
    PROVENANCE_KEY,
    USER,
    Normalised,
    Provenance,
    Source,
    ToolOutputs,
    Trace,
    normalised,
    tool_origin,
)
from skillwire.core.conditions import Condition
from skillwire.core.errors import ConditionEvaluationError, ConditionSyntaxError

__all__ = [
    "FUNCTIONS",
    "HELPERS",
    "OPERATOR",
    "PROVENANCE_FUNCTIONS",
    "PROVENANCE_KEY",
    "RUNS_KEY",
    "RUNTIME_NAMES",
    "USER",
    "CelCondition",
    "CelExpression",
    "Condition",
    "ConditionEvaluationError",
    "ConditionSyntaxError",
    "History",
    "Normalised",
    "Provenance",
    "Rewrite",
    "Runs",
    "Source",
    "Token",
    "ToolOutputs",
    "Trace",
    "compile_condition",
    "compile_expression",
    "normalised",
    "rewrite",
    "tokenize",
    "tool_origin",
]
