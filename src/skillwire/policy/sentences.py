"""Reading guardrail sentences that have a mechanical meaning.

A sentence compiles only when its meaning is unambiguous; everything else stays text
for the planner. The patterns, on words (a tokenizer, not regular expressions):

- ``never use|call|run|invoke <tool>``                      -> tool_deny
- a sentence that speaks of approval (``approval``, ``approve``, ``sign-off``) and names
  a tool or a field, with an optional comparison        -> approval, approver from
  ``<role> approval`` / ``approved by <role>`` / ``approval from <role>``
- ``<field> (>|over|above|more than|...) <number>`` where the field is a numeric input,
  or ``<tool words> over <number>`` where the tool has one numeric input and the word
  after the number (if any) is a unit or names that input   -> threshold (block when
  it holds in a ``never`` rule, when it fails in an ``always`` rule)

A rule that speaks of approval compiles to an approval, never to a block (DESIGN.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from skillwire.skills.model import Skill
from skillwire.skills.model_tools import Tool

__all__ = ["SentenceMeaning", "read_sentence", "tokenize"]

_OPS: list[tuple[tuple[str, ...], str]] = [
    ((">=",), ">="),
    (("<=",), "<="),
    ((">",), ">"),
    (("<",), "<"),
    (("at", "least"), ">="),
    (("at", "most"), "<="),
    (("no", "more", "than"), "<="),
    (("more", "than"), ">"),
    (("greater", "than"), ">"),
    (("higher", "than"), ">"),
    (("larger", "than"), ">"),
    (("in", "excess", "of"), ">"),
    (("over",), ">"),
    (("above",), ">"),
    (("exceeding",), ">"),
    (("exceeds",), ">"),
    (("exceed",), ">"),
    (("less", "than"), "<"),
    (("lower", "than"), "<"),
    (("fewer", "than"), "<"),
    (("under",), "<"),
    (("below",), "<"),
]
_APPROVAL_WORDS = frozenset(
    {
        "approval",
        "approve",
        "approved",
        "approves",
        "sign-off",
        "signoff",
        "authorization",
        "authorisation",
        "authorized",
        "authorised",
    }
)
_DENY_VERBS = frozenset({"use", "call", "run", "invoke", "execute", "trigger"})
_NEGATIONS = (
    ("never",),
    ("do", "not"),
    ("don't",),
    ("must", "not"),
    ("mustn't",),
    ("cannot",),
    ("can't",),
    ("should", "not"),
    ("shouldn't",),
)
_NOT_ROLES = frozenset(
    {
        "a",
        "an",
        "the",
        "without",
        "with",
        "needs",
        "need",
        "requires",
        "require",
        "required",
        "explicit",
        "prior",
        "written",
        "their",
        "his",
        "her",
        "its",
        "any",
        "no",
        "for",
        "and",
        "or",
        "of",
        "to",
        "must",
        "get",
        "getting",
        "have",
        "having",
        "needing",
        "requiring",
        "be",
        "is",
        "are",
        "was",
        "were",
        "been",
        "being",
        "got",
        "gets",
        "has",
        "had",
        "first",
        "until",
        "unless",
    }
)
_NUMERIC = frozenset({"number", "integer"})
_UNITS = frozenset(
    {
        *("", "dollars", "dollar", "usd", "eur", "euro", "euros", "gbp", "pounds", "percent"),
        *("without", "unless", "except", "per", "in", "at", "for", "and", "or", "to", "from"),
        *("with", "on", "before", "after", "by", "must", "should", "need", "needs", "require"),
        *("requires", "is", "are"),
    }
)


@dataclass(frozen=True, slots=True)
class SentenceMeaning:
    """What a sentence compiles to."""

    kind: Literal["tool_deny", "approval", "threshold"]
    tools: tuple[str, ...]
    expression: str | None = None
    approver: str | None = None


def tokenize(text: str) -> list[str]:
    """Lowercase words, numbers (``$1,500.50`` -> ``1500.50``) and comparison operators."""
    tokens: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in "<>=":
            op = text[i : i + 2] if text[i : i + 2] in (">=", "<=", "==") else c
            tokens.append(op)
            i += len(op)
        elif c.isdigit() or (c in "$€£" and i + 1 < n and text[i + 1].isdigit()):
            j = i + 1 if not c.isdigit() else i
            k = j
            while k < n and (
                text[k].isdigit() or (text[k] in ",." and k + 1 < n and text[k + 1].isdigit())
            ):
                k += 1
            tokens.append(text[j:k].replace(",", ""))
            i = k
        elif c.isalpha() or c == "_":
            j = i
            while j < n and (text[j].isalnum() or text[j] in "_-.'"):
                j += 1
            tokens.append(text[i:j].rstrip(".-'"))
            i = j
        else:
            i += 1
    return tokens


def _camel_words(name: str) -> list[str]:
    words: list[str] = []
    current = ""
    for ch in name:
        if ch in "_-.":
            if current:
                words.append(current)
            current = ""
        elif ch.isupper() and current and not current[-1].isupper():
            words.append(current)
            current = ch
        else:
            current += ch
    if current:
        words.append(current)
    return [w.lower() for w in words]


def _stem(word: str) -> str:
    word = word.lower()
    for suffix in ("ies", "es", "s"):
        if word.endswith(suffix) and len(word) > len(suffix) + 2:
            return word[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return word


def _mentions(tokens: list[str], tool: Tool) -> bool:
    local = tool.name.rsplit(".", 1)[-1]
    lowered = [t.lower() for t in tokens]
    if local.lower() in lowered or tool.name.lower() in lowered:
        return True
    words = [_stem(w) for w in _camel_words(local)]
    if len(words) < 2:
        return False
    stems = [_stem(t) for t in lowered]
    return any(stems[i : i + len(words)] == words for i in range(len(stems) - len(words) + 1))


def _find_op(tokens: list[str]) -> tuple[int, int, str] | None:
    """(start, end, operator) of the first comparison followed by a number."""
    for i in range(len(tokens)):
        for words, op in _OPS:
            end = i + len(words)
            if tuple(tokens[i:end]) == words and end < len(tokens) and _is_number(tokens[end]):
                return i, end, op
    return None


def _is_number(token: str) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True


def _approver(tokens: list[str]) -> str | None:
    for i, tok in enumerate(tokens):
        if tok not in _APPROVAL_WORDS:
            continue
        before = tokens[i - 1].removesuffix("'s") if i > 0 else ""
        if before and before not in _NOT_ROLES and before.isalpha():
            return before
        for j in range(i + 1, min(i + 4, len(tokens))):
            if tokens[j] in ("by", "from"):
                for k in range(j + 1, min(j + 3, len(tokens))):
                    if tokens[k] not in _NOT_ROLES:
                        return tokens[k]
    return None


def _numeric_input(tool: Tool, name: str) -> bool:
    return any(f.name == name and f.type in _NUMERIC for f in tool.input_fields())


def _measures(word: str, field: str) -> bool:
    """Whether the word after a number fits the field: a unit of money or percent, a
    word of the field's own name, or no noun at all."""
    if word in _UNITS or not word.isalpha():
        return True
    return _stem(word) in {_stem(w) for w in _camel_words(field)}


