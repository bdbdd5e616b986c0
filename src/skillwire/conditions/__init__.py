"""The condition language: CEL compiled at load, with a documented dialect of spoken words.

``compile_condition("file_path ends with '.lock' or amount > 500")`` returns a
:class:`CelCondition` (a :class:`~skillwire.core.conditions.Condition`) whose
``expression`` is the CEL that runs. ``docs/conditions.md`` is the author's guide.

Errors (defined in :mod:`skillwire.core.conditions`)::

    ValueError
    └── ConditionSyntaxError       load time: does not parse, unknown name or function
    RuntimeError
    └── ConditionEvaluationError   run time: missing value, type mismatch, not a boolean
"""

from skillwire.conditions.cel import FUNCTIONS, RUNTIME_NAMES, CelCondition, compile_condition
from skillwire.conditions.dialect import Rewrite, Token, rewrite, tokenize
from skillwire.core.conditions import Condition
from skillwire.core.errors import ConditionEvaluationError, ConditionSyntaxError

__all__ = [
    "FUNCTIONS",
    "RUNTIME_NAMES",
    "CelCondition",
    "Condition",
    "ConditionEvaluationError",
    "ConditionSyntaxError",
    "Rewrite",
    "Token",
    "compile_condition",
    "rewrite",
    "tokenize",
]
