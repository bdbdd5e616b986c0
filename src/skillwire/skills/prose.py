"""Escalation conditions written as sentences: semantic triggers for the model.

Real files write ``policy.escalation.conditions[]`` as sentences ("Critical safety alert
detected"). Such a condition is not an error: it is handed to the planner and the
finalization gate as text, judged by the model, never enforced, and the load report warns
so. Anything that tries to be a condition and fails (``amount >``, ``x ==``) stays an
error with its line and a suggested spelling.

A condition *reads as prose* when all of these hold (:func:`reads_as_prose`):

1. it does not compile as a condition (the caller tried first);
2. the condition scanner finds no operator in it: no comparison (``==`` ``!=`` ``<``
   ``<=`` ``>`` ``>=`` ``=``), no logical operator (``&&`` ``||`` ``!``) and none of
   their misspellings the scanner names (``===``, ``=>``, ``<>``, a single ``&`` or
   ``|`` ...). The scanner runs on the text with each character it cannot read (an
   apostrophe that opens no string, ``$``, a letter outside ASCII) blanked out, so
   ``Customer's account is locked`` is scanned as words;
3. it has at least two words, and none of them is written like a name in code: no
   ``_`` in a word (``file_path``) and no ``.`` joining two words (``args.amount``).

So ``Critical safety alert detected`` and ``Customer mentions a lawyer`` are prose;
``amount >``, ``x == ``, ``!urgent``, ``is_vip`` and ``file_path contains`` are errors.
The spoken words ``and``, ``or``, ``not``, ``in``, ``contains`` do not make a sentence a
condition: sentences use them too.
"""

from __future__ import annotations

from skillwire.conditions import Token, tokenize
from skillwire.core.errors import ConditionSyntaxError
from skillwire.core.location import FieldPath
from skillwire.skills.model import Skill
from skillwire.skills.model_tools import PolicyCondition

__all__ = ["OPERATORS", "reads_as_prose", "semantic_escalations", "semantic_trigger_text"]

OPERATORS = frozenset({"==", "!=", "<", "<=", ">", ">=", "=", "&&", "||", "!"})
"""Comparison and logical operator tokens: one of them makes a text a condition."""

_OPERATOR_CHARS = frozenset("=!<>&|")
"""The first characters of every operator and of every misspelling the scanner names."""

_MAX_PROSE = 1000
"""Longer texts are not taken for sentences (the scan below is quadratic at worst)."""


def reads_as_prose(text: str) -> bool:
    """Whether ``text``, which does not compile as a condition, is a sentence (see the
    module's docstring for the exact rule)."""
    if len(text) > _MAX_PROSE:
        return False
    source = text
    for _ in range(len(source) + 1):
        try:
            tokens = tokenize(source)
        except ConditionSyntaxError as exc:
            at = (exc.column or 0) - 1
            if not 0 <= at < len(source) or source[at] in _OPERATOR_CHARS:
                return False  # a misspelt operator: the author meant a condition
            source = source[:at] + " " + source[at + 1 :]
            continue
        return _prose_tokens(tokens)
    return False


def _prose_tokens(tokens: list[Token]) -> bool:
    words = 0
    for index, token in enumerate(tokens):
        if token.kind == "op" and token.text in OPERATORS:
            return False
        if token.kind != "name":
            continue
        if "_" in token.text:
            return False
        words += 1
        dot = tokens[index - 1] if index else None
        name = tokens[index - 2] if index > 1 else None
        if (
            dot is not None
            and name is not None
            and dot.text == "."
            and name.kind == "name"
            and not dot.space
            and not token.space
        ):
            return False  # `args.amount`: a name in code
    return words >= 2


def semantic_trigger_text(sentence: str, target: str) -> str:
    """How a semantic escalation trigger reads in the planner's guardrail text."""
    return (
        f"Escalate to {target} when: {sentence.strip()} (judged by the finalization gate: "
        "say so in the answer)"
    )


def semantic_escalations(skill: Skill) -> list[str]:
    """The escalation conditions of ``skill`` that are sentences (prose with no condition
    compiled for it), when escalation is enabled with a target: the triggers the
    finalization gate is asked to judge."""
    esc = skill.policy.escalation
    if esc is None or not esc.enabled or not esc.target:
        return []
    found = []
    for ci, c in enumerate(esc.conditions):
        path: FieldPath = ("policy", "escalation", "conditions", ci)
        if isinstance(c, PolicyCondition):
            path = (*path, "when")
        sentence = c.when if isinstance(c, PolicyCondition) else c
        try:
            skill.condition(path)
        except KeyError:
            if reads_as_prose(sentence):
                found.append(sentence.strip())
    return found