def _negated(tokens: list[str]) -> bool:
    return any(
        tuple(tokens[i : i + len(neg)]) == neg for neg in _NEGATIONS for i in range(len(tokens))
    )


def read_sentence(
    text: str, skill: Skill, *, polarity: Literal["never", "always"]
) -> SentenceMeaning | None:
    """What ``text`` means mechanically for ``skill``, or None to keep it as text."""
    raw = tokenize(text)
    tokens = [t.lower() for t in raw]
    tools = [t for t in skill.tools if _mentions(raw, t)]
    op = _find_op(tokens)
    approval = any(t in _APPROVAL_WORDS for t in tokens)

    expression: str | None = None
    scope: list[Tool] = tools
    if op is not None:
        start, end, sym = op
        number = tokens[end]
        field = raw[start - 1] if start > 0 else ""
        candidates = [t for t in skill.tools if _numeric_input(t, field)]
        if candidates and (not tools or any(t in tools for t in candidates)):
            scope = [t for t in candidates if not tools or t in tools]
        elif len(tools) == 1:
            numeric = [f.name for f in tools[0].input_fields() if f.type in _NUMERIC]
            after = tokens[end + 1] if end + 1 < len(tokens) else ""
            if len(numeric) != 1 or not _measures(after, numeric[0]):
                return None  # "more than 5 people" is not about the tool's one number
            field = numeric[0]
        else:
            return None
        expression = f"{field} {sym} {number}"

    if approval:
        if not scope:
            return None
        return SentenceMeaning(
            "approval", tuple(t.name for t in scope), expression, _approver(tokens)
        )
    if expression is not None:
        deny_when = (
            expression if (polarity == "never" or _negated(tokens)) else (f"!({expression})")
        )
        return SentenceMeaning("threshold", tuple(t.name for t in scope), deny_when)
    return _tool_deny(raw, tokens, skill, polarity)


def _tool_deny(
    raw: list[str], tokens: list[str], skill: Skill, polarity: str
) -> SentenceMeaning | None:
    if not (polarity == "never" or _negated(tokens)):
        return None
    for i, tok in enumerate(tokens[:-1]):
        if tok not in _DENY_VERBS:
            continue
        if not (
            i > 0
            and (
                tokens[i - 1]
                in ("never", "not", "don't", "cannot", "can't", "mustn't", "shouldn't")
            )
        ):
            continue
        at = i + 1
        while at < len(raw) - 1 and tokens[at] in ("the", "a", "an"):
            at += 1  # "never use the deleteFile tool"
        name = raw[at]
        tool = skill.tool(name)
        if tool is not None:
            return SentenceMeaning("tool_deny", (tool.name,))
        if "_" in name or (name[:1].islower() and any(ch.isupper() for ch in name)):
            return SentenceMeaning("tool_deny", (name,))
    return None
