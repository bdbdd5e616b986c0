"""The condition language: CEL compiled at load into one evaluator, with a documented
dialect of spoken words.

``compile_condition("file_path ends with '.lock' or amount > 500")`` returns a
:class:`CelCondition` (a :class:`~skillwire.core.conditions.Condition`) whose
``expression`` is the CEL that runs: one syntax tree of closures
(:mod:`skillwire.conditions._parser`) evaluates it, reading only what the answer needs;
the ``cel`` package checks the syntax at load and is the tests' reference.
``docs/conditions.md`` is the author's guide. :class:`Provenance` answers ``untrusted()``
and ``origin()`` from a job's sources; :class:`History` is a job's history as conditions
read it.

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
